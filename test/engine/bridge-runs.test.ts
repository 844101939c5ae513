// The shared-memory bridge under real runs: a run waiting for a tool sleeps in Atomics.wait, and
// is still stopped by an abort (which wakes it) or by terminating its worker; results that arrive
// together are settled together; output and calls reach the host in program order.
import { afterEach, describe, expect, it } from "vitest";
import { SandboxEngine, type RunCallbacks } from "../../src/engine/engine.js";
import type { HostBridge } from "../../src/engine/ring.js";
import type { RunRequest } from "../../src/engine/protocol.js";
import type { Worker } from "node:worker_threads";

const engines: SandboxEngine[] = [];
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

let next = 0;
function request(code: string, timeoutMs = 10_000): RunRequest {
  return {
    type: "run",
    runId: `r${++next}`,
    abortSeq: 0,
    code,
    session: "s",
    limits: { timeoutMs, memoryBytes: 64 * 1024 * 1024, stackBytes: 1024 * 1024, maxToolCalls: 5000, maxCrossingBytes: 1024 * 1024, storeValueBytes: 1024, storeSessionBytes: 4096, maxTimers: 10 },
    deadline: 0,
    tools: ["echo", "never"],
    globals: {},
    store: {},
  };
}

interface SlotView {
  bridge: HostBridge;
  worker: Worker;
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
