// The host side of the sandbox: a pool of worker threads, each running one program at a time.
//
// The worker enforces the deadline itself (interrupt handler + timers). The host keeps a second,
// harder deadline: a worker that has not answered shortly after the deadline is stuck in a
// builtin that never polls the interrupt handler, and is terminated. A terminated or crashed
// worker takes its WASM instances with it; a replacement is started at once.
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { compiledEntry, preludeSource } from "../package-files.js";
import { compiledModule, moduleIfCompiled } from "./wasm-module.js";
import { HostBridge, type BridgeMessage } from "./ring.js";
import { formatRun, formatSettle, parseBatch } from "./bridge-format.js";
import type { ConsoleLine, DoneMessage, ErrorKind, HostToWorker, RunMessage, RunRequest, WorkerToHost } from "./protocol.js";
import type { MemoryLayout } from "./snapshot.js";

/** Workers that may die before becoming ready, in a row, before queued runs are failed instead of retried. */
const START_ATTEMPTS = 3;
/** Sessions a worker is remembered to have warm (it keeps at most a few instances itself). */
const AFFINITY_SESSIONS = 8;
/** How long past the deadline (or an abort) a worker may take to answer before it is terminated. */
const HARD_STOP_GRACE_MS = 400;
/** Workers kept warm by default: two where there are two cores, so a run starts while another runs. */
const DEFAULT_MIN_WORKERS = Math.min(2, availableParallelism());
/** Warm instances a worker keeps by default (a restored snapshot instance costs its template, ~270 KiB, plus the pages its runs touched). */
const DEFAULT_IDLE_SESSIONS = 8;
/**
 * How long a run waits for its session's own worker when that one is busy and another is free:
 * moving costs the session a new instance (6-12 ms) and leaves its warm one behind.
 */
const AFFINITY_WAIT_MS = 4;
/**
 * A run that finds every worker busy waits this long before the pool grows for it, and grows only
 * when every worker is held by a run at least this old. A worker costs tens of milliseconds of CPU to
 * start (thread, imports, self-tests, instances); a stream of short runs is served faster by the
 * workers there are, each free again within a millisecond or two. A long run (a slow tool, a
 * sleep, a CPU loop) is what holds a worker, and then another one is worth starting.
 */
const SPAWN_WAIT_MS = 50;
/** How soon the pool looks again at growing when a busy worker's messages were still unread. */
const UNREAD_RECHECK_MS = 5;
/** The warm workers after the first start this much later (the first run needs the cores). */
const WARM_WORKERS_DELAY_MS = 200;
/**
 * The young generation of a worker's V8 heap, in MiB. A run's short-lived garbage grows it up to
 * this and it stays grown; the worker's memory budget leaves it out (it is a fixed cost, like the
 * thread), so the cap is what bounds it. V8's default let it double to 32 MiB, and a text flood's
 * worker then kept 32 MiB more. Small is cheap: what the worker allocates per run mostly dies young.
 */
const WORKER_YOUNG_GENERATION_MB = 4;
/** Memory a worker may keep for its warm sessions before it is replaced. */
const DEFAULT_IDLE_BYTES = 8 * 1024 * 1024;

export interface EngineOptions {
  /** Upper bound on worker threads (concurrent runs); further runs wait in FIFO order. */
  maxWorkers?: number;
  /** Workers kept warm while idle. */
  minWorkers?: number;
  /** Idle workers beyond `minWorkers` exit after this long. */
  idleMs?: number;
  /** Memory limit the warm spare instances are sized for. */
  defaultMemoryBytes: number;
  /** V8 heap of each worker thread, in MiB (its own JavaScript, not the guest's memory; default 512). */
  workerHeapMb?: number;
  /** Warm session instances each worker keeps between runs (default 8); the least recently used goes first. */
  idleSessions?: number;
  /**
   * Memory a worker may keep resident for its warm sessions after its runs (default 8 MiB). A
   * program that grew its instance's memory past it gets its worker replaced once it ends, so the
   * host returns to its baseline instead of keeping the high-water mark of every session.
   */
  idleBytes?: number;
  /**
   * Restore each instance from a snapshot of its fresh template after every run (default: on,
   * unless the environment sets CODEMODE_SNAPSHOTS=off). Off, or where the start-up self-test
   * fails, every run builds its runtime, context and prelude (the ordinary path).
   */
  snapshots?: boolean;
  /**
   * Send plain-JSON tool results in QuickJS's binary format (default: on, unless the environment
   * sets CODEMODE_BINARY_RESULTS=off); either way the program gets the same values.
   */
  binaryResults?: boolean;
  /** For tests: a memory layout the workers use instead of deriving one (a wrong one must fail the self-test). */
  layout?: MemoryLayout;
}

/**
 * What the pool did, counted since the engine started (counts, not times, so tests can pin them
 * whatever the machine's load): where each run's instance came from, and how runs met workers.
 */
export interface EngineStats {
  /** Runs a worker answered. */
  runs: number;
  /** Runs on their session's own warm instance. */
  kept: number;
  /** Runs that got a new instance made ahead of time (a snapshot or the spare). */
  ready: number;
  /** Runs that waited while a new instance was instantiated for them (6-12 ms each). */
  built: number;
  /** Runs given to another worker than the one that had their session warm. */
  migrations: number;
  /** Runs held back for their session's own busy worker while another worker was free. */
  affinityWaits: number;
  /** Workers started (the warm ones, replacements, and the pool growing for long runs). */
  workersStarted: number;
}

/** The reason snapshots are unsupported is worth saying once per process, not per worker. */
let fallbackWarned = false;
let binaryWarned = false;

export interface RunCallbacks {
  /** The program called a tool; answer with `handle.settle(callId, …)`. */
  onCall(callId: number, path: string, argsJson: string): void;
  onFlush(text: string[], console: ConsoleLine[]): void;
  onStore(key: string, json: string | undefined): void;
}

export interface RunHandle {
  /** A tool result: JSON text, or for a value `encodeToolResult(value).bytes` when `binaryResults`. */
  settle(callId: number, ok: boolean, json: string | Uint8Array): void;
  /** The worker running the program decodes results in QuickJS's binary format (false until it is known). */
  readonly binaryResults: boolean;
  abort(): void;
  readonly done: Promise<DoneMessage>;
  /** When the run times out (epoch ms), once a worker took it; undefined while it waits for one. */
  readonly deadline: number | undefined;
}

interface ActiveRun {
  /** The run as its worker got it: the caller's request with this run's abort number and deadline. */
  request: RunMessage;
  callbacks: RunCallbacks;
  resolve(done: DoneMessage): void;
  hardStop?: ReturnType<typeof setTimeout>;
  stopKind?: ErrorKind;
  finished: boolean;
  /** When the worker was given it (performance.now()). */
  startedAt: number;
}

interface Slot {
  worker: Worker;
  /** Tool results go to the worker here, and the run's messages come back: no thread wake-up per message. */
  bridge: HostBridge;
  /** Tool results of this turn of the event loop, sent together (the worker settles them in one delivery). */
  settles: BridgeMessage[];
  /** The worker passed the binary-JSON self-test. */
  binaryResults: boolean;
  abortView: Int32Array;
  ready: Promise<void>;
  isReady: boolean;
  active?: ActiveRun;
  sessions: Set<string>;
  idleTimer?: ReturnType<typeof setTimeout>;
  exited: boolean;
}

interface Waiting {
  request: RunRequest;
  callbacks: RunCallbacks;
  resolve(done: DoneMessage): void;
  /** The worker the run was given, once it left the queue. */
  slot?: Slot;
  /** What was sent to that worker (the request, stamped); set with `slot`. */
  sent?: RunMessage;
  /** When it was queued (performance.now()): how long it may still wait for its own worker. */
  queuedAt: number;
  /** It was held back for its own busy worker at least once (counted once). */
  heldBack?: boolean;
}

export class SandboxEngine {
  private readonly slots = new Set<Slot>();
  private readonly queue: Waiting[] = [];
  private readonly maxWorkers: number;
  private readonly minWorkers: number;
  private readonly idleMs: number;
  private readonly prelude = preludeSource();
  private readonly entry = compiledEntry("engine/worker");
  private closed = false;
  /** Workers that exited before they were ready, in a row. */
  private startFailures = 0;
  /** When a worker was first ready (performance.now()): a run's wait for a worker counts from then. */
  private firstReadyAt: number | undefined;
  private abortSeq = 0;
  private affinityTimer: ReturnType<typeof setTimeout> | undefined;
  /** Workers spinning for a tool result right now (shared with every worker), at most one fewer than the cores. */
  private readonly spinners = new SharedArrayBuffer(4);
  private replaced = 0;
  /** This build's memory layout: the first worker derives it, later ones are told. */
  private layout: MemoryLayout | undefined;
  private readonly snapshots: boolean;
  private readonly binaryResults: boolean;
  private readonly counts: EngineStats = { runs: 0, kept: 0, ready: 0, built: 0, migrations: 0, affinityWaits: 0, workersStarted: 0 };

  constructor(private readonly options: EngineOptions) {
    this.maxWorkers = options.maxWorkers ?? 16;
    this.minWorkers = Math.min(options.minWorkers ?? DEFAULT_MIN_WORKERS, this.maxWorkers);
    this.idleMs = options.idleMs ?? 30_000;
    this.snapshots = options.snapshots ?? process.env.CODEMODE_SNAPSHOTS !== "off";
    this.layout = options.layout;
    this.binaryResults = options.binaryResults ?? process.env.CODEMODE_BINARY_RESULTS !== "off";
  }

  /**
   * Start the warm workers; resolves when the first can take a run without paying start-up. The
   * others start once it is ready: on two cores, starting them together delays the first.
   */
  async start(): Promise<void> {
    if (this.slots.size === 0 && this.minWorkers > 0) await this.spawn().ready;
    // The rest a moment later: a cold start's first run is usually on its way.
    setTimeout(() => this.refill(), WARM_WORKERS_DELAY_MS).unref();
  }

  get workerCount(): number {
    return this.slots.size;
  }

  /** What the pool did so far (a copy). */
  get stats(): EngineStats {
    return { ...this.counts };
  }

  /** Workers replaced because they held more memory than warm sessions may keep. */
  get workersReplaced(): number {
    return this.replaced;
  }

  /**
   * Runs a program. `signal`: a run whose signal is already aborted never reaches a worker. An
   * abort() right after run() cannot promise that, since dispatch hands the run to an idle
   * worker at once, and a short program may then finish before the abort is read.
   */
  run(request: RunRequest, callbacks: RunCallbacks, signal?: AbortSignal): RunHandle {
    if (this.closed) throw new Error("the sandbox engine is closed");
    let resolve!: (done: DoneMessage) => void;
    const done = new Promise<DoneMessage>((r) => (resolve = r));
    this.nudge(request.session);
    const waiting: Waiting = { request, callbacks, resolve, queuedAt: performance.now() };
    if (signal?.aborted) resolve(stoppedBeforeStart(request.runId, "aborted", "the run was aborted before it started"));
    else {
      this.queue.push(waiting);
      this.dispatch();
    }
    return {
      done,
      get binaryResults() {
        const slot = waiting.slot;
        return slot?.binaryResults === true && !slot.exited;
      },
      get deadline() {
        return waiting.sent?.deadline;
      },
      settle: (callId, ok, json) => {
        const { slot, sent } = waiting;
        if (!slot || !sent || slot.active?.request !== sent || slot.active.finished) return;
        if (slot.exited) return;
        if (slot.settles.length === 0) queueMicrotask(() => this.sendSettles(slot));
        slot.settles.push(formatSettle(sent.abortSeq, callId, ok, json));
      },
      abort: () => {
        const slot = waiting.slot;
        if (!slot) {
          const index = this.queue.indexOf(waiting);
          if (index >= 0) this.queue.splice(index, 1);
          resolve(stoppedBeforeStart(request.runId, "aborted", "the run was aborted before it started"));
          return;
        }
        const active = slot.active;
        if (!active || active.request !== waiting.sent || active.finished) return;
        const { abortSeq } = active.request;
        active.stopKind ??= "aborted";
        // The word names the run to stop, so no reset is needed and a late abort cannot hit the next run.
        Atomics.store(slot.abortView, 0, abortSeq);
        // Wakes a worker asleep in Atomics.wait; the message reaches one between runs' steps.
        if (!slot.exited) slot.bridge.abort(abortSeq);
        this.send(slot, { type: "abort", runId: request.runId });
        this.armHardStop(slot, active, HARD_STOP_GRACE_MS);
      },
    };
  }

  /**
   * A run of `session` is about to be made: the worker it would go to now is told, so that after
   * an idle pause its wake-up overlaps the caller's own set-up of the run (see HostBridge.nudge).
   * Nothing if no worker is free.
   */
  nudge(session: string): void {
    if (this.closed || this.queue.length > 0) return;
    const slot = this.pickSlot(session, 0, performance.now());
    if (slot && slot !== "own-busy" && !slot.exited) slot.bridge.nudge();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.affinityTimer);
    for (const waiting of this.queue.splice(0)) {
      waiting.resolve(stoppedBeforeStart(waiting.request.runId, "aborted", "the runtime was closed before the run started"));
    }
    const exits: Promise<number>[] = [];
    for (const slot of this.slots) {
      if (slot.active && !slot.active.finished) this.finish(slot, slot.active, hardStopped(slot.active, "aborted", "the runtime was closed while the program ran"));
      clearTimeout(slot.idleTimer);
      slot.exited = true;
      slot.bridge.close();
      exits.push(slot.worker.terminate());
    }
    this.slots.clear();
    await Promise.allSettled(exits);
  }

  private spawn(): Slot {
    this.counts.workersStarted++;
    const abortBuffer = new SharedArrayBuffer(4);
    const bridge = new HostBridge();
    const wasmModule = moduleIfCompiled();
    const worker = new Worker(this.entry, {
      workerData: {
        prelude: this.prelude,
        abortBuffer,
        maxInstances: this.options.idleSessions ?? DEFAULT_IDLE_SESSIONS,
        maxHeldBytes: this.options.idleBytes ?? DEFAULT_IDLE_BYTES,
        defaultMemoryBytes: this.options.defaultMemoryBytes,
        bridge: bridge.init,
        // The first worker boots while the module compiles, and gets it by message (below).
        ...(wasmModule ? { wasmModule } : {}),
        snapshots: this.snapshots,
        spinners: this.spinners,
        maxSpinners: Math.max(1, availableParallelism() - 1),
        ...(this.layout ? { layout: this.layout } : {}),
      },
      transferList: bridge.transfer,
      // A large native stack lets QuickJS's own stack limit trip first, as a catchable RangeError.
      resourceLimits: { stackSizeMb: 32, maxOldGenerationSizeMb: this.options.workerHeapMb ?? 512, maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      stdout: false,
      stderr: false,
    });
    worker.unref();
    let markReady!: () => void;
    const slot: Slot = {
      worker,
      bridge,
      settles: [],
      binaryResults: false,
      abortView: new Int32Array(abortBuffer),
      ready: new Promise<void>((r) => (markReady = r)),
      isReady: false,
      sessions: new Set(),
      exited: false,
    };
    worker.on("message", (message: WorkerToHost) => {
      if (message.type === "layout") {
        this.layout ??= message.layout;
        return;
      }
      if (message.type === "binary") {
        slot.binaryResults = message.ok && this.binaryResults;
        if (!message.ok && !binaryWarned) {
          binaryWarned = true;
          process.emitWarning(`codemode-runtime: tool results cross as JSON only: ${message.reason}`, { code: "CODEMODE_BINARY_RESULTS_UNSUPPORTED" });
        }
        return;
      }
      if (message.type === "fallback") {
        if (!fallbackWarned) {
          fallbackWarned = true;
          process.emitWarning(`codemode-runtime: snapshot-fresh runs are off, every run builds its runtime instead (slower, as safe): ${message.reason}`, { code: "CODEMODE_SNAPSHOTS_UNSUPPORTED" });
        }
        return;
      }
      if (message.type === "ready") {
        slot.isReady = true;
        this.firstReadyAt ??= performance.now();
        this.startFailures = 0;
        markReady();
        this.dispatch();
        return;
      }
      this.onMessage(slot, message);
    });
    bridge.onMessage((frame) => {
      for (const message of parseBatch(frame)) this.onMessage(slot, message);
    });
    worker.on("error", (error) => this.onExit(slot, error));
    worker.on("exit", () => {
      bridge.close();
      markReady();
      this.onExit(slot, undefined);
    });
    this.slots.add(slot);
    if (!wasmModule) {
      try {
        worker.postMessage({ type: "module", module: compiledModule() });
      } catch (error) {
        // The worker would wait for it forever: count it as a worker that could not start.
        this.onExit(slot, new Error(`the QuickJS WebAssembly module could not be compiled: ${(error as Error).message}`));
        void worker.terminate();
      }
    }
    return slot;
  }

  private onMessage(slot: Slot, message: WorkerToHost): void {
    const active = slot.active;
    if (!active || active.finished || message.type === "ready" || message.type === "layout" || message.type === "fallback" || message.type === "binary" || message.runId !== active.request.runId)
      return;
    switch (message.type) {
      case "call":
        active.callbacks.onCall(message.callId, message.path, message.args);
        break;
      case "flush":
        active.callbacks.onFlush(message.text, message.console);
        break;
      case "store":
        active.callbacks.onStore(message.key, message.json);
        break;
      case "done":
        // A stop the host asked for wins over whatever the guest was doing when it noticed.
        if (active.stopKind === "aborted" && message.error && message.error.kind !== "aborted") {
          message.error = { kind: "aborted", message: "the run was aborted by the host" };
          message.ok = false;
        }
        this.finish(slot, active, message);
        break;
    }
  }

  private onExit(slot: Slot, error: Error | undefined): void {
    if (!this.slots.has(slot)) return;
    this.slots.delete(slot);
    slot.exited = true;
    slot.bridge.close();
    clearTimeout(slot.idleTimer);
    const active = slot.active;
    if (!slot.isReady) this.startFailures++;
    if (active && !active.finished) {
      const outOfMemory = (error as { code?: string } | undefined)?.code === "ERR_WORKER_OUT_OF_MEMORY";
      this.finish(
        slot,
        active,
        hardStopped(active, outOfMemory ? "memory" : "sandbox", outOfMemory ? "the sandbox worker ran out of memory" : `the sandbox worker exited unexpectedly${error ? `: ${error.message}` : ""}`),
      );
    }
    if (this.closed) return;
    if (this.startFailures >= START_ATTEMPTS) {
      // Workers die before they can take a run: waiting would be forever, so say why instead.
      const reason = `the sandbox worker could not start (${START_ATTEMPTS} attempts${error ? `; last: ${error.message}` : ""})`;
      for (const waiting of this.queue.splice(0)) waiting.resolve(stoppedBeforeStart(waiting.request.runId, "sandbox", reason));
      this.startFailures = 0;
      return;
    }
    this.refill();
  }

  private finish(slot: Slot, active: ActiveRun, done: DoneMessage): void {
    if (active.finished) return;
    active.finished = true;
    clearTimeout(active.hardStop);
    if (slot.active === active) {
      slot.active = undefined;
      // Nothing more is expected from this worker until its next run: the host sleeps, not polls.
      slot.bridge.rest();
    }
    if (done.vm) {
      this.counts.runs++;
      this.counts[done.vm.source]++;
    }
    if (done.retire && !slot.exited) {
      // The worker holds more memory than warm sessions may keep: replace it (before dispatching,
      // so no queued run is handed to it). Its sessions start on a fresh instance next time.
      this.slots.delete(slot);
      slot.exited = true;
      clearTimeout(slot.idleTimer);
      this.replaced++;
      // The replacement starts once the old thread is gone, so the two never hold memory at once.
      void slot.worker.terminate().finally(() => this.refill());
    }
    if (!slot.exited) {
      // Affinity only: the worker keeps a few instances and drops the oldest, so the set is bounded too.
      slot.sessions.delete(active.request.session);
      if (!done.instanceDiscarded) slot.sessions.add(active.request.session);
      if (slot.sessions.size > AFFINITY_SESSIONS) slot.sessions.delete(slot.sessions.values().next().value as string);
    }
    active.resolve(done);
    this.dispatch();
  }

  private armHardStop(slot: Slot, active: ActiveRun, delayMs: number): void {
    clearTimeout(active.hardStop);
    active.hardStop = setTimeout(() => {
      if (active.finished) return;
      const kind = active.stopKind ?? "timeout";
      const message =
        kind === "aborted"
          ? "the run was aborted by the host (the program was stopped inside a long builtin)"
          : `the program ran past its ${active.request.limits.timeoutMs} ms deadline inside a long builtin and was stopped`;
      // Retire the worker before finishing: finishing dispatches queued runs, never to this worker.
      this.slots.delete(slot);
      slot.exited = true;
      void slot.worker.terminate();
      this.finish(slot, active, hardStopped(active, kind, message));
      this.refill();
    }, delayMs);
    active.hardStop.unref?.();
  }

  private dispatch(): void {
    clearTimeout(this.affinityTimer);
    this.affinityTimer = undefined;
    if (this.closed) return;
    const now = performance.now();
    /** When to look again: a run held for its own worker may then move, or the pool grow, or a queued run's deadline pass. */
    let recheckAt = Infinity;
    // A run's deadline counts from the call, its wait for a busy pool included (not the pool's own
    // start-up): one still queued when it passes ends there, without starting.
    for (let index = 0; index < this.queue.length; ) {
      const queued = this.queue[index]!;
      const expires = this.waitCountsFrom(queued) + queued.request.limits.timeoutMs;
      if (expires > now) {
        recheckAt = Math.min(recheckAt, expires);
        index++;
        continue;
      }
      this.queue.splice(index, 1);
      const busy = [...this.slots].filter((slot) => slot.active && !slot.exited).length;
      queued.resolve(
        stoppedBeforeStart(
          queued.request.runId,
          "timeout",
          `the run waited ${Math.round(now - this.waitCountsFrom(queued))} ms for a free sandbox worker (${busy} busy with other runs) and its ${queued.request.limits.timeoutMs} ms deadline passed before the program started: run fewer programs at once, or give them a longer timeoutMs`,
        ),
      );
    }
    for (let index = 0; index < this.queue.length; ) {
      const next = this.queue[index]!;
      const slot = this.pickSlot(next.request.session, next.queuedAt, now);
      if (slot === "own-busy") {
        // Left in the queue for its own worker; later runs may take the free one meanwhile.
        if (!next.heldBack) this.counts.affinityWaits++;
        next.heldBack = true;
        recheckAt = Math.min(recheckAt, next.queuedAt + AFFINITY_WAIT_MS);
        index++;
        continue;
      }
      if (!slot) break;
      this.queue.splice(index, 1);
      const session = next.request.session;
      if (!slot.sessions.has(session) && [...this.slots].some((other) => other.sessions.has(session))) this.counts.migrations++;
      clearTimeout(slot.idleTimer);
      slot.idleTimer = undefined;
      // What is left of the deadline once the wait for a busy pool is taken off (the sweep above
      // ended every run with nothing left).
      const left = Math.max(1, Math.floor(next.request.limits.timeoutMs - (now - this.waitCountsFrom(next))));
      const sent: RunMessage = { ...next.request, type: "run", abortSeq: ++this.abortSeq, deadline: Date.now() + left };
      const active: ActiveRun = { request: sent, callbacks: next.callbacks, resolve: next.resolve, finished: false, startedAt: now };
      slot.active = active;
      next.slot = slot;
      next.sent = sent;
      this.sendRun(slot, sent);
      // The run's first message (often its end) is usually back within the host's poll window.
      if (!slot.exited) slot.bridge.expect();
      this.armHardStop(slot, active, left + HARD_STOP_GRACE_MS);
    }
    recheckAt = Math.min(recheckAt, this.grow(now));
    if (recheckAt !== Infinity) {
      this.affinityTimer = setTimeout(() => this.dispatch(), Math.max(0, recheckAt - performance.now()));
      this.affinityTimer.unref?.();
    }
    this.scheduleIdle();
  }

  /** Since when a queued run's wait counts against its deadline: its call, or the pool's first ready worker if later. */
  private waitCountsFrom(waiting: Waiting): number {
    return Math.max(waiting.queuedAt, this.firstReadyAt ?? Infinity);
  }

  /** A free worker for the run (its session's own first), "own-busy" while it should wait for its own, or none. */
  private pickSlot(session: string, queuedAt: number, now: number): Slot | "own-busy" | undefined {
    let free: Slot | undefined;
    let ownBusy = false;
    for (const slot of this.slots) {
      if (slot.exited) continue;
      if (slot.active) {
        if (slot.sessions.has(session)) ownBusy = true;
        continue;
      }
      if (!slot.isReady) continue;
      if (slot.sessions.has(session)) return slot;
      free ??= slot;
    }
    if (free && ownBusy && now - queuedAt < AFFINITY_WAIT_MS) return "own-busy";
    return free;
  }

  /**
   * Start workers for the runs still queued, when they need one: at once while there is no
   * worker at all, otherwise only for runs that waited SPAWN_WAIT_MS while every worker is held
   * by a run at least that old (a worker that took a run since is serving the queue). Returns when
   * to look again (Infinity: no need).
   */
  private grow(now: number): number {
    if (this.queue.length === 0 || this.closed) return Infinity;
    let starting = 0;
    let live = 0;
    /** When the most recent of the busy workers' runs started: all of them are held since then. */
    let heldSince = 0;
    for (const slot of this.slots) {
      if (slot.exited) continue;
      live++;
      if (!slot.isReady) starting++;
      // A worker whose messages wait unread may well have finished: the host was behind (a long
      // task, a pause, off its core), so that is no evidence of a held worker. Looked at again
      // shortly, once the host has had a turn to read them.
      else if (slot.active && slot.bridge.hasMessages) return now + UNREAD_RECHECK_MS;
      else if (slot.active) heldSince = Math.max(heldSince, slot.active.startedAt);
      // A free worker: the queue is waiting for its own busy ones, and they are rechecked.
      else return Infinity;
    }
    if (live === 0) {
      this.spawn();
      return Infinity;
    }
    let due = 0;
    let nextDue = Infinity;
    for (const waiting of this.queue) {
      const at = Math.max(waiting.queuedAt, heldSince) + SPAWN_WAIT_MS;
      if (at <= now) due++;
      else nextDue = Math.min(nextDue, at);
    }
    // At most as many starting at once as there are held workers: the pool doubles at most, so
    // one slow run (a cold first one) does not start a worker for every run queued behind it.
    const busy = live - starting;
    for (let spawned = 0; starting + spawned < Math.min(due, busy) && this.slots.size < this.maxWorkers; spawned++) this.spawn();
    // Workers are on their way for the runs that are due; the others are looked at when they are.
    return this.slots.size < this.maxWorkers ? nextDue : Infinity;
  }

  private refill(): void {
    if (this.closed) return;
    while (this.slots.size < this.minWorkers) this.spawn();
    this.dispatch();
  }

  private scheduleIdle(): void {
    let idle = 0;
    for (const slot of this.slots) {
      // A worker still starting is not idle: it was started for a run that may be waiting for it.
      if (slot.active || slot.exited || !slot.isReady) continue;
      idle++;
      if (idle > this.minWorkers && !slot.idleTimer) {
        slot.idleTimer = setTimeout(() => {
          slot.idleTimer = undefined;
          if (slot.active || slot.exited || this.slots.size <= this.minWorkers) return;
          this.slots.delete(slot);
          slot.exited = true;
          void slot.worker.terminate();
        }, this.idleMs);
        slot.idleTimer.unref?.();
      }
    }
  }

  private sendSettles(slot: Slot): void {
    const settles = slot.settles.splice(0);
    if (slot.exited) return;
    slot.bridge.sendAll(settles);
  }

  /** A run goes through the ring: a worker watching it between runs is woken there; otherwise its event loop is told to look. */
  private sendRun(slot: Slot, request: RunMessage): void {
    if (slot.exited) return;
    if (!slot.bridge.offer(formatRun(request))) this.send(slot, { type: "ring" });
  }

  private send(slot: Slot, message: HostToWorker): void {
    if (!slot.exited) slot.worker.postMessage(message);
  }
}

function stoppedBeforeStart(runId: string, kind: ErrorKind, message: string): DoneMessage {
  return { type: "done", runId, ok: false, error: { kind, message }, warnings: [], pendingCalls: [], instanceDiscarded: false };
}

function hardStopped(active: ActiveRun, kind: ErrorKind, message: string): DoneMessage {
  return {
    type: "done",
    runId: active.request.runId,
    ok: false,
    error: { kind, message },
    warnings: [],
    pendingCalls: [],
    instanceDiscarded: true,
  };
}
