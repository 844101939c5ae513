// Tool results in QuickJS's binary format, through the whole engine: for any plain JSON value the
// program sees exactly what the JSON path gives it (types, prototypes, -0, integer and __proto__
// keys, key order, property attributes, lone surrogates), and values the encoder refuses still
// take the JSON path.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxEngine, type RunHandle } from "../../src/engine/engine.js";
import { encodeToolResult } from "../../src/engine/bjson.js";
import type { RunRequest } from "../../src/engine/protocol.js";
import { runRequest } from "./run-request.js";

let engine: SandboxEngine;
beforeAll(async () => {
  engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1 });
  await engine.start();
  // The worker's self-test runs in the background after it is ready.
  for (let i = 0; i < 500; i++) {
    const handle = engine.run(request("return 1"), { onCall() {}, onFlush() {}, onStore() {} });
    await handle.done;
    if (handle.binaryResults) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the worker never accepted binary results");
});
afterAll(() => engine.close());

const request = (code: string): RunRequest => runRequest(code, { tools: ["value"] });

// Everything a program can observe of a value, as JSON (strings as their UTF-16 units).
const OBSERVE = `
  const units = (s) => Array.from({ length: s.length }, (_, i) => s.charCodeAt(i));
  const seen = (v, depth) => {
    if (depth > 1100) return "deep";
    if (v === null || typeof v !== "object") return [typeof v, typeof v === "string" ? units(v) : Object.is(v, -0) ? "-0" : v];
    const proto = Object.getPrototypeOf(v) === Array.prototype ? "array" : Object.getPrototypeOf(v) === Object.prototype ? "object" : "other";
    return [proto, Object.isExtensible(v), Reflect.ownKeys(v).map((k) => {
      const d = Object.getOwnPropertyDescriptor(v, k);
      return [typeof k === "string" ? units(k) : "symbol", d.writable, d.enumerable, d.configurable, seen(d.value, depth + 1)];
    })];
  };
  return seen(await tools.value({}), 0);`;

async function observe(value: unknown, binary: boolean): Promise<{ json: string | undefined; binary: boolean }> {
  let handle!: RunHandle;
  let sentBinary = false;
  handle = engine.run(request(OBSERVE), {
    onCall(callId) {
      const encoded = binary ? encodeToolResult(value) : undefined;
      sentBinary = encoded !== undefined;
      handle.settle(callId, true, encoded ? encoded.bytes : JSON.stringify(value));
    },
    onFlush() {},
    onStore() {},
  });
  const done = await handle.done;
  expect(done.ok, JSON.stringify(done.error)).toBe(true);
  return { json: done.valueJson, binary: sentBinary };
}

async function samePaths(value: unknown): Promise<void> {
  const viaJson = await observe(value, false);
  const viaBinary = await observe(value, true);
  expect(viaBinary.binary).toBe(true);
  expect(viaBinary.json).toBe(viaJson.json);
}

function nested(depth: number): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { d: value };
  return value;
}

describe("binary tool results", () => {
  it("give the program the same value as JSON for any JSON value", async () => {
    await fc.assert(fc.asyncProperty(fc.jsonValue(), samePaths), { numRuns: 60 });
  });

  it("give the same value for the edge cases: -0, 2^31, lone surrogates, __proto__ and integer keys, deep nesting, a large array", async () => {
    const object = JSON.parse('{"__proto__": {"x": 1}, "10": "ten", "2": 2, "b": 1, "4294967295": 1, "2147483648": 1, "-1": 1, "01": 1}') as unknown;
    for (const value of [
      -0,
      [-0, 0],
      2 ** 31,
      -(2 ** 31),
      2 ** 31 - 1,
      2 ** 53,
      1e-7,
      0.1,
      "\ud800",
      "a\udc00b",
      "\u2603\ud83d\ude00",
      "é",
      "",
      object,
      { a: undefined, b: 1 },
      nested(900),
      Array.from({ length: 100_000 }, (_, i) => (i % 3 ? i : `s${i}`)),
      { "": { "": [] } },
    ]) {
      await samePaths(value);
    }
  });

  it("leave values the encoder refuses on the JSON path", async () => {
    class Point {
      constructor(readonly x: number) {}
    }
    // biome-ignore lint/suspicious/noSparseArray: a hole is one of the values under test
    for (const value of [new Date(0), { toJSON: () => "custom" }, new Point(1), [1, , 3], Number.NaN, new Map([[1, 2]]), nested(1200)]) {
      expect(encodeToolResult(value), String(value)).toBeUndefined();
    }
  });
});
