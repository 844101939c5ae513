// Wake-ups the shared-memory bridge costs per operation, counted (not timed) at the engine level:
// a sequential loop of calls, a Promise.all, warm runs back to back and after a pause. Counts do
// not depend on how loaded the machine is as times do; on a quiet machine a sequential loop should
// ring the host and wake the worker on few calls, on a busy one the windows shrink and both sleep.
import { SandboxEngine, type RunHandle } from "../src/engine/engine.js";
import type { RunRequest } from "../src/engine/protocol.js";
import type { BridgeStats, HostBridge } from "../src/engine/ring.js";

export interface CountRow {
  name: string;
  perOp: string;
  hostRings: number;
  workerWakes: number;
  workerSleeps: number;
  /** Runs that had to be announced on the worker's port (it was not watching the ring). */
  doorbells: number;
  /** Runs that started on a state their worker prepared after the session's previous run (worker.ts). */
  prepared: number;
  medianUs: number;
}

let next = 0;
function request(code: string): RunRequest {
  return {
    runId: `bench${++next}`,
    code,
    session: "bench",
    limits: {
      timeoutMs: 60_000,
      memoryBytes: 64 * 1024 * 1024,
      stackBytes: 1024 * 1024,
      maxToolCalls: 1_000_000,
      maxCrossingBytes: 16 * 1024 * 1024,
      storeValueBytes: 1024,
      storeSessionBytes: 4096,
      maxTimers: 10,
    },
    tools: ["echo"],
    globals: {},
    store: {},
  };
}

interface SlotView {
  bridge: HostBridge;
  worker: { postMessage(message: { type: string }): void };
}

export async function bridgeCounts(quick: boolean): Promise<CountRow[]> {
  const engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1 });
  await engine.start();
  /** The engine's one worker (a worker that held too much memory is replaced: wait for the new one). */
  const slot = async (): Promise<SlotView> => {
    for (;;) {
      const found = [...(engine as unknown as { slots: Set<SlotView> }).slots][0];
      if (found) return found;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  let doorbells = 0;
  const watchDoorbells = (view: SlotView) => {
    const post = view.worker.postMessage.bind(view.worker);
    view.worker.postMessage = (message) => {
      if (message.type === "ring") doorbells++;
      post(message);
    };
  };
  let prepared = 0;
  let watched = await slot();
  watchDoorbells(watched);
  const run = async (code: string) => {
    let handle!: RunHandle;
    handle = engine.run(request(code), {
      onCall: (callId, _path, args) => handle.settle(callId, true, args),
      onFlush() {},
      onStore() {},
    });
    const done = await handle.done;
    if (!done.ok) throw new Error(`bench program failed: ${JSON.stringify(done.error)}`);
    if (done.vm?.prepared) prepared++;
  };
  const N = 500;
  const cases: Array<{ name: string; code: string; ops: number; runs: number; pauseMs: number }> = [
    { name: "sequential tool call", code: `for (let i = 0; i < ${N}; i++) await tools.echo({ i })`, ops: N, runs: quick ? 3 : 10, pauseMs: 0 },
    { name: "Promise.all of 500", code: `await Promise.all(Array.from({ length: ${N} }, (_, i) => tools.echo({ i })))`, ops: N, runs: quick ? 3 : 10, pauseMs: 0 },
    { name: 'warm text("hi"), back to back', code: `text("hi")`, ops: 1, runs: quick ? 30 : 200, pauseMs: 0 },
    { name: 'warm text("hi") after 20 ms idle', code: `text("hi")`, ops: 1, runs: quick ? 10 : 50, pauseMs: 20 },
    { name: 'warm text("hi") after 50 ms idle', code: `text("hi")`, ops: 1, runs: quick ? 10 : 40, pauseMs: 50 },
  ];
  const rows: CountRow[] = [];
  try {
    // Start-up work done (snapshots on), so the worker watches the ring between runs.
    for (let i = 0; i < 20; i++) await run(`text("hi")`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (let index = 0, attempts = 0; index < cases.length; ) {
      const item = cases[index]!;
      for (let i = 0; i < 3; i++) await run(item.code);
      if ((await slot()) !== watched) {
        watched = await slot();
        watchDoorbells(watched);
      }
      const before: BridgeStats = watched.bridge.stats;
      doorbells = 0;
      prepared = 0;
      const times: number[] = [];
      for (let i = 0; i < item.runs; i++) {
        if (item.pauseMs) await new Promise((resolve) => setTimeout(resolve, item.pauseMs));
        const start = performance.now();
        await run(item.code);
        times.push(performance.now() - start);
      }
      // A replaced worker mid-case would mix two workers' counters: measure the case again.
      if ((await slot()) !== watched && ++attempts < 3) continue;
      const after = watched.bridge.stats;
      const ops = item.ops * item.runs;
      times.sort((a, b) => a - b);
      rows.push({
        name: item.name,
        perOp: item.ops === 1 ? "run" : "call",
        hostRings: (after.hostRings - before.hostRings) / ops,
        workerWakes: (after.workerWakes - before.workerWakes) / ops,
        workerSleeps: (after.workerSleeps - before.workerSleeps) / ops,
        doorbells: doorbells / item.runs,
        prepared: prepared / item.runs,
        medianUs: (times[times.length >> 1]! / item.ops) * 1000,
      });
      index++;
      attempts = 0;
    }
  } finally {
    await engine.close();
  }
  return rows;
}
