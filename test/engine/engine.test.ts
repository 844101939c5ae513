// The worker pool itself: idle workers retire, workers that cannot start fail runs with a reason
// instead of leaving them queued forever.
import { afterEach, describe, expect, it } from "vitest";
import { SandboxEngine, type EngineStats, type RunCallbacks } from "../../src/engine/engine.js";
import { runRequest } from "./run-request.js";

const engines: SandboxEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

// The pool's tests keep the limits small: nothing here needs more.
const request = (code: string) => runRequest(code, { limits: { timeoutMs: 5000, maxToolCalls: 10, maxCrossingBytes: 1024 * 1024 } });
const quiet: RunCallbacks = { onCall() {}, onFlush() {}, onStore() {} };

describe("the worker pool", () => {
  it("grows for concurrent runs and retires idle workers down to the minimum, also after reuse", async () => {
    const engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 3, minWorkers: 1, idleMs: 150 });
    engines.push(engine);
    await engine.start();
    // Long enough to hold each worker past the wait after which the pool grows (and doubles at most).
    const concurrent = await Promise.all([1, 2, 3].map(() => engine.run(request("await sleep(800); return 1"), quiet).done));
    expect(concurrent.map((done) => done.ok)).toStrictEqual([true, true, true]);
    // Started, not still alive: the workers start staggered, so the second to finish may be idle
    // for longer than idleMs before the third does, and is retired already.
    expect(engine.stats.workersStarted).toBe(3);
    // Reusing a worker before its idle timer fires must not keep it alive for good.
    for (let i = 0; i < 3; i++) expect((await engine.run(request("return 2"), quiet).done).ok).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(engine.workerCount).toBe(1);
    expect((await engine.run(request("return 3"), quiet).done).valueJson).toBe("3");
  });

  it("fails a queued run with kind sandbox when workers die before they are ready", async () => {
    const engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, minWorkers: 0, workerHeapMb: 1 });
    engines.push(engine);
    const done = await engine.run(request("return 1"), quiet).done;
    expect(done.ok).toBe(false);
    expect(done.error?.kind).toBe("sandbox");
    expect(done.error?.message).toMatch(/^the sandbox worker could not start \(3 attempts; last: .*memory limit/);
  });
});

describe("a signal aborted before the run", () => {
  it("never lets the program run, even with an idle worker waiting, and the next run works", async () => {
    const engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, minWorkers: 1 });
    engines.push(engine);
    await engine.start();
    const flushed: string[] = [];
    const watching: RunCallbacks = { ...quiet, onFlush: (text) => flushed.push(...text) };
    for (let i = 0; i < 20; i++) {
      const done = await engine.run(request(`text("never"); return 1`), watching, AbortSignal.abort()).done;
      expect(done.ok).toBe(false);
      expect(done.error).toEqual({ kind: "aborted", message: "the run was aborted before it started" });
    }
    expect(flushed).toEqual([]);
    expect((await engine.run(request("return 2"), quiet).done).valueJson).toBe("2");
  });
});

/** Runs `return 1` in `session` until its instance comes from a snapshot (the first runs may precede the worker's self-test). */
async function warm(engine: SandboxEngine, session: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const done = await engine.run(runRequest("return 1", { session }), quiet).done;
    if (done.vm?.restored) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("no run came from a snapshot");
}

const delta = (after: EngineStats, before: EngineStats) => Object.fromEntries(Object.entries(after).map(([key, value]) => [key, value - before[key as keyof EngineStats]]));

describe("the pool's counters", () => {
  it("say where each run's instance came from: a new session's made ahead of time, then its own", async () => {
    const engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1 });
    engines.push(engine);
    await engine.start();
    await warm(engine, "a");
    const before = engine.stats;
    const first = await engine.run(runRequest("return 1", { session: "b" }), quiet).done;
    const second = await engine.run(runRequest("return 2", { session: "b" }), quiet).done;
    expect([first.vm?.source, second.vm?.source]).toStrictEqual(["ready", "kept"]);
    expect(second.vm?.instance).toBe(first.vm?.instance);
    expect(delta(engine.stats, before)).toStrictEqual({ runs: 2, kept: 1, ready: 1, built: 0, migrations: 0, affinityWaits: 0, workersStarted: 0 });
  });

  it("count a run held back for its session's busy worker, then moved to the free one", async () => {
    const engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 2, minWorkers: 2 });
    engines.push(engine);
    await engine.start();
    // The second warm worker starts after the first: wait until both are ready (the pool's own flag).
    const slots = (engine as unknown as { slots: Set<{ isReady: boolean }> }).slots;
    for (let i = 0; i < 500 && !(slots.size === 2 && [...slots].every((slot) => slot.isReady)); i++) await new Promise((r) => setTimeout(r, 20));
    await warm(engine, "a");
    const before = engine.stats;
    const held = engine.run(runRequest("await sleep(300); return 1", { session: "a" }), quiet).done;
    const moved = await engine.run(runRequest("return 2", { session: "a" }), quiet).done;
    expect(moved.valueJson).toBe("2");
    expect((await held).valueJson).toBe("1");
    const counted = delta(engine.stats, before);
    expect([counted.affinityWaits, counted.migrations, counted.workersStarted]).toStrictEqual([1, 1, 0]);
  });
});

describe("workers that hold memory", () => {
  it("are replaced once a run leaves more than idleBytes in them, or overflowed the stack; small runs keep their worker", async () => {
    const engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1, idleBytes: 8 * 1024 * 1024 });
    engines.push(engine);
    await engine.start();
    for (let i = 0; i < 5; i++) expect((await engine.run(request(`return ${i}`), quiet).done).ok).toBe(true);
    // The first worker finds where the allocator keeps its break; wait until it has told the pool.
    for (let i = 0; i < 200 && !(engine as unknown as { layout?: unknown }).layout; i++) await new Promise((r) => setTimeout(r, 10));
    expect(engine.workersReplaced).toBe(0);
    const grow = await engine.run(request(`const a = []; for (let i = 0; i < 240; i++) a.push("s".repeat(65536) + i); return a.length`), quiet).done;
    expect([grow.ok, grow.retire]).toStrictEqual([true, true]);
    expect(engine.workersReplaced).toBe(1);
    const deep = await engine.run(request(`function f(n) { return f(n + 1) + 1 } f(0)`), quiet).done;
    expect([deep.error?.kind, deep.retire]).toStrictEqual(["stack", true]);
    expect(engine.workersReplaced).toBe(2);
    expect((await engine.run(request("return 7"), quiet).done).valueJson).toBe("7");
    expect(engine.workerCount).toBe(1);
  });

  it("keep their worker while it serves tool-call loops and trivial runs: garbage its heap will collect is not held", async () => {
    // Before, a run's short-lived garbage (V8's young generation doubling, then old-space garbage
    // a collection would free) counted as held: a worker serving these was replaced every two
    // runs of the loop, and every ~1,300 trivial runs.
    const engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1, idleBytes: 8 * 1024 * 1024 });
    engines.push(engine);
    await engine.start();
    const loop = async () => {
      let handle!: ReturnType<SandboxEngine["run"]>;
      const callbacks: RunCallbacks = { ...quiet, onCall: (callId, _path, args) => handle.settle(callId, true, args) };
      handle = engine.run(runRequest(`for (let i = 0; i < 1000; i++) await tools.echo({ i, pad: "p".repeat(200) }); return 1`, { tools: ["echo"] }), callbacks);
      return handle.done;
    };
    const before = engine.stats;
    for (let i = 0; i < 12; i++) expect((await loop()).retire).toBeUndefined();
    for (let i = 0; i < 2000; i++) expect((await engine.run(request(`text("hi")`), quiet).done).retire).toBeUndefined();
    expect(engine.workersReplaced).toBe(0);
    expect(delta(engine.stats, before).workersStarted).toBe(0);
  });
});
