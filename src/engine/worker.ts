// Entry point of a sandbox worker thread. A worker runs one program at a time, so the host can
// terminate it when a program is stuck inside a long builtin without hurting anyone else.
//
// It keeps QuickJS instances warm between runs: one per isolation key (session), never shared
// across keys, plus a fresh spare so a new session does not wait for instantiation. An instance
// that trapped is dropped.
//
// Each instance keeps a snapshot of its own fresh template (runtime, context, the static prelude)
// and is restored to it after every run (snapshot.ts): a run starts from memory byte-identical to
// a never-used instance, without building a runtime. Snapshots start once a self-test passed, in
// the background after the worker is ready; on any surprise the worker says why (once) and keeps
// the ordinary path: a runtime, context and prelude built for every run.
import { getHeapSpaceStatistics } from "node:v8";
import { parentPort, threadId, workerData } from "node:worker_threads";
import { GuestRun, type HostLink, type VmSource } from "./guest-run.js";
import { WorkerBridge, countingGate, type BridgeInit, type SpinGate } from "./ring.js";
import { formatBatch, parseRun, parseSettle, runMessageChars, SEND_NOW_CHARS } from "./bridge-format.js";
import { bjsonSelfTest } from "./bjson.js";
import { freshVm, installConfig, preludeSetup, restoredVm, runConfig, type GuestVm, type HostDispatch } from "./guest-vm.js";
import { InstanceSnapshot, memoryLayout, startSnapshots, type MemoryLayout } from "./snapshot.js";
import { newWasmInstance, pagesFor, type WasmInstance } from "./wasm-instance.js";
import { useCompiledModule } from "./wasm-module.js";
import type { HostToWorker, RunMessage, RunRequest, WorkerToHost } from "./protocol.js";

interface WorkerConfig {
  prelude: string;
  abortBuffer: SharedArrayBuffer;
  /** Instances kept per worker; the least recently used is dropped past this. */
  maxInstances: number;
  /** Memory (RSS growth) the worker may keep after its runs before it asks to be replaced. */
  maxHeldBytes: number;
  defaultMemoryBytes: number;
  /** The shared-memory bridge: tool results in, the run's messages out (runs and aborts come by postMessage). */
  bridge: BridgeInit;
  /**
   * The QuickJS module as the host compiled it (its code is shared, not compiled again); absent
   * for the host's first worker, which boots while the host compiles and gets it by message.
   */
  wasmModule?: WebAssembly.Module;
  /** This build's memory layout, when an earlier worker derived it (or a test imposes one). */
  layout?: MemoryLayout;
  /** Workers spinning while they wait for a tool result (one Int32 shared by the engine's workers), and how many may. */
  spinners: SharedArrayBuffer;
  maxSpinners: number;
  /** Restore instances from snapshots (false: the ordinary path, forced). */
  snapshots: boolean;
}

const config = workerData as WorkerConfig;
/** How long a new worker waits for its first run before it starts its background work anyway. */
const BACKGROUND_DELAY_MS = 100;
const port = parentPort!;
const moduleReady = config.wasmModule
  ? Promise.resolve(useCompiledModule(config.wasmModule))
  : new Promise<void>((resolve) => {
      const adopt = (message: { type?: string; module?: WebAssembly.Module }) => {
        if (message.type !== "module" || !message.module) return;
        port.off("message", adopt);
        useCompiledModule(message.module);
        resolve();
      };
      port.on("message", adopt);
    });
const abortFlag = new Int32Array(config.abortBuffer);
const instances = new Map<string, WasmInstance>();
let spare: Promise<WasmInstance> | undefined;
let current: GuestRun | undefined;
/** One run at a time per worker: the template host function of every instance calls into it. */
const dispatch: HostDispatch = { current: undefined };
const templateSetup = preludeSetup(config.prelude, dispatch);
const snapshotOf = new WeakMap<WasmInstance, InstanceSnapshot>();
/** "pending" until the start-up self-test answered. */
let snapshotMode: "pending" | "on" | "off" = config.snapshots ? "pending" : "off";
/** Snapshot instances the self-test made, ready to serve new sessions. */
const readySnapshots: WasmInstance[] = [];
const instanceIds = new WeakMap<WasmInstance, string>();
let instanceCount = 0;
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
 * it beyond `HEAP_GARBAGE_BYTES` is held too. Not counted before then, or start-up would count as held.
 */
let baseHeap: number | undefined;

/**
 * How far this thread's old generation may grow past its base before the growth counts as held.
 * V8 collects the old generation lazily, once it has grown to a multiple of what survives: a
 * worker serving trivial runs settles 7-9 MiB above its base with garbage a collection would
 * free (every few thousand runs), and counting that replaced healthy workers every ~1,300 runs.
 */
const HEAP_GARBAGE_BYTES = 16 * 1024 * 1024;

/**
 * This thread's V8 heap outside its young generation, read before every run's answer (so from V8
 * directly: process.memoryUsage() also asks the OS for the RSS, which cost 40 µs of every warm
 * run). The young generation is left out: a run's short-lived garbage grows it, and it cannot
 * hold more than the cap the host gives the thread (`maxYoungGenerationSizeMb`), a fixed cost per
 * worker like the thread itself; counted, it replaced a worker serving a tool-call loop every
 * few runs.
 */
function heapTotal(): number {
  let total = 0;
  for (const space of getHeapSpaceStatistics()) if (space.space_name !== "new_space") total += space.space_size;
  return total;
}

function heldBytes(): number {
  let held = droppedBytes + (baseHeap === undefined ? 0 : Math.max(0, heapTotal() - baseHeap - HEAP_GARBAGE_BYTES));
  for (const bytes of grownBy.values()) held += bytes;
  return held;
}

const bridge = new WorkerBridge(config.bridge);
/**
 * How long a run waiting for its one tool call spins on the ring before it sleeps in
 * Atomics.wait: a fast tool answers sooner than a sleeping thread is scheduled again, which on a
 * loaded machine takes far longer than the call. It covers the host's answer with room to spare
 * (the host polls as long after it, so a sequential loop keeps both threads awake); with 0.2 ms
 * a busy host missed the window on most calls, and every call then paid a wake-up on both sides.
 * The bridge spins shorter while answers are slow. Never with more calls in flight (the host is
 * busy with them and needs the core), and only while fewer workers than `config.maxSpinners`
 * spin (a shared count), so spinning threads never take every core.
 */
const WAIT_SPIN_MS = 1;
const spinners = new Int32Array(config.spinners);
/** The current run's messages not sent yet: they go as one batch (see HostLink). */
const outbox: WorkerToHost[] = [];
let outboxChars = 0;

/** A message of the current run, queued for the next send (at once when the batch is large). */
function postRun(message: WorkerToHost): void {
  outbox.push(message);
  outboxChars += runMessageChars(message);
  if (outboxChars >= SEND_NOW_CHARS) sendOutbox();
}

function sendOutbox(): void {
  if (outbox.length === 0) return;
  const batch = outbox.splice(0);
  // Large strings are copied by the port; small batches are one JSON text frame in the ring.
  bridge.send(outboxChars >= SEND_NOW_CHARS ? { posted: batch } : formatBatch(batch));
  outboxChars = 0;
}

function post(message: WorkerToHost): void {
  port.postMessage(message);
}

/** The shared count of spinning workers, as a gate for every spin: for a tool's answer and after a nudge. */
const spinGate: SpinGate = countingGate(spinners, config.maxSpinners);

const link: HostLink = {
  send: sendOutbox,
  poll: deliverSettles,
  wait(untilMs, callsInFlight) {
    if (!current) return;
    const spin = callsInFlight === 1 && spinGate.acquire() ? WAIT_SPIN_MS : 0;
    try {
      bridge.wait(current.abortSeq, untilMs, spin);
    } finally {
      if (spin > 0) spinGate.release();
    }
  },
};

function instanceKey(session: string, maxPages: number): string {
  return `${maxPages}:${session}`;
}

/** A new instance, with its snapshot when snapshots are on. */
async function newInstance(maxPages: number): Promise<WasmInstance> {
  const instance = await newWasmInstance(maxPages);
  instanceIds.set(instance, `${threadId}.${++instanceCount}`);
  if (snapshotMode !== "on" || !layout) return instance;
  try {
    snapshotOf.set(instance, InstanceSnapshot.create(instance, layout, templateSetup));
    return instance;
  } catch (error) {
    // Passed the self-test, failed now: stop taking snapshots rather than trust them.
    snapshotsOff(`a template could not be taken: ${(error as Error).message}`);
    instance.dead = true;
    return newInstance(maxPages);
  }
}

function snapshotsOff(reason: string): void {
  snapshotMode = "off";
  readySnapshots.length = 0;
  post({ type: "fallback", reason });
}

let upgrading = false;

/**
 * A session whose instance predates snapshots (it started before the self-test passed, or got
 * the spare made before then) moves to a snapshot instance at its next run when one is ready:
 * make one in the background while such a session is kept, or it would build its runtime on
 * every run for as long as it stays warm.
 */
function prepareUpgrade(): void {
  if (upgrading || snapshotMode !== "on" || readySnapshots.length > 0) return;
  const maxPages = pagesFor(config.defaultMemoryBytes);
  if (![...instances.values()].some((instance) => !instance.dead && instance.maxPages === maxPages && !snapshotOf.has(instance))) return;
  upgrading = true;
  newInstance(maxPages).then(
    (instance) => {
      upgrading = false;
      if (snapshotOf.has(instance)) readySnapshots.push(instance);
    },
    () => (upgrading = false),
  );
}

function prepareSpare(maxPages: number): void {
  const next = newInstance(maxPages);
  spare = next;
  spareMade = false;
  // A failed spare is retried lazily by the next run.
  next.then(
    () => (spareMade = true),
    () => {
      spareMade = true;
      spare = undefined;
    },
  );
}

/**
 * A snapshot instance's state made ready for its session's next run right after a run ended, off
 * the critical path: the template restored (memory byte-identical to a never-used instance, a
 * fresh Math.random seed), its handles built and the ended run's configuration installed with
 * its limits. The next run of the session takes it when its request asks for the same (the usual
 * case: a session keeps its tools); otherwise it is restored again first. Never for a run with
 * replay (its install reads the run's own readings), never for another session: it belongs to
 * the session's own instance.
 */
interface PreparedVm {
  vm: GuestVm;
  memoryBytes: number;
  stackBytes: number;
}
const preparedOf = new WeakMap<WasmInstance, PreparedVm>();

/** Restore `instance` now and install `request`'s configuration, for the session's next run. */
function prepare(instance: WasmInstance, snapshot: InstanceSnapshot, request: RunMessage, configText: string): void {
  if (request.determinism !== undefined) return;
  let vm: GuestVm | undefined;
  try {
    vm = restoredVm(snapshot);
    vm.runtime.setMemoryLimit(request.limits.memoryBytes);
    vm.runtime.setMaxStackSize(request.limits.stackBytes);
    installConfig(vm, configText);
    preparedOf.set(instance, { vm, memoryBytes: request.limits.memoryBytes, stackBytes: request.limits.stackBytes });
  } catch {
    // Not worth a run: put the template back (a failed restore marks the instance dead).
    if (vm) vm.end();
    else instance.dead = true;
  }
}

/**
 * The state prepared for `request` (whose runConfig text is `configText`) on its instance, if it
 * fits; one that does not is put back to the template. GuestRun installs a configuration only in
 * a state that has none, so a state with another run's must never get past here.
 */
function takePrepared(instance: WasmInstance, request: RunMessage, configText: string): GuestVm | undefined {
  const prepared = preparedOf.get(instance);
  if (!prepared) return undefined;
  preparedOf.delete(instance);
  const { vm } = prepared;
  if (request.determinism === undefined && vm.installed === configText && prepared.memoryBytes === request.limits.memoryBytes && prepared.stackBytes === request.limits.stackBytes) {
    return vm;
  }
  vm.end();
  return undefined;
}

/** Where a run's instance came from: its session's own, one made ahead of time (a snapshot or the spare), or built while it waited. */
type InstanceSource = "kept" | "ready" | "built";

async function instanceFor(request: RunRequest): Promise<{ instance: WasmInstance; source: InstanceSource }> {
  const maxPages = pagesFor(request.limits.memoryBytes);
  const key = instanceKey(request.session, maxPages);
  const existing = instances.get(key);
  // A session that started before snapshots did moves to a snapshot instance once one is ready.
  const upgrade = existing && !snapshotOf.has(existing) ? readySnapshots.findIndex((ready) => ready.maxPages === maxPages) : -1;
  if (existing && !existing.dead && upgrade < 0) {
    // Re-insert to keep the map in least-recently-used order.
    instances.delete(key);
    instances.set(key, existing);
    return { instance: existing, source: "kept" };
  }
  instances.delete(key);
  // Dead or moved past: either way it is done with (drop counts its memory once, however often called).
  if (existing) drop(existing);
  let instance: WasmInstance | undefined;
  let source: InstanceSource = "ready";
  const ready = readySnapshots.findIndex((candidate) => candidate.maxPages === maxPages);
  if (ready >= 0) instance = readySnapshots.splice(ready, 1)[0];
  else if (spare) {
    const candidate = await spare.catch(() => undefined);
    spare = undefined;
    if (candidate && candidate.maxPages === maxPages) instance = candidate;
  }
  if (!instance) {
    source = "built";
    instance = await newInstance(maxPages);
  }
  instances.set(key, instance);
  while (instances.size > config.maxInstances) {
    const oldest = instances.keys().next().value as string;
    const evicted = instances.get(oldest)!;
    instances.delete(oldest);
    if (evicted !== instance) drop(evicted);
  }
  return { instance, source };
}

async function run(request: RunMessage): Promise<void> {
  let instance: WasmInstance;
  let origin: InstanceSource;
  try {
    ({ instance, source: origin } = await instanceFor(request));
  } catch (error) {
    postRun({
      type: "done",
      runId: request.runId,
      ok: false,
      error: { kind: "sandbox", message: `could not start a sandbox instance: ${(error as Error).message}` },
      warnings: [],
      pendingCalls: [],
      instanceDiscarded: true,
    });
    sendOutbox();
    return;
  }
  const snapshot = snapshotOf.get(instance);
  // Worked out once per run: the prepared state is checked against it and the next one made from it.
  const configText = runConfig(request);
  const prepared = snapshot ? takePrepared(instance, request, configText) : undefined;
  const source: VmSource = snapshot
    ? { dispatch, open: () => prepared ?? restoredVm(snapshot) }
    : { dispatch, open: () => prebuiltVm(instance) ?? freshVm(instance, config.prelude, dispatch, layout) };
  deliverSettles(); // results of an earlier run that arrived after it ended: dropped
  const guest = new GuestRun(instance, request, config.prelude, abortFlag, postRun, link, source);
  current = guest;
  const done = await guest.execute();
  current = undefined;
  done.vm = { instance: instanceIds.get(instance) ?? "?", restored: snapshot !== undefined, prepared: prepared !== undefined, source: origin };
  // A restore puts the break back but not the pages the run touched: they stay resident, so a
  // snapshot instance holds its high-water mark.
  grownBy.set(instance, Math.max(snapshot ? (grownBy.get(instance) ?? 0) : 0, heapGrowth(instance)));
  const kept = [...instances.values()].includes(instance);
  if (instance.dead || !kept) drop(instance);
  // Past the budget the host replaces this worker: terminating the thread is what frees its
  // memory. A stack overflow went deep into this thread's native stack, whose pages stay
  // resident for the thread's life: that worker is replaced too.
  if (heldBytes() > config.maxHeldBytes || done.error?.kind === "stack") done.retire = true;
  postRun(done);
  sendOutbox();
  // Back to back, the host sends the session's next run while this thread is still restoring
  // and preparing below (~100-250 µs): it writes it to the ring without a port message, and the
  // run is taken at the end of this function instead of after one or two event-loop turns.
  bridge.willLook();
  try {
    guest.teardown();
    instance.runs++;
    if (!instance.dead && snapshot && kept) prepare(instance, snapshot, request, configText);
    if (instance.dead) {
      // Its teardown or its restore failed: out of the sessions, and its memory counted as
      // dropped, not held (a grownBy entry left behind kept it reachable, and counted, for as
      // long as the worker lived).
      for (const [key, value] of instances) if (value === instance) instances.delete(key);
      drop(instance);
    }
    // Replenish the spare after answering, off the critical path of the run that just ended.
    setImmediate(() => {
      lastTurn = performance.now();
      startBackground();
      if (!spare) prepareSpare(pagesFor(config.defaultMemoryBytes));
      prepareUpgrade();
    });
  } finally {
    // Taken now, it starts as soon as this run's promise settles (startRun), ahead of the
    // after-work queued above: the background start-up and the spare, nothing a run needs. But
    // runs taken so follow one another without an event-loop turn: past INLINE_TAKE_MS without
    // one, the run waits for the next turn. (In a finally: a flag left set would have the host
    // write runs that no one reads.)
    if (bridge.look()) {
      if (performance.now() - lastTurn < INLINE_TAKE_MS) takeFrames();
      else setImmediate(takeFrames);
    }
  }
}

/**
 * How long back-to-back runs may take one another from the ring without letting the event loop
 * turn (its timers, port messages and after-work: a run's promise settles in a microtask): less
 * than what one ordinary run blocks it for.
 */
const INLINE_TAKE_MS = 2;
/** When this thread's event loop last ran the after-work of a run. */
let lastTurn = 0;

/** Hand the tool results that arrived to the current run (others are late: their run ended); true if it got any. */
function deliverSettles(): boolean {
  let delivered = false;
  for (let message = bridge.receive(); message !== undefined; message = bridge.receive()) {
    const next = parseRun(message);
    if (next) {
      // The host sends a run only to a worker that answered its last one; never dropped all the same.
      acceptRun(next);
      continue;
    }
    const settle = parseSettle(message);
    if (current && settle.abortSeq === current.abortSeq) {
      current.settle(settle);
      delivered = true;
    }
  }
  return delivered;
}

/** A run is being set up, running or answering (from its request to the end of run()). */
let running = false;
/** Runs that arrived while one was running (the host never sends one then; kept in order all the same). */
const waitingRuns: RunMessage[] = [];

function acceptRun(request: RunMessage): void {
  if (running) waitingRuns.push(request);
  else startRun(request);
}

function startRun(request: RunMessage): void {
  running = true;
  void run(request).finally(() => {
    running = false;
    const next = waitingRuns.shift();
    if (next) startRun(next);
    // After run()'s own after-work (queued before this): background start-up, the spare.
    else setImmediate(watchIdle);
  });
}

/** Runs waiting in the ring (a run sent while this worker watched it, or announced by a "ring" message); late results are dropped. */
function takeFrames(): void {
  for (let message = bridge.receive(); message !== undefined; message = bridge.receive()) {
    const request = parseRun(message);
    if (request) acceptRun(request);
  }
}

/**
 * How long a worker watches the ring for its next run after one ends, and the longest it blocks
 * its event loop at a time meanwhile. Runs come back to back or after short pauses: a futex wake
 * of a thread in Atomics.wait reaches it far sooner than a message reaches a sleeping event loop
 * (a warm run's request took 165-210 µs that way on the shared machine). Only once start-up work
 * and the spare are done (watching would hold up their steps), and never during a run.
 */
const IDLE_WATCH_MS = 100;
const WATCH_SLICE_MS = 5;
let watching = false;
let spareMade = false;
let backgroundDone = false;

function watchIdle(): void {
  if (watching || running || !backgroundDone || !spareMade) return;
  watching = true;
  const until = performance.now() + IDLE_WATCH_MS;
  const step = (): void => {
    const remaining = until - performance.now();
    if (running || remaining <= 0) {
      watching = false;
      return;
    }
    if (bridge.idleWait(Math.min(WATCH_SLICE_MS, remaining), spinGate)) {
      watching = false;
      takeFrames();
      return;
    }
    // Between slices the event loop turns: timers, port messages, anything else queued.
    setImmediate(step);
  };
  step();
}

port.on("message", (message: HostToWorker) => {
  switch (message.type) {
    case "run":
      acceptRun(message);
      break;
    case "ring":
      // A run was written to the ring while this worker was not watching it (during a run, the
      // run's own deliveries take it).
      if (!running) takeFrames();
      break;
    case "abort":
      if (current?.runId === message.runId) current.abort();
      break;
  }
});

/** Start-up work that is not needed for a run: after the first run, or once the worker sat idle a while. */
let backgroundStarted = false;
function startBackground(): void {
  if (backgroundStarted) return;
  backgroundStarted = true;
  void startUp().finally(() => {
    baseHeap = heapTotal();
    backgroundDone = true;
  });
}

const ready = (): void => {
  post({ type: "ready" });
  // Off the first run's path: the layout probe and the self-tests cost instances of their own,
  // and a cold start's first run is usually already on its way. Not while that run is still going
  // (its end starts them): on a loaded machine they took turns with it and delayed its answer.
  setTimeout(() => {
    if (!running) startBackground();
  }, BACKGROUND_DELAY_MS).unref();
};

/** Let a run that arrived meanwhile go first: each step of the start-up work blocks this thread for milliseconds. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Whether this build writes and reads QuickJS's binary format as the host's encoder does, in a throwaway instance. */
async function binarySelfTest(): Promise<{ ok: boolean; reason?: string }> {
  try {
    const probe = await newWasmInstance(pagesFor(0));
    const runtime = probe.module.newRuntime();
    const context = runtime.newContext();
    const reason = bjsonSelfTest(context);
    context.dispose();
    runtime.dispose();
    return reason === undefined ? { ok: true } : { ok: false, reason };
  } catch (error) {
    return { ok: false, reason: `the binary-JSON self-test failed: ${(error as Error).message}` };
  }
}

/** Derive the layout (unless an earlier worker did), then take the first two snapshots through the self-test. */
async function startUp(): Promise<void> {
  if (!layout) {
    try {
      layout = await memoryLayout();
      post({ type: "layout", layout });
    } catch (error) {
      if (snapshotMode === "pending") snapshotsOff((error as Error).message);
      return;
    }
  }
  await turn();
  post({ type: "binary", ...(await binarySelfTest()) });
  await turn();
  if (snapshotMode !== "pending") return;
  const started = await startSnapshots(pagesFor(config.defaultMemoryBytes), templateSetup, layout);
  if (!started.ok) return snapshotsOff(started.reason);
  snapshotMode = "on";
  for (const snapshot of started.snapshots) {
    instanceIds.set(snapshot.instance, `${threadId}.${++instanceCount}`);
    snapshotOf.set(snapshot.instance, snapshot);
    readySnapshots.push(snapshot.instance);
  }
}
/**
 * The first run's VM (runtime, context, static prelude), built on the first spare right after
 * "ready", while the host still sets up and sends the run: in a cold start that build was most
 * of the first run (~40 ms, QuickJS's code still cold). It is a VM no run has touched, what
 * freshVm would build when the run came; a run that arrives meanwhile waits for the rest of it.
 */
let prebuilt: { instance: WasmInstance; vm: GuestVm; layout: MemoryLayout | undefined; spare: Promise<WasmInstance> | undefined } | undefined;

function prebuildVm(instance: WasmInstance, from: Promise<WasmInstance>): void {
  // Only while it is still the spare and the ordinary path is the one its run would take.
  if (spare !== from || instance.dead || snapshotOf.has(instance)) return;
  try {
    prebuilt = { instance, vm: freshVm(instance, config.prelude, dispatch, layout), layout, spare: from };
  } catch {
    // freshVm marked it dead: the first run makes its own instance.
    spare = undefined;
  }
}

/** The VM built ahead for `instance`, if it is still as freshVm would build it now. */
function prebuiltVm(instance: WasmInstance): GuestVm | undefined {
  const built = prebuilt;
  if (!built) return undefined;
  if (built.instance !== instance) {
    // Its spare went elsewhere (a run with another memory cap dropped it): free it with it.
    if (spare !== built.spare) prebuilt = undefined;
    return undefined;
  }
  prebuilt = undefined;
  if (built.layout === layout) return built.vm;
  // Built before this build's layout was derived: its Math.random could not be seeded.
  built.vm.end();
  return undefined;
}

void moduleReady.then(() => {
  prepareSpare(pagesFor(config.defaultMemoryBytes));
  const first = spare!;
  first.then(ready, ready);
  // After "ready" is posted (this reaction runs after that one).
  first.then(
    (instance) => setImmediate(() => prebuildVm(instance, first)),
    () => undefined,
  );
});
