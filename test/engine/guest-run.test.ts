// The engine's answer to a trapped WebAssembly instance, exercised directly on a GuestRun: the
// run reports kind "sandbox" and the instance is marked dead so the worker never reuses it.
// (No plain-JavaScript program is known to trap this build, so the trap is injected.)
import { describe, expect, it } from "vitest";
import { GuestRun } from "../../src/engine/guest-run.js";
import { newWasmInstance, pagesFor } from "../../src/engine/wasm-instance.js";
import { preludeSource } from "../../src/package-files.js";
import type { RunMessage, WorkerToHost } from "../../src/engine/protocol.js";

function request(code: string): RunMessage {
  return {
    type: "run",
    runId: "r1",
    abortSeq: 1,
    code,
    session: "s",
    limits: { timeoutMs: 2000, memoryBytes: 64 * 1024 * 1024, stackBytes: 1024 * 1024, maxToolCalls: 10, maxCrossingBytes: 1024 * 1024, storeValueBytes: 1024, storeSessionBytes: 4096, maxTimers: 10 },
    deadline: Date.now() + 2000,
    tools: ["echo"],
    globals: {},
    store: {},
  };
}

async function execute(code: string, sabotage?: (instance: Awaited<ReturnType<typeof newWasmInstance>>) => void) {
  const instance = await newWasmInstance(pagesFor(64 * 1024 * 1024));
  sabotage?.(instance);
  const posted: WorkerToHost[] = [];
  const run = new GuestRun(instance, request(code), preludeSource(), new Int32Array(new SharedArrayBuffer(4)), (message) => posted.push(message));
  const done = await run.execute();
  run.teardown();
  return { done, instance, posted };
}

describe("a trapped instance", () => {
  it("runs a benign program on a healthy instance", async () => {
    const { done, instance, posted } = await execute(`text("ok"); return 1`);
    expect([done.ok, done.valueJson, done.instanceDiscarded, instance.dead]).toStrictEqual([true, "1", false, false]);
    // The last output rides on the result instead of a flush message of its own.
    expect(done.text).toStrictEqual(["ok"]);
    expect(posted).toStrictEqual([]);
  });

  it("reports kind sandbox and marks the instance dead when the engine traps", async () => {
    const { done, instance } = await execute(`return 1`, (target) => {
      const original = target.module.newRuntime.bind(target.module);
      target.module.newRuntime = (...args) => {
        const runtime = original(...args);
        runtime.newContext = () => {
          throw new WebAssembly.RuntimeError("unreachable");
        };
        return runtime;
      };
    });
    expect(done.ok).toBe(false);
    expect(done.error).toStrictEqual({ kind: "sandbox", message: "the sandbox engine failed: RuntimeError: unreachable" });
    expect([done.instanceDiscarded, instance.dead]).toStrictEqual([true, true]);
  });
});
