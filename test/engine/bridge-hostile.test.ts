// The bridge under results a hostile tool or a busy host produces in one turn: small and larger-
// than-the-ring results, JSON text and binary, interleaved and answered out of order, arguments
// and results holding the batch separator, NULs and lone surrogates. Every call gets exactly its
// own result, and the worker serves the next run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxEngine, type RunHandle } from "../../src/engine/engine.js";
import { encodeToolResult } from "../../src/engine/bjson.js";
import { runRequest } from "./run-request.js";

let engine: SandboxEngine;
beforeAll(async () => {
  engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1 });
  await engine.start();
});
afterAll(() => engine.close());

const request = (code: string) => runRequest(code, { tools: ["echo", "sized"], limits: { timeoutMs: 20_000, maxCrossingBytes: 8 * 1024 * 1024 } });

/** The result `sized` gives for its arguments: a string of `n` copies of `c`, in the form asked for. */
function sizedResult(args: { n: number; c: string; binary: boolean }): string | Uint8Array {
  const value = { s: args.c.repeat(args.n), c: args.c };
  return args.binary ? encodeToolResult(value)!.bytes : JSON.stringify(value);
}

describe("the bridge under hostile results", () => {
  it("hands each of many calls its own result when one turn answers them out of order, some larger than the ring, as text and binary", async () => {
    // 256 KiB rings: 300 KB and 1 MB results go by the port, the rest by the ring, in one turn.
    const sizes = [300_000, 1, 1_000_000, 2, 50_000, 300_000, 3, 70_000, 4, 1_000_000, 5, 260_000];
    const chars = ["a", "\u0001", "\ud800", "\0", "é", "\u{1F600}", '"', "\\", "\u2028", "z", "\udc00", "\ufeff"];
    let handle!: RunHandle;
    const pending: Array<[number, string]> = [];
    handle = engine.run(
      request(`
        const sizes = ${JSON.stringify(sizes)};
        const chars = ${JSON.stringify(chars)};
        const results = await Promise.all(sizes.map((n, i) => tools.sized({ n, c: chars[i], binary: i % 3 === 0 })));
        return results.map((r, i) => r.c === chars[i] && r.s.length === sizes[i] * chars[i].length && r.s === chars[i].repeat(sizes[i]));`),
      {
        onCall(callId, _path, args) {
          pending.push([callId, args]);
          if (pending.length < sizes.length) return;
          // All in one turn, last call first.
          for (const [id, json] of pending.reverse()) handle.settle(id, true, sizedResult(JSON.parse(json)));
        },
        onFlush() {},
        onStore() {},
      },
    );
    const done = await handle.done;
    expect(done.ok, JSON.stringify(done.error)).toBe(true);
    expect(JSON.parse(done.valueJson!)).toStrictEqual(sizes.map(() => true));
    expect((await engine.run(request("return 7"), { onCall() {}, onFlush() {}, onStore() {} }).done).valueJson).toBe("7");
  });

  it("carries arguments that hold the batch separator, NULs and lone surrogates, batched or alone, to the host exactly", async () => {
    const strings = ["\u0001", "a\u0001b\u0001", "\0\u0001\0", "\ud800\u0001\udc00", "x".repeat(70_000) + "\u0001", "\u0001".repeat(100)];
    const seen: unknown[] = [];
    let handle!: RunHandle;
    handle = engine.run(
      request(`
        const strings = ${JSON.stringify(strings)};
        const batched = await Promise.all(strings.map((s) => tools.echo({ s, [s]: 1 })));
        const alone = [];
        for (const s of strings) alone.push(await tools.echo({ s }));
        return [...batched, ...alone].map((r, i) => r.s === strings[i % strings.length]);`),
      {
        onCall(callId, _path, args) {
          seen.push(JSON.parse(args));
          handle.settle(callId, true, args);
        },
        onFlush() {},
        onStore() {},
      },
    );
    const done = await handle.done;
    expect(done.ok, JSON.stringify(done.error)).toBe(true);
    expect(JSON.parse(done.valueJson!)).toStrictEqual([...strings, ...strings].map(() => true));
    expect(seen).toStrictEqual([...strings.map((s) => ({ s, [s]: 1 })), ...strings.map((s) => ({ s }))]);
  });

  it("drops results that arrive after their run ended, however large, and the next run's calls get their own", async () => {
    let late: Array<() => void> = [];
    const first = engine.run(request(`for (let i = 0; i < 50; i++) tools.sized({ n: 1, c: "x", binary: false }); return "ended"`), {
      onCall(callId) {
        // Held until the run ended, then all sent at once: larger than the ring, text and binary.
        const text = late.length % 2 === 1;
        late.push(() => first.settle(callId, true, text ? JSON.stringify({ s: "L".repeat(400_000), c: "L" }) : encodeToolResult({ s: "B".repeat(400_000), c: "B" })!.bytes));
      },
      onFlush() {},
      onStore() {},
    });
    const ended = await first.done;
    expect([ended.ok, ended.valueJson, ended.pendingCalls.length]).toStrictEqual([true, '"ended"', 50]);
    for (const settle of late) settle();
    late = [];
    let second!: RunHandle;
    second = engine.run(request(`const r = await Promise.all([1, 2, 3].map((n) => tools.sized({ n, c: "k", binary: n === 2 }))); return r.map((x) => x.s)`), {
      onCall(callId, _path, args) {
        second.settle(callId, true, sizedResult(JSON.parse(args)));
      },
      onFlush() {},
      onStore() {},
    });
    const done = await second.done;
    expect([done.ok, done.valueJson]).toStrictEqual([true, JSON.stringify(["k", "kk", "kkk"])]);
  });
});
