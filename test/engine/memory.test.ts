// The host's memory after programs that grow their instance's memory. Linear memory never
// shrinks, and a dropped instance is freed only when its worker's heap is collected: before, the
// host stayed 32-93 MiB above its baseline after such a run, and idle sessions kept their grown
// instances. Now a worker that keeps more than `workers.idleBytes` is replaced when the run ends.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, type Codemode } from "../../src/index.js";

const MiB = 1024 * 1024;
const rss = () => process.memoryUsage.rss();

/** The lowest RSS seen within about a second: the host must be back near its baseline by then. */
async function settledRss(): Promise<number> {
  let low = rss();
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 100));
    low = Math.min(low, rss());
  }
  return low;
}

describe("host memory after programs that grow their instance", () => {
  let cm: Codemode;
  let baseline: number;

  beforeAll(async () => {
    cm = await createCodemode({ agentDirs: [], workers: { max: 1, min: 1 } });
    for (let i = 0; i < 10; i++) await cm.run(`text("warm ${i}"); return ${i}`, { session: `warm-${i % 3}` });
    baseline = await settledRss();
  });
  afterAll(async () => {
    await cm.close();
  });

  const programs: Array<[string, string, string]> = [
    ["many medium allocations", `const a = []; try { for (;;) a.push(new Array(2000).fill(a.length)) } catch (e) { return a.length > 0 }`, "ok"],
    ["a text flood", `for (let i = 0; i < 2000; i++) text("y".repeat(20000)); return true`, "ok"],
    ["async recursion to the limit", `async function r(n) { const pad = "x".repeat(100) + n; return (await r(n + 1)) + pad.length } return await r(0)`, "stack"],
    ["strings to out of memory", `const a = []; for (;;) a.push("x".repeat(1 << 16) + a.length)`, "memory"],
  ];

  for (const [name, code, outcome] of programs) {
    it(`returns within 32 MiB of its baseline about a second after ${name}, and the next run works`, async () => {
      const result = await cm.run(code, { session: `grow-${name.replace(/ /g, "-")}`, timeoutMs: 20_000 });
      expect(result.structuredContent.status === "ok" ? "ok" : result.structuredContent.error?.kind).toBe(outcome);
      const after = await settledRss();
      expect((after - baseline) / MiB, `baseline ${(baseline / MiB).toFixed(1)} MiB, after ${(after / MiB).toFixed(1)} MiB`).toBeLessThan(32);
      expect((await cm.run("return 6 * 7", { session: `grow-${name.replace(/ /g, "-")}` })).structuredContent.value).toBe(42);
    });
  }

  it("keeps idle sessions' memory bounded: twelve sessions that each grow by ~10 MiB do not add up", async () => {
    for (let i = 0; i < 12; i++) {
      const result = await cm.run(`const a = []; for (let i = 0; i < 160; i++) a.push("s".repeat(65536) + i); return a.length`, { session: `idle-${i}` });
      expect(result.structuredContent.value).toBe(160);
    }
    const after = await settledRss();
    expect((after - baseline) / MiB, `baseline ${(baseline / MiB).toFixed(1)} MiB, after ${(after / MiB).toFixed(1)} MiB`).toBeLessThan(32);
  });
});

describe("the warm-session options", () => {
  it("are validated", async () => {
    await expect(createCodemode({ workers: { idleSessions: -1 } })).rejects.toThrow("options.workers.idleSessions must be an integer from 0 to 64, got the number -1");
    await expect(createCodemode({ workers: { idleBytes: 1.5 } })).rejects.toThrow("options.workers.idleBytes must be an integer from 0 to 17179869184, got the number 1.5");
  });
});

describe("what a warm instance holds", () => {
  it("is measured from the allocator's break, which the snapshot layout must find for this build (a build that moves it fails here, not silently)", async () => {
    const { memoryLayout } = await import("../../src/engine/snapshot.js");
    const { newWasmInstance, pagesFor } = await import("../../src/engine/wasm-instance.js");
    const layout = await memoryLayout();
    const instance = await newWasmInstance(pagesFor(64 * MiB));
    const brk = () => new Uint32Array(instance.memory.buffer, layout.brkAddress, 1)[0]!;
    expect(brk()).toBe(layout.freshBrk);
    const runtime = instance.module.newRuntime();
    const context = runtime.newContext();
    context.unwrapResult(context.evalCode(`globalThis.big = "x".repeat(${8 * MiB})`)).dispose();
    const grown = brk() - layout.freshBrk;
    expect(grown).toBeGreaterThanOrEqual(8 * MiB);
    expect(grown).toBeLessThan(10 * MiB);
    context.dispose();
    runtime.dispose();
    expect(brk() - layout.freshBrk).toBe(grown);
  });
});
