// The shared-memory bridge under real runs: a run waiting for a tool sleeps in Atomics.wait, and
// is still stopped by an abort (which wakes it) or by terminating its worker; results that arrive
// together are settled together; output and calls reach the host in program order.
import { afterEach, describe, expect, it } from "vitest";
import { SandboxEngine, type RunCallbacks } from "../../src/engine/engine.js";
import type { HostBridge } from "../../src/engine/ring.js";
import type { RunRequest } from "../../src/engine/protocol.js";
import { runRequest } from "./run-request.js";
import { encodeToolResult } from "../../src/engine/bjson.js";
import type { Worker } from "node:worker_threads";

const engines: SandboxEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

const request = (code: string, timeoutMs = 10_000): RunRequest => runRequest(code, { tools: ["echo", "never"], limits: { timeoutMs, maxCrossingBytes: 1024 * 1024 } });

interface SlotView {
  bridge: HostBridge;
  worker: Worker;
}

/** Answers every call at once with its own arguments. */
function echoing(handle: () => ReturnType<SandboxEngine["run"]>): RunCallbacks {
  return {
    onCall(callId, _path, args) {
      handle().settle(callId, true, args);
    },
    onFlush() {},
    onStore() {},
  };
}

async function echoRun(target: SandboxEngine, code: string) {
  let handle!: ReturnType<SandboxEngine["run"]>;
  handle = target.run(
    request(code),
    echoing(() => handle),
  );
  return handle.done;
}

async function engine(): Promise<SandboxEngine> {
  const created = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1 });
  engines.push(created);
  await created.start();
  return created;
}

function onlySlot(target: SandboxEngine): SlotView {
  const slots = [...(target as unknown as { slots: Set<SlotView> }).slots];
  expect(slots).toHaveLength(1);
  return slots[0]!;
}

async function untilAsleep(bridge: HostBridge): Promise<void> {
  for (let i = 0; i < 500 && !bridge.workerAsleep; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(bridge.workerAsleep).toBe(true);
}

const never: RunCallbacks = { onCall() {}, onFlush() {}, onStore() {} };

describe("the bridge", () => {
  it("wakes a run asleep in Atomics.wait to abort it, and the worker serves the next run", async () => {
    const target = await engine();
    const slot = onlySlot(target);
    const handle = target.run(request("await tools.never({})"), never);
    await untilAsleep(slot.bridge);
    const wakes = slot.bridge.stats.workerWakes;
    handle.abort();
    const done = await handle.done;
    expect(done.error).toStrictEqual({ kind: "aborted", message: "the run was aborted by the host" });
    // The worker answered itself (a hard stop would have discarded the instance and the worker).
    expect(done.instanceDiscarded).toBe(false);
    expect(slot.bridge.stats.workerWakes).toBeGreaterThan(wakes);
    expect(onlySlot(target)).toBe(slot);
    expect((await target.run(request("return 2"), never).done).valueJson).toBe("2");
  });

  it("terminates a worker asleep in Atomics.wait", async () => {
    const target = await engine();
    const slot = onlySlot(target);
    const exited = new Promise<number>((resolve) => slot.worker.once("exit", resolve));
    const handle = target.run(request("await tools.never({})"), never);
    await untilAsleep(slot.bridge);
    await target.close();
    expect(await exited).toBe(1);
    expect((await handle.done).error).toStrictEqual({ kind: "aborted", message: "the runtime was closed while the program ran" });
  });

  it("ends a run asleep at its deadline by itself", async () => {
    const target = await engine();
    const done = await target.run(request("await tools.never({})", 200), never).done;
    expect(done.error?.kind).toBe("timeout");
    expect(done.error?.message).toBe("the program ran past its 200 ms deadline");
    expect(done.instanceDiscarded).toBe(false);
  });

  it("wakes the worker once for the results of one turn, however many calls they answer", async () => {
    const target = await engine();
    const slot = onlySlot(target);
    await echoRun(target, "await tools.echo({})");
    const before = slot.bridge.stats;
    const done = await echoRun(target, "const r = await Promise.all(Array.from({ length: 400 }, (_, i) => tools.echo({ i }))); return r.length");
    expect(done.valueJson).toBe("400");
    const after = slot.bridge.stats;
    // The first call goes at once and its answer may find the worker asleep; the other 399 are
    // answered in a turn or two. A wake for each answer would be hundreds; a loaded machine that
    // parks the worker between the host's turns adds a few (CI once saw 4 where a quiet one sees 2).
    expect(after.workerWakes - before.workerWakes).toBeLessThanOrEqual(12);
    expect(after.workerSleeps - before.workerSleeps).toBeLessThanOrEqual(12);
  });

  it("keeps the host's own timers running while it polls through a loop of calls", async () => {
    const target = await engine();
    let ticks = 0;
    const tick = setInterval(() => ticks++, 1);
    try {
      const done = await echoRun(target, "let s = 0; for (let i = 0; i < 2000; i++) s += (await tools.echo({ i })).i; return s");
      expect(done.valueJson).toBe(String((1999 * 2000) / 2));
    } finally {
      clearInterval(tick);
    }
    expect(ticks).toBeGreaterThan(0);
  });

  it("stops polling when a run ends: the host sleeps until the next run", async () => {
    const target = await engine();
    const slot = onlySlot(target);
    for (let i = 0; i < 5; i++) {
      await echoRun(target, "return (await tools.echo({ i: 1 })).i");
      // The end was delivered in a turn followed by one more (for a next run the caller sends at
      // once), which went to sleep without a poll window.
      expect(slot.bridge.asleep).toBe(false);
      await new Promise((resolve) => setImmediate(resolve));
      expect(slot.bridge.asleep).toBe(true);
    }
  });

  it("hands a worker watching the ring between runs its next run there, and aborts it there too", async () => {
    const target = await engine();
    const slot = onlySlot(target);
    const doorbells: string[] = [];
    const post = slot.worker.postMessage.bind(slot.worker);
    slot.worker.postMessage = (message: { type: string }) => {
      doorbells.push(message.type);
      post(message);
    };
    // The worker watches once its start-up work is done and a run ended; runs until then go by its
    // port, and so does one that comes while it is between two slices of its watch (a busy machine
    // stretches those): try until a run found it watching.
    let viaRing = false;
    for (let attempt = 0; attempt < 100 && !viaRing; attempt++) {
      await echoRun(target, "return 1");
      for (let i = 0; i < 20 && !slot.bridge.workerWatching; i++) await new Promise((resolve) => setTimeout(resolve, 5));
      if (!slot.bridge.workerWatching) continue;
      doorbells.length = 0;
      const wakes = slot.bridge.stats.workerWakes;
      const done = await echoRun(target, "return (await tools.echo({ n: 7 })).n");
      expect(done.valueJson).toBe("7");
      viaRing = doorbells.length === 0 && slot.bridge.stats.workerWakes > wakes;
    }
    expect(viaRing).toBe(true);
    // A run taken from the ring is stopped as any other: abort wakes it where it sleeps.
    const handle = target.run(request("await tools.never({})"), never);
    await untilAsleep(slot.bridge);
    handle.abort();
    expect((await handle.done).error).toStrictEqual({ kind: "aborted", message: "the run was aborted by the host" });
  });

  it("serves runs sent back to back, each as the last one ends, and still gets to its start-up work: they move onto prepared snapshot states", async () => {
    const target = await engine();
    // Each run is sent from the last one's end, while its worker restores and prepares: such a
    // run is taken without an event-loop turn, yet the worker's background start-up (the
    // snapshot self-test) needs turns, and it must get them while the runs keep coming.
    let prepared = 0;
    let runs = 0;
    for (; runs < 5_000 && prepared < 20; runs++) {
      const done = await echoRun(target, `return ${runs}`);
      expect(done.valueJson).toBe(String(runs));
      if (done.vm?.prepared) prepared++;
    }
    expect(prepared).toBe(20);
  });

  it("settles results that arrive together, keeps output and calls in program order, and takes large values through the port", async () => {
    const target = await engine();
    const events: string[] = [];
    const big = "x".repeat(600_000);
    let handle!: ReturnType<SandboxEngine["run"]>;
    const callbacks: RunCallbacks = {
      onCall(callId, path, args) {
        events.push(`call ${path} ${args.length > 100 ? args.length : args}`);
        // Answered on the host's next turn, all together.
        setImmediate(() => handle.settle(callId, true, path === "echo" && args.length > 100 ? JSON.stringify(big) : args));
      },
      onFlush(text) {
        events.push(`text ${text.join("|")}`);
      },
      onStore() {},
    };
    handle = target.run(
      request(`
        text("a");
        const many = await Promise.all(Array.from({ length: 300 }, (_, i) => tools.echo({ i })));
        text("b");
        const large = await tools.echo({ s: "y".repeat(300000) });
        text("c");
        return { sum: many.reduce((s, r) => s + r.i, 0), large: large.length };`),
      callbacks,
    );
    const done = await handle.done;
    expect([done.ok, done.valueJson, done.text]).toStrictEqual([true, JSON.stringify({ sum: (299 * 300) / 2, large: 600_000 }), ["c"]]);
    expect(events[0]).toBe("text a");
    expect(events.slice(1, 301)).toStrictEqual(Array.from({ length: 300 }, (_, i) => `call echo {"i":${i}}`));
    expect(events.slice(301)).toStrictEqual(["text b", `call echo ${JSON.stringify({ s: "y".repeat(300000) }).length}`]);
  });
});

describe("tool results handed to the guest", () => {
  it("settle in arrival order within one delivery, whatever their kind; a text that is not JSON rejects only its own call", async () => {
    const target = await engine();
    let handle!: ReturnType<SandboxEngine["run"]>;
    const calls: Array<[number, number]> = [];
    const callbacks: RunCallbacks = {
      onCall(callId, _path, args) {
        calls.push([callId, (JSON.parse(args) as { i: number }).i]);
        if (calls.length < 6) return;
        // All six in one turn, last call first: JSON, binary, an error, a broken text, JSON, JSON.
        const by = new Map(calls.map(([id, i]) => [i, id]));
        handle.settle(by.get(5)!, true, JSON.stringify({ json: 5 }));
        handle.settle(by.get(4)!, true, encodeToolResult({ binary: 4 })!.bytes);
        handle.settle(by.get(3)!, false, JSON.stringify({ name: "Error", code: "tool_failed", message: "three failed" }));
        // Not JSON, and with a raw NUL, which a guest string made from it would end at.
        handle.settle(by.get(2)!, true, '"not\0json');
        handle.settle(by.get(1)!, true, JSON.stringify("one\0with a NUL \ud800"));
        handle.settle(by.get(0)!, true, JSON.stringify([0]));
        // Unknown and repeated ids change nothing.
        handle.settle(999, true, "1");
        handle.settle(by.get(0)!, true, JSON.stringify("again"));
      },
      onFlush() {},
      onStore() {},
    };
    handle = target.run(
      request(`
        const order = [];
        await Promise.all([0, 1, 2, 3, 4, 5].map((i) => tools.echo({ i }).then(
          (value) => order.push([i, value]),
          (error) => order.push([i, error.name, error.code ?? null, error instanceof Error]),
        )));
        return order;`),
      callbacks,
    );
    const done = await handle.done;
    expect(done.ok).toBe(true);
    expect(JSON.parse(done.valueJson!)).toStrictEqual([
      [5, { json: 5 }],
      [4, { binary: 4 }],
      [3, "Error", "tool_failed", true],
      [2, "SyntaxError", null, true],
      [1, "one\0with a NUL \ud800"],
      [0, [0]],
    ]);
  });

  it("reach a program that replaced the built-ins a delivery uses", async () => {
    const target = await engine();
    let handle!: ReturnType<SandboxEngine["run"]>;
    const pending: Array<[number, string]> = [];
    handle = target.run(
      request(`
        const tamper = () => { throw new Error("tampered"); };
        String.prototype.slice = tamper;
        JSON.parse = tamper;
        globalThis.Promise = function () { tamper(); };
        Map.prototype.set = Map.prototype.get = tamper;
        const calls = [tools.echo({ i: 0 }), tools.echo({ i: 1 }), tools.echo({ i: 2 })];
        const values = [];
        for (const call of calls) values.push((await call).i);
        return values;`),
      {
        onCall(callId, _path, args) {
          pending.push([callId, args]);
          // Together, so they reach the guest in one delivery.
          if (pending.length === 3) for (const [id, json] of pending) handle.settle(id, true, json);
        },
        onFlush() {},
        onStore() {},
      },
    );
    const done = await handle.done;
    expect([done.ok, done.valueJson]).toStrictEqual([true, "[0,1,2]"]);
  });

  it("never reach the next run: a result for a call of a run that ended is dropped, though the next run's call has the same id", async () => {
    const target = await engine();
    const first = target.run(request(`tools.echo({ late: true }); return "first"`), {
      // At once: the result is sent while the host still counts the run as active, and reaches
      // the worker after the program ended.
      onCall: (callId) => first.settle(callId, true, JSON.stringify("late")),
      onFlush() {},
      onStore() {},
    });
    const ended = await first.done;
    expect([ended.ok, ended.valueJson, ended.pendingCalls]).toStrictEqual([true, '"first"', [1]]);
    const second = await echoRun(target, `return await tools.echo({ second: true })`);
    expect([second.ok, second.valueJson]).toStrictEqual([true, JSON.stringify({ second: true })]);
  });
});
