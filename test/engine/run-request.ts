// A RunRequest for tests that drive the engine directly, with limits any test may override.
import type { RunLimits, RunRequest } from "../../src/engine/protocol.js";

let next = 0;

export function runRequest(code: string, overrides: Partial<Omit<RunRequest, "limits">> & { limits?: Partial<RunLimits> } = {}): RunRequest {
  const { limits, ...rest } = overrides;
  return {
    runId: `r${++next}`,
    code,
    session: "s",
    limits: {
      timeoutMs: 10_000,
      memoryBytes: 64 * 1024 * 1024,
      stackBytes: 1024 * 1024,
      maxToolCalls: 5000,
      maxCrossingBytes: 16 * 1024 * 1024,
      storeValueBytes: 1024,
      storeSessionBytes: 4096,
      maxTimers: 10,
      ...limits,
    },
    tools: [],
    globals: {},
    store: {},
    ...rest,
  };
}
