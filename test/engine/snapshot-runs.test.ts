// Snapshot-fresh runs through the whole engine: a session's instance is restored after every run,
// so nothing a program did survives into the next one; the ordinary path stays available (forced,
// or when the start-up self-test fails, said once in a warning); Math.random gets a new seed per
// run unless the host gives one; and two sessions never run on the same instance.
import { afterEach, describe, expect, it } from "vitest";
import { SandboxEngine, type EngineOptions, type RunCallbacks } from "../../src/engine/engine.js";
import { memoryLayout, quickjsRandom } from "../../src/engine/snapshot.js";
import type { DoneMessage, RunRequest } from "../../src/engine/protocol.js";
import { runRequest } from "./run-request.js";

const engines: SandboxEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

const request = (code: string, session = "s", extra: Partial<RunRequest> = {}): RunRequest =>
  runRequest(code, { session, tools: ["echo"], globals: { task: { id: "t1" } }, limits: { timeoutMs: 5000, maxToolCalls: 10, maxCrossingBytes: 1024 * 1024 }, ...extra });
const quiet: RunCallbacks = { onCall() {}, onFlush() {}, onStore() {} };

async function engine(options: Partial<EngineOptions> = {}): Promise<SandboxEngine> {
  const created = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1, ...options });
  engines.push(created);
  await created.start();
  return created;
}

const run = (target: SandboxEngine, code: string, session = "s", extra: Partial<RunRequest> = {}): Promise<DoneMessage> => target.run(request(code, session, extra), quiet).done;

/** Runs until the session's instance comes from a snapshot (the first runs may precede the self-test). */
async function untilRestored(target: SandboxEngine, session = "s"): Promise<DoneMessage> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const done = await run(target, "return 1", session);
    if (done.vm?.restored) return done;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error("no run came from a snapshot");
}

const POLLUTE = `
  globalThis.leftover = { big: "x".repeat(100000) };
  Object.prototype.polluted = 1;
  Array.prototype.push = null;
  JSON.parse = () => "tampered";
  Math.max = () => 42;
  delete globalThis.Reflect;
  text("polluted");
  return [Math.random(), Math.random()];`;
const INSPECT = `return {
  leftover: typeof leftover,
  polluted: ({}).polluted,
  push: typeof [].push,
  parse: JSON.parse("[1]"),
  max: Math.max(1, 2),
  reflect: typeof Reflect,
  task: task.id,
  tools: typeof tools.echo,
  random: [Math.random(), Math.random()],
}`;
const PRISTINE = { leftover: "undefined", push: "function", parse: [1], max: 2, reflect: "object", task: "t1", tools: "function" };

function inspected(done: DoneMessage): Record<string, unknown> {
  expect(done.ok, JSON.stringify(done.error)).toBe(true);
  return JSON.parse(done.valueJson!) as Record<string, unknown>;
}

describe("snapshot-fresh runs", () => {
  it("leave nothing behind: globals, prototypes, built-ins and the Math.random sequence are new every run", async () => {
    const target = await engine();
    const first = await untilRestored(target);
    const polluted = await run(target, POLLUTE);
    expect(polluted.vm).toStrictEqual({ instance: first.vm!.instance, restored: true, prepared: true, source: "kept" });
    const randomsBefore = JSON.parse(polluted.valueJson!) as number[];
    const after = inspected(await run(target, INSPECT));
    const { random, ...rest } = after;
    expect(rest).toStrictEqual(PRISTINE);
    expect(random).not.toStrictEqual(randomsBefore);
    const again = inspected(await run(target, INSPECT));
    expect(again.random).not.toStrictEqual(random);
  });

  it("start a session's next run on a state prepared after its last one, which carries nothing of it", async () => {
    const target = await engine();
    await untilRestored(target);
    await run(target, `store("k", 1); ${POLLUTE}`);
    // The store is the request's (the host keeps it): not part of the prepared state.
    const loaded = await run(target, "return [load('k') === undefined, load('given')]", "s", { store: { given: "2" } });
    expect(loaded.vm?.prepared).toBe(true);
    expect(JSON.parse(loaded.valueJson!)).toStrictEqual([true, 2]);
    await run(target, POLLUTE);
    // Taken as prepared: the same tools, globals and limits as the run before.
    const first = await run(target, INSPECT);
    expect(first.vm).toMatchObject({ restored: true, prepared: true });
    const { random, ...rest } = inspected(first);
    expect(rest).toStrictEqual(PRISTINE);
    const second = await run(target, INSPECT);
    expect(second.vm?.prepared).toBe(true);
    expect(inspected(second).random).not.toStrictEqual(random);
  });

  it("redo a prepared state when the next run asks for other tools, globals or limits", async () => {
    const target = await engine();
    await untilRestored(target);
    const probe = "return { tools: Object.keys(tools), task: typeof task === 'object' ? task.id : typeof task, other: typeof other }";
    await run(target, probe);
    const changed = await run(target, probe, "s", { tools: ["echo", "files.read"], globals: { other: 1 } });
    expect(changed.vm).toMatchObject({ restored: true, prepared: false });
    expect(inspected(changed)).toStrictEqual({ tools: ["echo", "files"], task: "undefined", other: "number" });
    // Prepared after that run, with its configuration: the next run with the same one takes it.
    const same = await run(target, probe, "s", { tools: ["echo", "files.read"], globals: { other: 1 } });
    expect(same.vm?.prepared).toBe(true);
    expect(inspected(same)).toStrictEqual({ tools: ["echo", "files"], task: "undefined", other: "number" });
    const back = await run(target, probe);
    expect(back.vm?.prepared).toBe(false);
    expect(inspected(back)).toStrictEqual({ tools: ["echo"], task: "t1", other: "undefined" });
    // Other limits: a prepared state has the last run's memory and stack limits set.
    const deeper = await run(target, "function d(n) { return n === 0 ? 0 : 1 + d(n - 1) } return d(20000)", "s", { limits: { ...request("", "s").limits, stackBytes: 4 * 1024 * 1024 } });
    expect(deeper.vm?.prepared).toBe(false);
    expect(deeper.ok, JSON.stringify(deeper.error)).toBe(true);
    const shallow = await run(target, "function d(n) { return n === 0 ? 0 : 1 + d(n - 1) } return d(20000)");
    expect(shallow.vm?.prepared).toBe(false);
    expect(shallow.error?.kind).toBe("stack");
  });

  it("never prepare one session's state for another", async () => {
    const target = await engine();
    await untilRestored(target, "a");
    await run(target, "globalThis.mine = 'a'; return 1", "a");
    const b = await run(target, "return typeof mine", "b");
    expect(b.vm?.prepared).toBe(false);
    expect(JSON.parse(b.valueJson!)).toBe("undefined");
    const a = await run(target, "return typeof mine", "a");
    expect(a.vm?.prepared).toBe(true);
    expect(JSON.parse(a.valueJson!)).toBe("undefined");
    expect(a.vm?.instance).not.toBe(b.vm?.instance);
  });

  it("give Math.random the host's seed when the run asks for one, on either path", async () => {
    const seed = 0x9e3779b97f4a7c15n;
    const first = quickjsRandom(seed);
    const second = quickjsRandom(first.state);
    for (const snapshots of [true, false]) {
      const target = await engine({ snapshots });
      if (snapshots) await untilRestored(target);
      // The layout (where the state lives) is derived in the background on the ordinary path too.
      for (let i = 0; i < 200 && !(target as unknown as { layout?: unknown }).layout; i++) await new Promise((r) => setTimeout(r, 10));
      const seeded = [await run(target, "return [Math.random(), Math.random()]", "s", { randomSeed: seed }), await run(target, "return [Math.random(), Math.random()]", "s", { randomSeed: seed })];
      for (const done of seeded) {
        expect(done.vm?.restored).toBe(snapshots);
        expect(JSON.parse(done.valueJson!)).toStrictEqual([first.value, second.value]);
        expect(done.warnings).toStrictEqual([]);
      }
      const unseeded = await run(target, "return [Math.random(), Math.random()]");
      expect(JSON.parse(unseeded.valueJson!)).not.toStrictEqual([first.value, second.value]);
    }
  });

  it("are never shared between sessions, in one worker and across two", async () => {
    for (const maxWorkers of [1, 2]) {
      const target = await engine({ maxWorkers, minWorkers: maxWorkers });
      await untilRestored(target, "warm-up");
      const seen = new Map<string, Set<string>>();
      for (let round = 0; round < 6; round++) {
        const dones = await Promise.all(["a", "b", "c"].map((session) => run(target, "globalThis.mine = 1; return 1", session).then((done) => [session, done] as const)));
        for (const [session, done] of dones) {
          expect(done.ok).toBe(true);
          let instances = seen.get(session);
          if (!instances) seen.set(session, (instances = new Set()));
          instances.add(done.vm!.instance);
        }
      }
      const all = [...seen.values()].flatMap((instances) => [...instances]);
      // An instance serves one session only (a session may move to a new instance, never to another's).
      expect(new Set(all).size).toBe(all.length);
    }
  });

  it("take the ordinary path when forced, with the same results and no warning", async () => {
    const warnings: Error[] = [];
    const listener = (warning: Error) => warnings.push(warning);
    process.on("warning", listener);
    try {
      const target = await engine({ snapshots: false });
      for (let i = 0; i < 3; i++) {
        await run(target, POLLUTE);
        const done = await run(target, INSPECT);
        expect(done.vm?.restored).toBe(false);
        const { random: _random, ...rest } = inspected(done);
        expect(rest).toStrictEqual(PRISTINE);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(warnings.filter((warning) => (warning as { code?: string }).code === "CODEMODE_SNAPSHOTS_UNSUPPORTED")).toStrictEqual([]);
    } finally {
      process.off("warning", listener);
    }
  });

  it("fall back when the start-up self-test fails, and say why once for all workers", async () => {
    const warnings: Error[] = [];
    const listener = (warning: Error) => warnings.push(warning);
    process.on("warning", listener);
    try {
      const real = await memoryLayout();
      // A heap base one page off: the restore would leave the template's first page wrong.
      const target = await engine({ maxWorkers: 2, minWorkers: 2, layout: { ...real, heapBase: real.heapBase + 4096 } });
      const ours = () => warnings.filter((warning) => (warning as { code?: string }).code === "CODEMODE_SNAPSHOTS_UNSUPPORTED");
      for (let i = 0; i < 300 && ours().length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      const dones = await Promise.all([run(target, POLLUTE, "a"), run(target, POLLUTE, "b")]);
      for (const session of ["a", "b"]) {
        const done = await run(target, INSPECT, session);
        expect(done.vm?.restored).toBe(false);
        const { random: _random, ...rest } = inspected(done);
        expect(rest).toStrictEqual(PRISTINE);
      }
      expect(dones.map((done) => done.ok)).toStrictEqual([true, true]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(ours().map((warning) => warning.message)).toStrictEqual([expect.stringMatching(/^codemode-runtime: snapshot-fresh runs are off, .*: a restored instance differs from a never-used one/)]);
    } finally {
      process.off("warning", listener);
    }
  });
});
