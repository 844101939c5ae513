// Binary tool results against the JSON path, for host values a plain tool (no output schema) may
// return that no encoder can read without running host code: a getter that throws, a Proxy whose
// traps throw. The program must get exactly what the JSON path gives it (the documented
// tool_output_invalid error), whichever path the worker takes, and the next run must work.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, type Codemode } from "../../src/index.js";
import { encodeToolResult } from "../../src/engine/bjson.js";
import { hostFaults } from "./harness.js";

const PAD = "p".repeat(4096);
let reads = 0;
const VALUES: Record<string, () => unknown> = {
  getter: () => ({
    pad: PAD,
    get boom() {
      throw new Error("getter on a host result");
    },
  }),
  deep_getter: () => ({
    pad: PAD,
    rows: [
      { ok: 1 },
      {
        get boom() {
          throw new Error("getter on a host result");
        },
      },
    ],
  }),
  proxy: () => ({
    pad: PAD,
    p: new Proxy(
      {},
      {
        ownKeys() {
          throw new Error("ownKeys trap");
        },
        getPrototypeOf() {
          throw new Error("getPrototypeOf trap");
        },
      },
    ),
  }),
  // Refused by the encoder after it read `n` (NaN is not plain JSON): `n` is read twice when the
  // encoder ran first, once on the JSON path alone. How the test knows the worker takes binary results.
  probe: () => ({
    pad: PAD,
    get n() {
      return ++reads;
    },
    nan: Number.NaN,
  }),
};
const tools = Object.entries(VALUES).map(([name, make]) => ({ name, description: `returns a ${name} value`, execute: async () => make() }));

async function codemode(binary: boolean): Promise<Codemode> {
  const before = process.env.CODEMODE_BINARY_RESULTS;
  if (binary) delete process.env.CODEMODE_BINARY_RESULTS;
  else process.env.CODEMODE_BINARY_RESULTS = "off";
  try {
    return await createCodemode({ tools, limits: { timeoutMs: 5000 }, workers: { max: 1, min: 1 } });
  } finally {
    if (before === undefined) delete process.env.CODEMODE_BINARY_RESULTS;
    else process.env.CODEMODE_BINARY_RESULTS = before;
  }
}

const CALL = (name: string) => `try { return ["value", await tools.${name}({})] } catch (e) { return ["threw", e.name, e.code, e.message] }`;

describe("binary tool results of a plain tool whose value runs host code when read", () => {
  let binary: Codemode;
  let json: Codemode;
  beforeAll(async () => {
    [binary, json] = await Promise.all([codemode(true), codemode(false)]);
    // The worker's binary self-test runs in the background after it is ready.
    for (let attempt = 0; attempt < 300; attempt++) {
      reads = 0;
      await binary.run(CALL("probe"));
      if (reads === 2) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error("the worker never took binary results");
  });
  afterAll(async () => {
    await Promise.all([binary?.close(), json?.close()]);
    expect(hostFaults).toEqual([]);
  });

  it("is refused by the encoder (the JSON path reports it), not thrown from it", () => {
    for (const name of ["getter", "deep_getter", "proxy"]) expect(encodeToolResult(VALUES[name]!()), name).toBeUndefined();
  });

  for (const [name, message] of [
    ["getter", "getter on a host result"],
    ["deep_getter", "getter on a host result"],
    ["proxy", "ownKeys trap"],
  ] as const) {
    it(`rejects the call with the JSON path's tool_output_invalid error: ${name}`, async () => {
      const expected = ["threw", "ToolError", "tool_output_invalid", `tools.${name}() returned a value that is not JSON (${message}); the tool must return JSON data`];
      const viaJson = await json.run(CALL(name));
      expect(viaJson.structuredContent.value).toEqual(expected);
      const viaBinary = await binary.run(CALL(name));
      expect(viaBinary.structuredContent.value).toEqual(expected);
      const next = await binary.run("return 1 + 1");
      expect(next.structuredContent.value).toBe(2);
    });
  }
});
