// Entry point of a sandbox worker thread. A worker runs one program at a time, so the host can
// terminate it when a program is stuck inside a long builtin without hurting anyone else.
//
// It keeps QuickJS instances warm between runs: one per isolation key (session), never shared
// across keys, plus a fresh spare so a new session does not wait for instantiation. An instance
// that trapped is dropped.
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from "node:worker_threads";
import { GuestRun } from "./guest-run.js";
import { memoryLayout } from "./snapshot.js";
import { newWasmInstance, pagesFor, type WasmInstance } from "./wasm-instance.js";
import { useCompiledModule } from "./wasm-module.js";
import type { HostToWorker, RunRequest, SettleMessage, WorkerToHost } from "./protocol.js";

interface WorkerConfig {
  prelude: string;
  abortBuffer: SharedArrayBuffer;
  /** Instances kept per worker; the least recently used is dropped past this. */
  maxInstances: number;
  /** Memory (RSS growth) the worker may keep after its runs before it asks to be replaced. */
  maxHeldBytes: number;
  defaultMemoryBytes: number;
  /** Tool results arrive here, apart from run and abort messages, so a waiting run can poll for them. */
  settlePort: MessagePort;
  /** The QuickJS module as the host compiled it (its code is shared, not compiled again). */
  wasmModule: WebAssembly.Module;
  /** Where the allocator keeps its break, when an earlier worker found it. */
  layout?: { brkAddress: number; freshBrk: number };
}

const config = workerData as WorkerConfig;
useCompiledModule(config.wasmModule);
const port = parentPort!;
const abortFlag = new Int32Array(config.abortBuffer);
const instances = new Map<string, WasmInstance>();
let spare: Promise<WasmInstance> | undefined;
let current: GuestRun | undefined;
/**
 * Memory that runs added to this worker and that it still holds: pages a program touched in its
 * instance stay resident (linear memory never shrinks), and a dropped instance's memory returns
 * only once this thread's heap collects it. Counted per instance from the allocator's break,
 * whose address (and value in a fresh instance) the snapshot module derives for this build;
 * until it has, or where it cannot, growth is not counted and only the other rules apply.
 */
const grownBy = new Map<WasmInstance, number>();
let layout = config.layout;

/** How far a run grew an instance's heap past a fresh instance's. */
function heapGrowth(instance: WasmInstance): number {
  if (!layout) return 0;
  return Math.max(0, new Uint32Array(instance.memory.buffer, layout.brkAddress, 1)[0]! - layout.freshBrk);
}
/** Growth of dropped instances not yet collected. */
let droppedBytes = 0;
const collected = new FinalizationRegistry<number>((bytes) => {
  droppedBytes -= bytes;
});

function drop(instance: WasmInstance): void {
  const bytes = grownBy.get(instance) ?? 0;
  grownBy.delete(instance);
  if (bytes === 0) return;
  droppedBytes += bytes;
  collected.register(instance.memory, bytes);
}

/**
 * This thread's own heap once it finished starting (the layout probe included): what runs add to
 * it is held too (a text flood grew it by ~15 MiB, most of it young generation that V8 shrinks
 * only seconds later). Not counted before then, or start-up would count as held.
 */
let baseHeap: number | undefined;

function heldBytes(): number {
  let held = droppedBytes + (baseHeap === undefined ? 0 : Math.max(0, process.memoryUsage().heapTotal - baseHeap));
  for (const bytes of grownBy.values()) held += bytes;
  return held;
}

function post(message: WorkerToHost): void {
  port.postMessage(message);
}

function instanceKey(session: string, maxPages: number): string {
  return `${maxPages}:${session}`;
}

function prepareSpare(maxPages: number): void {
  spare = newWasmInstance(maxPages);
  // A failed spare is retried lazily by the next run.
  spare.catch(() => (spare = undefined));
}

async function instanceFor(request: RunRequest): Promise<WasmInstance> {
  const maxPages = pagesFor(request.limits.memoryBytes);
  const key = instanceKey(request.session, maxPages);
  const existing = instances.get(key);
  if (existing && !existing.dead) {
    // Re-insert to keep the map in least-recently-used order.
    instances.delete(key);
    instances.set(key, existing);
    return existing;
  }
  instances.delete(key);
  let instance: WasmInstance | undefined;
  if (spare) {
    const candidate = await spare.catch(() => undefined);
    spare = undefined;
    if (candidate && candidate.maxPages === maxPages) instance = candidate;
  }
  instance ??= await newWasmInstance(maxPages);
  instances.set(key, instance);
  while (instances.size > config.maxInstances) {
    const oldest = instances.keys().next().value as string;
    const evicted = instances.get(oldest)!;
    instances.delete(oldest);
    if (evicted !== instance) drop(evicted);
  }
  return instance;
}

async function run(request: RunRequest): Promise<void> {
  let instance: WasmInstance;
  try {
    instance = await instanceFor(request);
  } catch (error) {
    post({
      type: "done",
      runId: request.runId,
      ok: false,
      error: { kind: "sandbox", message: `could not start a sandbox instance: ${(error as Error).message}` },
      warnings: [],
      pendingCalls: [],
      instanceDiscarded: true,
    });
    return;
  }
  const guest = new GuestRun(instance, request, config.prelude, abortFlag, post, pollSettles);
  current = guest;
  const done = await guest.execute();
  current = undefined;
  grownBy.set(instance, heapGrowth(instance));
  const kept = [...instances.values()].includes(instance);
  if (instance.dead || !kept) drop(instance);
  // Past the budget the host replaces this worker: terminating the thread is what frees its
  // memory. A stack overflow went deep into this thread's native stack, whose pages stay
  // resident for the thread's life: that worker is replaced too.
  if (heldBytes() > config.maxHeldBytes || done.error?.kind === "stack") done.retire = true;
  post(done);
  guest.teardown();
  instance.runs++;
  if (instance.dead) {
    for (const [key, value] of instances) if (value === instance) instances.delete(key);
  }
  // Replenish the spare after answering, off the critical path of the run that just ended.
  setImmediate(() => {
    if (!spare) prepareSpare(pagesFor(config.defaultMemoryBytes));
  });
}

function onSettle(message: SettleMessage): void {
  if (current?.runId === message.runId) current.settle(message);
}

/** Take the tool results already queued, without waiting for the event loop; true if there were any. */
function pollSettles(): boolean {
  let received = false;
  for (let next = receiveMessageOnPort(config.settlePort); next; next = receiveMessageOnPort(config.settlePort)) {
    onSettle(next.message as SettleMessage);
    received = true;
  }
  return received;
}

config.settlePort.on("message", onSettle);

port.on("message", (message: HostToWorker) => {
  switch (message.type) {
    case "run":
      void run(message);
      break;
    case "abort":
      if (current?.runId === message.runId) current.abort();
      break;
  }
});

prepareSpare(pagesFor(config.defaultMemoryBytes));
const ready = (): void => {
  post({ type: "ready" });
  // Off the first run's path: the layout probe costs an instance of its own.
  setImmediate(() => {
    const settled = (): void => {
      baseHeap = process.memoryUsage().heapTotal;
    };
    if (layout) return settled();
    memoryLayout().then((found) => {
      layout = { brkAddress: found.brkAddress, freshBrk: found.freshBrk };
      post({ type: "layout", layout });
      settled();
    }, settled);
  });
};
spare!.then(ready, ready);
