// The task host: the scheduler of subagent tasks. It spawns tasks on their drivers (checking the
// depth cap), places them in running slots through slots.ts (the running cap, its FIFO queue and
// the slots lent to foreground children), stops them with their cascade, waits for them, hands
// them to a distributed queue when one is configured, and reaps the records of dead owners and
// lost workers.
//
// Invariant: the host is the ONLY writer of the lifecycle of the records it owns. Every status
// change goes through assertTransition (docs/tasks.md#the-task-model) and a compare-and-replace on
// the store against the status and owner it last wrote, so another host sharing the store can read
// them but never moves them; a record another host took over is abandoned, never overwritten.
//
// Layer: src/tasks, outside the sandbox wall and independent of the engine and of codemode (a
// script agent's program reaches it only through the ScriptRunner it is given). Below it: the
// stores, the drivers, the task log (the one writer of output), the slot accounting (slots.ts,
// which starts tasks only through the host's callback). Beside it, pure: finish.ts (how a
// run ends), output.ts (reading pages, spill files), status.ts, ingest.ts (usage and pricing).
// Above it: src/ptc (the tools programs call) and the CLI.
import { monotonicFactory } from "ulid";
import type { AgentDefinition, AgentRegistry, DriverEvent, FunctionAgent } from "./agents.js";
import { TaskError, invalidArgument } from "./errors.js";
import { checkTaskArgv, commandDriver } from "./drivers/command.js";
import { functionDriver } from "./drivers/function.js";
import { openaiDriver } from "./drivers/openai.js";
import { scriptDriver, type ScriptRunner } from "./drivers/script.js";
import type { ChildToolProvider, Driver, DriverResult } from "./drivers/types.js";
import { addCost, addTokens, boundedMessage, costReading, EVENT_MESSAGE_BYTES, pricedCost, RECORD_MESSAGE_BYTES, REPORT_BYTES, reportBytes, tokenReading } from "./ingest.js";
import { chooseReport, finishOutcome } from "./finish.js";
import { hasFinalOutput, OutputSpill, outputTail, readOutputPage, type OutputPage } from "./output.js";
import { currentOwner, sameOwner } from "./owner.js";
import { signalTaskProcesses } from "./processes.js";
import { parseReport, type ReportBody } from "./report.js";
import { boundedLabel, checkTaskSize, chooseModel, confineCwd, realRoots } from "./spawn-checks.js";
import { assertTransition } from "./status.js";
import type { TaskStore } from "./store.js";
import { attemptOf, type RemoteQueue } from "./remote.js";
import { MIN_OUTPUT_CAP, TaskLog } from "./task-log.js";
import { noSlot, Slots, type SlotLinks } from "./slots.js";
import { formatBytes, messageOf } from "../text.js";
import { carriedScope, StopTrace, TaskTrace, traceCarrier, traceScope, type TraceCarrier, type TraceScope } from "../tracing.js";
import type { Tracer } from "@opentelemetry/api";
import {
  isTerminal,
  TASK_STATUSES,
  zeroUsage,
  type DriverKind,
  type LostAttempt,
  type LostReason,
  type ReadOnlyTier,
  type ReportChannel,
  type TaskProcessGroup,
  type TaskRecord,
  type TaskStatus,
  type Usage,
  type WorkerInfo,
} from "./types.js";

export interface TaskHostOptions {
  store: TaskStore;
  agents: AgentRegistry;
  /**
   * Tasks running at once on this host; further spawns wait in FIFO order. A task's foreground
   * child runs in its parent's slot while the parent waits for it, so nesting never exceeds it.
   */
  maxRunning?: number;
  /** Tasks waiting for a slot at once; spawns past it are refused (a fan-out bomb stops here). */
  maxQueued?: number;
  /** Deepest allowed nesting: a top-level program is depth 0, each spawn adds 1. */
  maxDepth?: number;
  scriptRunner?: ScriptRunner;
  /** Where spilled output of in-memory tasks goes (`<dataDir>/spill`); default a private temp dir removed on close. */
  dataDir?: string;
  /** Grace between SIGTERM and SIGKILL when a task is stopped. */
  killGraceMs?: number;
  /** Tools offered to openai children (filtered by each agent's `tools` and `read_only`). */
  childTools?: ChildToolProvider;
  /** Default working directory of children. */
  cwd?: string;
  /**
   * Directories a task's `cwd` may be in (default: just `cwd`). A `cwd` outside all of them, or
   * one that does not exist, is refused.
   */
  cwdRoots?: readonly string[];
  /** Output one task may store (default 16 MiB); past it, output is dropped and the cut is stated. */
  maxOutputBytes?: number;
  /** Longest stdout line a line protocol keeps (default 4 MiB); a longer one fails the task. */
  maxLineBytes?: number;
  /**
   * A distributed queue (the Redis backend): script, command and openai tasks are enqueued for
   * queue workers instead of run here; `maxRunning` and `maxQueued` then count the whole queue.
   */
  remote?: RemoteQueue;
  /** This host is a queue worker: the tasks it claims (runQueued) name it. */
  worker?: WorkerInfo;
  /** Records task spans (OpenTelemetry) for spawns not traced by their caller; default the global provider's tracer. */
  tracer?: Tracer;
}

export interface SpawnRequest {
  agent: string;
  task: string;
  background?: boolean;
  label?: string;
  model?: string;
  cwd?: string;
  /**
   * A workflow task instead of an agent: the host runs this in-process function as the task
   * (driver "workflow", recorded under the agent name given), with the same records, caps, stop
   * cascade and host-counted usage (the usage events it emits) as any task.
   */
  workflow?: FunctionAgent;
}

export interface SpawnContext {
  /** Depth of the calling program (0 = top level). Ignored when `parentTaskId` names a known task. */
  depth?: number;
  /**
   * The program run that spawns (ToolContext.runId). A background task is recorded under a run
   * opened with `beginRun`, for `ptc_task_wait`'s default: the tasks this program spawned.
   */
  runId?: string;
  /** The task whose program is spawning, for parent links, depth and stop cascades. */
  parentTaskId?: string;
  /** A foreground child is stopped when this aborts. */
  signal?: AbortSignal;
  /** Where the task's span goes (the calling tool call's); default the host's tracer under the active context. */
  trace?: TraceScope;
}

export interface StopResult {
  record: TaskRecord;
  fromStatus: TaskStatus;
}

export interface WaitOptions {
  /** "all" (default): until every task has ended; "any": until at least one has. */
  until?: "all" | "any";
  /** Epoch milliseconds: by then the wait returns whatever the tasks' state. */
  endAt: number;
  /** The wait returns at once when this aborts. */
  signal?: AbortSignal;
  /**
   * The task whose program waits. While it waits its running slot is free, so the tasks it waits
   * for can run in it; it takes the slot back the moment its wait ends (see `Slots.yield` in slots.ts).
   */
  waiterTaskId?: string;
  /** Told of each awaited task that ends while the wait lasts (a caller's progress). */
  onEnd?: (record: TaskRecord) => void;
}

export interface WaitResult {
  /** One record per distinct id asked for, in the order asked. */
  records: TaskRecord[];
  /** Why the wait returned: the condition held, `endAt` came, or the signal aborted. */
  outcome: "ended" | "timed_out" | "aborted";
}

export interface ListOptions {
  status?: readonly string[];
  limit?: number;
}

export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 10_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024;
const LABEL_CHARS = 60;
/** How long after SIGKILL the host waits for a driver before it records the stop anyway. */
const ABANDON_AFTER_KILL_MS = 1000;
const REPORT_SCAN_BYTES = 64 * 1024;
/** How often records the store refused are written again. */
const RETRY_WRITES_MS = 1000;
/** Warnings kept for a reader (`warnings`); older ones are dropped. */
const MAX_WARNINGS = 100;
/** How often a wait looks at tasks another host runs (their end reaches this host only through the store). */
const FOREIGN_WAIT_POLL_MS = 250;

interface Live {
  record: TaskRecord;
  /** The status the store holds for it (differs from `record.status` while a write is pending). */
  stored: TaskStatus;
  agent: AgentDefinition;
  controller: AbortController;
  usage: Usage;
  log: TaskLog;
  /** Where this attempt's output starts in the log (0 but for a retry on a queue). */
  outputStart: number;
  toolReport?: ReportBody;
  /** The last error a child reported (only the last one is ever shown). */
  lastError?: string;
  stopReason?: string;
  stopRequested: boolean;
  /** Why the host itself failed the task (its output could not be written). */
  hostFailure?: string;
  done: Promise<TaskRecord>;
  settle: (r: TaskRecord) => void;
  started: boolean;
  finished: boolean;
  /** Its share of the running cap (slots.ts writes it). */
  slot: SlotLinks<Live>;
  trace?: TaskTrace;
}

interface Unrecorded {
  record: TaskRecord;
  stored: TaskStatus;
}

const nextId = monotonicFactory();

/**
 * Runs subagent tasks: spawns them through their agent's driver, queues past the running cap,
 * stops them (cascading to the tasks they spawned), measures their usage from driver events, and
 * records everything in a store that may outlive this process.
 */
export class TaskHost {
  readonly store: TaskStore;
  readonly agents: AgentRegistry;
  readonly maxRunning: number;
  readonly maxQueued: number;
  readonly maxDepth: number;
  readonly killGraceMs: number;
  readonly maxOutputBytes: number;
  readonly maxLineBytes: number;
  private readonly tracer?: Tracer;
  private readonly drivers: Record<DriverKind, Driver>;
  private hasScriptRunner: boolean;
  private readonly spill: OutputSpill;
  private childTools?: ChildToolProvider;
  private readonly cwd: string;
  private readonly cwdRoots: string[];
  private readonly owner = currentOwner();
  private readonly live = new Map<string, Live>();
  /** Ended tasks whose final record the store refused: served from here and written again. */
  private readonly unrecorded = new Map<string, Unrecorded>();
  private retryTimer: ReturnType<typeof setInterval> | undefined;
  private readonly ownWarnings: string[] = [];
  private readonly slots: Slots<Live>;
  /** Background tasks spawned by each open program run, for ptc_task_wait's default. */
  private readonly runs = new Map<string, string[]>();
  /** Called with the id of each task that ends on this host (what waits listen to). */
  private readonly endListeners = new Set<(id: string) => void>();
  private closed = false;
  private readonly remote?: RemoteQueue;
  readonly workerInfo?: WorkerInfo;
  /** Tasks this host put on the remote queue that may still run: stopped when it closes. */
  private readonly remoteSpawned = new Set<string>();

  constructor(options: TaskHostOptions) {
    if (options === null || typeof options !== "object") throw invalidArgument("options", "an object with store and agents", options);
    if (!options.store || typeof options.store.insert !== "function") throw invalidArgument("store", "a TaskStore (memoryTaskStore() or sqliteTaskStore(dataDir))", options.store);
    if (!options.agents || typeof options.agents.get !== "function") throw invalidArgument("agents", "an AgentRegistry", options.agents);
    this.maxRunning = positiveInt("maxRunning", options.maxRunning ?? 8);
    this.maxQueued = positiveInt("maxQueued", options.maxQueued ?? 1000);
    this.slots = new Slots<Live>(this.maxRunning, {
      start: (live) => this.start(live),
      queuedTask: (id) => {
        const live = this.live.get(id);
        return live?.record.status === "queued" ? live : undefined;
      },
      isForegroundChild: (child, parent) => !child.record.background && child.record.parentId === parent.record.id,
    });
    this.maxDepth = positiveInt("maxDepth", options.maxDepth ?? 3);
    const grace = options.killGraceMs ?? 5000;
    if (!Number.isSafeInteger(grace) || grace < 0) throw invalidArgument("killGraceMs", "a non-negative integer of milliseconds", grace);
    this.killGraceMs = grace;
    this.maxOutputBytes = positiveInt("maxOutputBytes", options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
    if (this.maxOutputBytes < MIN_OUTPUT_CAP) throw invalidArgument("maxOutputBytes", `an integer of at least ${MIN_OUTPUT_CAP} bytes`, this.maxOutputBytes);
    this.maxLineBytes = positiveInt("maxLineBytes", options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
    this.store = options.store;
    this.agents = options.agents;
    this.childTools = options.childTools;
    this.tracer = options.tracer;
    this.cwd = options.cwd ?? process.cwd();
    if (options.cwdRoots !== undefined && (!Array.isArray(options.cwdRoots) || options.cwdRoots.some((r) => typeof r !== "string" || r === ""))) {
      throw invalidArgument("cwdRoots", "an array of directory paths", options.cwdRoots);
    }
    this.cwdRoots = realRoots(options.cwdRoots?.length ? options.cwdRoots : [this.cwd], this.cwd);
    const dataDir = options.dataDir ?? options.store.dataDir;
    this.spill = new OutputSpill(dataDir);
    this.drivers = {
      function: functionDriver,
      // A workflow's graph is an in-process function too: its runner is handed over at spawn.
      workflow: functionDriver,
      command: commandDriver,
      openai: openaiDriver,
      script: scriptDriver(options.scriptRunner),
    };
    this.hasScriptRunner = options.scriptRunner !== undefined;
    if (options.remote) this.remote = options.remote;
    if (options.worker) this.workerInfo = { ...options.worker };
    this.reapLost();
  }

  /**
   * The composition's last step (createCodemode): a script runner and the tools openai children
   * call exist only once the runtime this host belongs to does, so they are attached after it is
   * built — once each, before any task runs them.
   */
  attach(parts: { scriptRunner?: ScriptRunner; childTools?: ChildToolProvider }): void {
    if (parts.scriptRunner !== undefined) {
      if (this.hasScriptRunner) throw new TypeError("TaskHost.attach: this host has a script runner already");
      this.drivers.script = scriptDriver(parts.scriptRunner);
      this.hasScriptRunner = true;
    }
    if (parts.childTools !== undefined) {
      if (this.childTools) throw new TypeError("TaskHost.attach: this host has child tools already");
      this.childTools = parts.childTools;
    }
  }

  /** Problems this host met that are no one task's failure: bad rows set aside, records it could not write. */
  get warnings(): string[] {
    return [...this.store.warnings, ...this.ownWarnings];
  }

  /**
   * Marks `lost` every active record whose owner is gone, and stops the processes that task left
   * running. Records of live owners — this host's or another host's on the same data dir, in any
   * PID namespace — are never touched. A record that cannot be marked (a full disk, a read-only
   * data dir) is left for a later host, with a warning. A task of a lost queue worker goes
   * through workerLost (lost, or queued again for an agent with retries); either is returned.
   */
  reapLost(): TaskRecord[] {
    const reaped: TaskRecord[] = [];
    if (this.store.readOnly) return reaped;
    let active: TaskRecord[];
    try {
      active = this.store.active();
    } catch (err) {
      this.warn(`could not look for tasks lost by earlier hosts: ${messageOf(err)}`);
      return reaped;
    }
    for (const rec of active) {
      // On a queue, a waiting task belongs to the queue, not to the host that spawned it.
      if (this.remote && rec.status === "queued") continue;
      if (sameOwner(rec.owner, this.owner) || this.store.isOwnerAlive(rec.owner)) continue;
      if (rec.worker) {
        const lost = this.workerLost(rec);
        if (lost) reaped.push(lost);
        continue;
      }
      const reason: LostReason = rec.status === "queued" ? "lost_on_restart" : "host_exited_while_running";
      // A quiet child never notices its host died: it is stopped here, or nothing ever stops it.
      const stopped = rec.status === "queued" ? 0 : signalTaskProcesses(rec.id, rec.processes, "SIGKILL");
      const leftovers = stopped > 0 ? `; the ${stopped} process${stopped === 1 ? "" : "es"} it left running ${stopped === 1 ? "was" : "were"} stopped` : "";
      const lost: TaskRecord = {
        ...rec,
        status: "lost",
        lostReason: reason,
        endedAt: Date.now(),
        outputBytes: this.store.outputSize(rec.id),
        errorMessage:
          reason === "lost_on_restart"
            ? `the host (pid ${rec.owner.pid}) exited before the task started; spawn it again`
            : `the host (pid ${rec.owner.pid}) exited while the task was ${rec.status}; its output so far is kept — read it with ptc_task_output, or spawn the task again${leftovers}`,
      };
      delete lost.usage;
      try {
        if (this.store.replace(lost, { status: rec.status, owner: rec.owner })) reaped.push(lost);
      } catch (err) {
        this.warn(`could not mark task ${rec.id} lost (its host is gone): ${messageOf(err)}; a later host will try again`);
      }
    }
    return reaped;
  }

  /**
   * A queue worker that ran the task stopped answering (its lock expired: it died or lost Redis).
   * The task becomes lost and is never run again — it may have had side effects — unless its
   * agent opted into `retries` and attempts remain: then it is queued again for another worker,
   * the lost attempt kept on the record. `attempt`: the attempt the caller saw lost (a stalled
   * job's); a record already on a later one is left alone. Returns the record when this call
   * moved it.
   */
  workerLost(rec: TaskRecord, attempt = attemptOf(rec)): TaskRecord | undefined {
    if (isTerminal(rec.status) || !rec.worker || this.live.has(rec.id) || attempt !== attemptOf(rec)) return undefined;
    const w = rec.worker;
    const stopped = signalTaskProcesses(rec.id, rec.processes, "SIGKILL");
    const leftovers = stopped > 0 ? `; the ${stopped} process${stopped === 1 ? "" : "es"} it left running here ${stopped === 1 ? "was" : "were"} stopped` : "";
    const retries = rec.status === "running" && this.remote ? this.retriesOf(rec.agent) : 0;
    const lostAt = Date.now();
    const outputBytes = this.store.outputSize(rec.id);
    if (attempt <= retries) return this.requeue(rec, { worker: { ...w }, ...(rec.startedAt !== undefined ? { startedAt: rec.startedAt } : {}), lostAt, outputBytes }, retries);
    const lost: TaskRecord = {
      ...rec,
      status: "lost",
      lostReason: "worker_lost",
      endedAt: lostAt,
      outputBytes,
      errorMessage:
        retries === 0
          ? `the worker ${w.id} on ${w.host} (pid ${w.pid}) stopped answering while the task was ${rec.status} (it exited or lost Redis); the task is not run again, since it may have had side effects — its output so far is kept: read it with ptc_task_output, or spawn the task again${leftovers}`
          : `the worker ${w.id} on ${w.host} (pid ${w.pid}) stopped answering while the task was ${rec.status} (it exited or lost Redis); that was attempt ${attempt} of ${retries + 1} (the agent's "retries: ${retries}"), so the task is not run again — the output of every attempt is kept: read it with ptc_task_output, or spawn the task again${leftovers}`,
    };
    delete lost.usage;
    try {
      return this.store.replace(lost, { status: rec.status, owner: rec.owner }) ? lost : undefined;
    } catch (err) {
      this.warn(`could not mark task ${rec.id} lost (its worker is gone): ${messageOf(err)}`);
      return undefined;
    }
  }

  /** The agent's `retries`; 0 when this host does not have its definition (nothing says a re-run is safe). */
  private retriesOf(agent: string): number {
    try {
      return this.agents.get(agent).retries ?? 0;
    } catch {
      return 0;
    }
  }

  /**
   * Queues a task again after its worker was lost (running → queued, the lost attempt appended):
   * the compare-and-set on the record makes exactly one host do it. Its log goes on, with a line
   * that says where the next attempt's output starts. A queue that refuses the job leaves the
   * task lost, as it would have been without retries.
   */
  private requeue(rec: TaskRecord, lostAttempt: LostAttempt, retries: number): TaskRecord | undefined {
    const queued: TaskRecord = { ...rec, status: "queued", owner: this.owner, outputBytes: lostAttempt.outputBytes, lostAttempts: [...(rec.lostAttempts ?? []), lostAttempt] };
    for (const field of ["worker", "startedAt", "processes", "exitCode"] as const) delete queued[field];
    try {
      if (!this.store.replace(queued, { status: rec.status, owner: rec.owner })) return undefined;
    } catch (err) {
      this.warn(`could not queue task ${rec.id} again (its worker is gone): ${messageOf(err)}`);
      return undefined;
    }
    const next = attemptOf(queued);
    const w = lostAttempt.worker;
    const note = `\n[codemode: attempt ${next - 1} was lost with worker ${w.id} on ${w.host} (it exited or lost Redis); attempt ${next} of at most ${retries + 1} starts here]\n`;
    try {
      this.store.appendOutput(rec.id, Buffer.from(note, "utf8"));
    } catch (err) {
      this.warn(`could not note the retry of task ${rec.id} in its output: ${messageOf(err)}`);
    }
    this.remote!.enqueue(queued).catch((err: unknown) => {
      const lost: TaskRecord = {
        ...queued,
        status: "lost",
        lostReason: "worker_lost",
        endedAt: Date.now(),
        outputBytes: this.store.outputSize(rec.id),
        errorMessage: `the worker ${w.id} on ${w.host} (pid ${w.pid}) stopped answering while the task was running, and the queue refused attempt ${next} (${messageOf(err)}); spawn the task again`,
      };
      try {
        this.store.replace(lost, { status: "queued", owner: this.owner });
      } catch (e) {
        this.warn(`could not mark task ${rec.id} lost after the queue refused its retry: ${messageOf(e)}`);
      }
    });
    return queued;
  }

  async spawn(request: SpawnRequest, context: SpawnContext = {}): Promise<TaskRecord> {
    this.assertOpen();
    const req = validateSpawn(request);
    const agent = req.workflow ? workflowAgent(req.agent, req.workflow) : this.agents.get(req.agent);
    const parentLive = context.parentTaskId !== undefined ? this.live.get(context.parentTaskId) : undefined;
    const parent = parentLive ? parentLive.record : context.parentTaskId !== undefined ? this.get(context.parentTaskId) : undefined;
    const callerDepth = parent ? parent.depth : (context.depth ?? 0);
    if (!Number.isSafeInteger(callerDepth) || callerDepth < 0) throw invalidArgument("depth", "a non-negative integer", callerDepth);
    const depth = callerDepth + 1;
    if (depth > this.maxDepth) {
      throw new TaskError(
        "task_depth_exceeded",
        `cannot spawn agent "${agent.name}" at depth ${depth}: subagents nest at most ${this.maxDepth} deep and this program already runs at depth ${callerDepth}; do this work here instead of spawning another subagent`,
      );
    }
    checkTaskSize(req.task);
    if (agent.driver === "command") checkTaskArgv(agent, req.task);
    const model = chooseModel(agent, req.model);
    const cwd = req.cwd === undefined ? this.cwd : confineCwd(req.cwd, this.cwd, this.cwdRoots);
    // A parent that waits for its foreground child lends it its slot (one child at a time): the
    // child counts against the cap through its parent, and can never wait behind it.
    const borrow = !req.background && parentLive !== undefined && this.slots.canLend(parentLive) ? parentLive : undefined;
    // On a queue, every task a worker can run goes there — except a foreground child, which runs
    // in the slot its waiting parent holds (a queue full of waiting parents would never drain).
    const remote = this.remote !== undefined && borrow === undefined && agent.driver !== "function" && agent.driver !== "workflow";
    // Only the count is wanted (limit 0: no record is read).
    const waiting = remote ? this.store.list({ status: ["queued"], limit: 0 }).total : this.slots.waiting;
    if (remote && waiting >= this.maxQueued) {
      throw new TaskError(
        "task_queue_full",
        `cannot spawn agent "${agent.name}": ${waiting} tasks are already waiting for one of ${this.maxRunning} slots (the host's limit is ${this.maxQueued} waiting); wait for some to finish (poll ptc_task_list) or stop ones you no longer need (ptc_task_stop), then spawn again`,
      );
    }
    const willQueue = borrow === undefined && this.slots.mustQueue;
    if (willQueue && this.slots.waiting >= this.maxQueued) {
      throw new TaskError(
        "task_queue_full",
        `cannot spawn agent "${agent.name}": ${this.slots.waiting} tasks are already waiting for one of ${this.maxRunning} slots (the host's limit is ${this.maxQueued} waiting); wait for some to finish (ptc_task_wait) or stop ones you no longer need (ptc_task_stop), then spawn again`,
      );
    }
    // "enforced" only where the host is the child's sole way to act: a script runs in the sandbox
    // and an openai model acts only through the tools offered to it, so both get only read-only
    // tools. A command is its own process and a function is host code with the host's own
    // authority (file system, network, processes); no wall confines either: "advisory".
    const readOnlyTier: ReadOnlyTier | undefined = agent.readOnly ? (agent.driver === "script" || agent.driver === "openai" ? "enforced" : "advisory") : undefined;
    const record: TaskRecord = {
      id: nextId(),
      agent: agent.name,
      driver: agent.driver,
      task: req.task,
      label: boundedLabel(req.label ?? defaultLabel(req.task)),
      depth,
      background: req.background,
      cwd,
      status: "queued",
      owner: this.owner,
      createdAt: Date.now(),
      outputBytes: 0,
    };
    if (parent) record.parentId = parent.id;
    else if (context.parentTaskId !== undefined) record.parentId = context.parentTaskId;
    if (model !== undefined) record.model = model;
    if (readOnlyTier) record.readOnlyTier = readOnlyTier;
    this.store.insert(record);
    // The worker's task span is a child of the spawning span: its trace context travels with the job.
    if (remote) return this.spawnRemote(record, agent, req.background, context, traceCarrier(context.trace ?? traceScope(this.tracer)));

    const live = this.track(record, agent);
    live.trace = TaskTrace.spawned(context.trace ?? traceScope(this.tracer), record);
    if (borrow) {
      this.slots.lend(borrow, live);
      this.start(live);
    } else if (!willQueue) {
      this.slots.take(live);
      this.start(live);
    } else {
      this.slots.enqueue(record.id);
    }
    if (req.background) {
      if (context.runId !== undefined) this.runs.get(context.runId)?.push(record.id);
      return { ...live.record };
    }
    return this.foreground(record.id, () => live.done, context);
  }

  /** A foreground child's caller waits for its end: stopped if the caller is cancelled, a rejection unless it succeeded. */
  private async foreground(id: string, ended: () => Promise<TaskRecord>, context: SpawnContext): Promise<TaskRecord> {
    const onAbort = (): void => {
      void this.stop(id, "the calling program was cancelled").catch(() => undefined);
    };
    context.signal?.addEventListener("abort", onAbort, { once: true });
    if (context.signal?.aborted) onAbort();
    let final: TaskRecord;
    try {
      final = await ended();
    } finally {
      context.signal?.removeEventListener("abort", onAbort);
    }
    if (final.status !== "succeeded") {
      throw new TaskError(
        "task_failed",
        `subagent task ${final.id} (agent "${final.agent}") ${final.status}${final.errorMessage ? `: ${final.errorMessage}` : ""}; its output and usage stay readable with ptc_task_output({ task_id: "${final.id}" })`,
        final.id,
      );
    }
    return final;
  }

  private async spawnRemote(record: TaskRecord, agent: AgentDefinition, background: boolean, context: SpawnContext, trace: TraceCarrier | undefined): Promise<TaskRecord> {
    try {
      await this.remote!.enqueue(record, trace);
    } catch (err) {
      const canceled = {
        ...record,
        status: "canceled" as const,
        endedAt: Date.now(),
        usage: zeroUsage(),
        reportChannel: (agent.report ? "none" : "opted-out") as ReportChannel,
        errorMessage: `could not be queued: ${messageOf(err)}`,
      };
      try {
        this.store.replace(canceled, { status: "queued", owner: this.owner });
      } catch {
        // The store is as unreachable as the queue: the record stays queued, and no worker has it.
      }
      throw new TaskError("task_spawn_failed", `cannot spawn agent "${agent.name}": the task queue refused it (${messageOf(err)}); spawn it again once the queue is reachable`, record.id);
    }
    this.remoteSpawned.add(record.id);
    if (background) {
      if (context.runId !== undefined) this.runs.get(context.runId)?.push(record.id);
      return { ...record };
    }
    return this.foreground(record.id, () => this.waitRemote(record.id), context);
  }

  /** A task on the queue: its record, once it ended (a worker that went silent makes it lost). */
  private async waitRemote(id: string): Promise<TaskRecord> {
    for (;;) {
      const r = this.getOrThrow(id);
      if (isTerminal(r.status)) {
        this.remoteSpawned.delete(id);
        return r;
      }
      if (r.status !== "queued" && !this.store.isOwnerAlive(r.owner)) this.reapLost();
      await this.remote!.changed(id);
    }
  }

  /**
   * Runs a task a queue worker was handed: claims the queued record for this worker (one writer
   * per record: a record another worker or a stop took first is left alone), runs it with the
   * same driver, usage count and finish as a local task, and resolves once it has ended. `job`:
   * the attempt the job is for (a record on another one is left alone) and the spawning span's
   * trace context, which the task's spans continue.
   */
  async runQueued(id: string, job: { attempt?: number; trace?: TraceCarrier } = {}): Promise<TaskRecord | undefined> {
    this.assertOpen();
    const rec = this.store.get(id);
    if (rec?.status !== "queued" || (job.attempt ?? 1) !== attemptOf(rec)) return rec;
    const claimed: TaskRecord = { ...rec, status: "running", owner: this.owner, startedAt: Date.now() };
    if (this.workerInfo) claimed.worker = { ...this.workerInfo };
    let agent: AgentDefinition;
    try {
      agent = this.agents.get(rec.agent);
    } catch (err) {
      // This worker lacks the definition: the task fails here rather than waiting for a worker that has it.
      const failed: TaskRecord = {
        ...claimed,
        status: "failed",
        endedAt: Date.now(),
        usage: zeroUsage(),
        reportChannel: "none",
        errorMessage: boundedMessage(`this worker cannot run it: ${messageOf(err)}`, RECORD_MESSAGE_BYTES),
      };
      this.store.replace(failed, { status: "queued", owner: rec.owner });
      return this.store.get(id);
    }
    if (!this.store.replace(claimed, { status: "queued", owner: rec.owner })) return this.store.get(id);
    const live = this.track(claimed, agent);
    // A retry's output follows the earlier attempts' in the same log: only its own decides its end.
    live.outputStart = this.store.outputSize(id);
    live.trace = TaskTrace.spawned(carriedScope(this.tracer, job.trace), claimed);
    live.started = true;
    this.slots.take(live);
    live.trace?.started(live.record);
    this.runDriver(live);
    // A stop that arrived before the claim (the host saw it queued, a worker had it already).
    const requested = await this.remote?.stopRequested(id).catch(() => undefined);
    if (requested) void this.stop(id, requested.reason).catch(() => undefined);
    return live.done;
  }

  /** Whether this host runs (or holds queued) the task itself. */
  isLive(id: string): boolean {
    return this.live.has(id);
  }

  /** Resolves with the record once the task has ended (any terminal status). */
  async wait(id: string): Promise<TaskRecord> {
    const live = this.live.get(id);
    if (live) return live.done;
    const r = this.getOrThrow(id);
    if (this.remote && !isTerminal(r.status)) return this.waitRemote(id);
    return r;
  }

  /**
   * A program run starts: the background tasks it spawns (SpawnContext.runId) are recorded until
   * `endRun`, so `tasksOfRun` can answer "the tasks this program spawned".
   */
  beginRun(runId: string): void {
    if (!this.runs.has(runId)) this.runs.set(runId, []);
  }

  endRun(runId: string): void {
    this.runs.delete(runId);
  }

  /** The background tasks a program spawned: those of its open run, else those of the task it runs in. */
  tasksOfRun(runId: string, taskId?: string): string[] | undefined {
    const spawned = this.runs.get(runId);
    if (spawned) return [...spawned];
    if (taskId === undefined) return undefined;
    return this.store
      .children(taskId)
      .filter((c) => c.background)
      .map((c) => c.id);
  }

  /**
   * Waits until every task in `ids` (or, with until "any", one of them) has ended, `endAt` comes
   * or the signal aborts, and answers with their records as they are then. Ends are pushed by the
   * tasks themselves; only tasks another host runs are looked at every 250 ms. The waiting
   * task's slot is free for others meanwhile.
   */
  async waitFor(ids: readonly string[], options: WaitOptions): Promise<WaitResult> {
    if (!Array.isArray(ids) || ids.length === 0) throw invalidArgument("task_ids", "a non-empty array of task ids", ids);
    const wanted = [...new Set(ids)];
    const unknown = wanted.filter((id) => typeof id !== "string" || this.get(id) === undefined);
    if (unknown.length === 1) this.getOrThrow(unknown[0]!);
    if (unknown.length > 1) {
      throw new TaskError("task_not_found", `unknown task ids ${unknown.map((id) => JSON.stringify(id)).join(", ")}; list task ids with ptc_task_list`, unknown[0]);
    }
    if (options.waiterTaskId !== undefined && wanted.includes(options.waiterTaskId)) {
      throw new TaskError(
        "invalid_argument",
        `task ${options.waiterTaskId} is the task this program runs in: it cannot end while its program waits for it; leave it out of "task_ids"`,
        options.waiterTaskId,
      );
    }
    const any = options.until === "any";
    const pending = new Set(wanted.filter((id) => !isTerminal(this.get(id)!.status)));
    const holds = (): boolean => (any ? pending.size < wanted.length : pending.size === 0);
    const snapshot = (outcome: WaitResult["outcome"]): WaitResult => ({ records: wanted.map((id) => this.get(id)!), outcome });
    if (holds()) return snapshot("ended");
    const waiter = options.waiterTaskId !== undefined ? this.live.get(options.waiterTaskId) : undefined;
    if (options.signal?.aborted || waiter?.controller.signal.aborted) return snapshot("aborted");
    if (Date.now() >= options.endAt) return snapshot("timed_out");

    const giveBack = this.slots.yield(waiter);
    let stop!: (outcome: WaitResult["outcome"]) => void;
    const stopped = new Promise<WaitResult["outcome"]>((resolve) => (stop = resolve));
    const onEnd = (id: string): void => {
      if (!pending.delete(id)) return;
      options.onEnd?.(this.get(id)!);
      if (holds()) stop("ended");
    };
    const onAbort = (): void => stop("aborted");
    const timer = setTimeout(() => stop("timed_out"), Math.max(0, options.endAt - Date.now()));
    // Tasks of another host (a shared data dir) end in the store only; a host that died ends none
    // of them, so its tasks are marked lost here, as a stop would.
    const foreign = [...pending].filter((id) => !this.live.has(id));
    const look = (): void => {
      for (const id of foreign) {
        const r = this.get(id)!;
        if (!isTerminal(r.status) && !this.unrecorded.has(id) && !this.store.isOwnerAlive(r.owner)) this.reapLost();
        if (isTerminal(this.get(id)!.status)) onEnd(id);
      }
    };
    const poll = foreign.length === 0 ? undefined : setInterval(look, FOREIGN_WAIT_POLL_MS);
    this.endListeners.add(onEnd);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    waiter?.controller.signal.addEventListener("abort", onAbort, { once: true });
    try {
      return snapshot(await stopped);
    } finally {
      clearTimeout(timer);
      if (poll) clearInterval(poll);
      this.endListeners.delete(onEnd);
      options.signal?.removeEventListener("abort", onAbort);
      waiter?.controller.signal.removeEventListener("abort", onAbort);
      giveBack();
    }
  }

  get(id: string): TaskRecord | undefined {
    const live = this.live.get(id);
    if (live) return { ...live.record, outputBytes: this.store.outputSize(id) };
    // As list() shows it: a task not finished (run by another host, say) grows its log without a
    // record write per chunk, so its size is read from the log.
    const known = this.unrecorded.get(id)?.record ?? this.store.get(id);
    if (!known) return undefined;
    return isTerminal(known.status) ? { ...known } : { ...known, outputBytes: this.store.outputSize(id) };
  }

  list(options: ListOptions = {}): { records: TaskRecord[]; total: number } {
    if (options === null || typeof options !== "object") throw invalidArgument("options", "an object", options);
    let status: TaskStatus[] | undefined;
    if (options.status !== undefined) {
      if (!Array.isArray(options.status)) throw invalidArgument("status", `an array of statuses (${TASK_STATUSES.join(", ")})`, options.status);
      for (const s of options.status) {
        if (!(TASK_STATUSES as readonly string[]).includes(s)) {
          throw new TaskError("invalid_argument", `"status" entries must be one of ${TASK_STATUSES.map((x) => `"${x}"`).join(", ")}, got ${JSON.stringify(s)}`);
        }
      }
      status = options.status as TaskStatus[];
    }
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) throw invalidArgument("limit", `an integer from 1 to ${MAX_LIST_LIMIT}`, limit);
    const page = this.store.list({ limit, ...(status ? { status } : {}) });
    // Live tasks' logs grow without a record write per chunk; their size is read from the log.
    // Records the store has not taken yet are shown as this host knows them.
    let records = page.records.map((r) => {
      const known = this.live.get(r.id)?.record ?? this.unrecorded.get(r.id)?.record ?? r;
      return isTerminal(known.status) ? { ...known } : { ...known, outputBytes: this.store.outputSize(r.id) };
    });
    if (status && this.unrecorded.size > 0) records = records.filter((r) => status!.includes(r.status));
    return { records, total: page.total };
  }

  output(id: string, options: { sinceBytes?: number } = {}): OutputPage {
    return readOutputPage(this.store, this.spill, this.getOrThrow(id), options.sinceBytes);
  }

  /**
   * Stops a task: a queued one is canceled at once; a running one gets SIGTERM (its signal aborts),
   * SIGKILL after the grace period, and the tasks it spawned are stopped too.
   */
  async stop(id: string, reason?: string, trace?: TraceScope): Promise<StopResult> {
    if (reason !== undefined && typeof reason !== "string") throw invalidArgument("reason", "a string", reason);
    if (reason !== undefined) reason = boundedMessage(reason, RECORD_MESSAGE_BYTES);
    let record = this.getOrThrow(id);
    const live = this.live.get(id);
    if (!live && this.remote && !isTerminal(record.status) && !this.unrecorded.has(id)) return this.stopRemote(record, reason);
    if (!live) {
      if (!isTerminal(record.status) && !this.unrecorded.has(id) && !this.store.isOwnerAlive(record.owner)) {
        this.reapLost();
        record = this.getOrThrow(id);
      }
      if (!isTerminal(record.status)) {
        throw new TaskError("task_not_owner", `task ${id} is run by another host (pid ${record.owner.pid}); stop it from that host, or wait until it ends`, id);
      }
      assertTransition(id, record.status, "canceled");
      throw new TaskError("task_not_owner", `task ${id} is not run by this host; wait for it to end`, id);
    }
    const l = live;
    const fromStatus = l.record.status;
    if (isTerminal(fromStatus)) assertTransition(id, fromStatus, "canceled");
    const traced = StopTrace.start(trace, l.trace, id, fromStatus, reason);
    if (!l.stopRequested) {
      l.stopRequested = true;
      l.trace?.stopRequested(reason);
      if (reason !== undefined) l.stopReason = reason;
      if (fromStatus === "queued") {
        this.slots.dequeue(id);
        this.finish(l, { exitCode: -1 }, "canceled");
      } else {
        this.transition(l, "stopping", (r) => {
          if (reason !== undefined) r.stopReason = reason;
        });
        const cascade = this.stopChildren(id, traced?.scope);
        this.abortDriver(l, reason ?? "stopped");
        await cascade;
      }
    }
    const final = await l.done;
    traced?.end(final);
    return { record: final, fromStatus };
  }

  /**
   * A task on the queue: a waiting one is taken off the queue and canceled here; a running one is
   * stopped by its worker (SIGTERM, SIGKILL after the grace, its children too).
   */
  private async stopRemote(record: TaskRecord, reason: string | undefined): Promise<StopResult> {
    const fromStatus = record.status;
    if (fromStatus === "queued" && (await this.remote!.cancelQueued(record))) {
      let agent: AgentDefinition | undefined;
      try {
        agent = this.agents.get(record.agent);
      } catch {
        agent = undefined;
      }
      const canceled: TaskRecord = { ...record, status: "canceled", endedAt: Date.now(), outputBytes: 0, usage: zeroUsage(), reportChannel: agent?.report === false ? "opted-out" : "none" };
      if (reason !== undefined) canceled.stopReason = reason;
      if (this.store.replace(canceled, { status: "queued", owner: record.owner })) {
        this.remoteSpawned.delete(record.id);
        return { record: canceled, fromStatus };
      }
    }
    await this.remote!.requestStop(record.id, reason);
    return { record: await this.waitRemote(record.id), fromStatus };
  }

  /** Stops every task this host runs and refuses further spawns. Does not close the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.slots.close();
    // Tasks this host put on the queue end with it, as its local tasks do.
    let remote: string[] = [];
    if (this.remoteSpawned.size > 0) {
      try {
        remote = this.store
          .active()
          .map((r) => r.id)
          .filter((id) => this.remoteSpawned.has(id))
          .reverse();
      } catch (err) {
        this.warn(`could not stop the tasks this host queued: ${messageOf(err)}`);
      }
    }
    await Promise.all(remote.map((id) => this.stop(id, "host closed").catch(() => undefined)));
    const ids = [...this.live.keys()].reverse();
    await Promise.all(ids.map((id) => this.stop(id, "host closed").catch(() => undefined)));
    this.retryUnrecorded();
    await this.remote?.close();
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = undefined;
    this.spill.remove();
  }

  /** Slots in use: tasks running in their own slot (a child running in its parent's slot is not counted again). */
  get running(): number {
    return this.slots.running;
  }

  get queued(): number {
    return this.slots.waiting;
  }

  private async stopChildren(parentId: string, trace: TraceScope | undefined): Promise<void> {
    // On a queue a child may run on any worker: the stop reaches it wherever it is.
    const children = this.store.children(parentId).filter((c) => !isTerminal(c.status) && (this.live.has(c.id) || this.remote !== undefined));
    await Promise.all(children.map((c) => this.stop(c.id, `parent task ${parentId} was stopped`, trace).catch(() => undefined)));
  }

  /** Aborts a driver; one that ignores its signal is abandoned once SIGKILL would have landed. */
  private abortDriver(live: Live, reason: string): void {
    if (live.controller.signal.aborted) return;
    live.controller.abort(new Error(reason));
    const settleDelay = Math.min(ABANDON_AFTER_KILL_MS, Math.max(50, this.killGraceMs));
    const abandon = setTimeout(
      () => this.finish(live, { exitCode: 137, error: "did not stop within the kill grace period" }, live.stopRequested ? "canceled" : undefined),
      this.killGraceMs + settleDelay,
    );
    abandon.unref();
    void live.done.then(() => clearTimeout(abandon));
  }

  private track(record: TaskRecord, agent: AgentDefinition): Live {
    let resolve!: (r: TaskRecord) => void;
    const done = new Promise<TaskRecord>((r) => (resolve = r));
    const settle = (r: TaskRecord): void => {
      resolve(r);
      for (const listener of this.endListeners) listener(r.id);
    };
    const live: Live = {
      record,
      stored: record.status,
      agent,
      controller: new AbortController(),
      usage: zeroUsage(),
      log: undefined as unknown as TaskLog,
      outputStart: 0,
      stopRequested: false,
      done,
      settle,
      started: false,
      finished: false,
      slot: noSlot(),
    };
    live.log = new TaskLog(this.store, record.id, this.maxOutputBytes, (reason) => {
      // The disk refused the task's output: the task fails with that reason, nothing else does.
      if (live.finished || live.hostFailure !== undefined) return;
      live.hostFailure = reason;
      this.abortDriver(live, reason);
    });
    this.live.set(record.id, live);
    return live;
  }

  private start(live: Live): void {
    live.started = true;
    try {
      this.transition(live, "running", (r) => {
        r.startedAt = Date.now();
      });
    } catch (err) {
      this.abandon(live, err);
      return;
    }
    live.trace?.started(live.record);
    this.runDriver(live);
  }

  private runDriver(live: Live): void {
    const driver = this.drivers[live.agent.driver];
    const emit = (event: DriverEvent): void => this.onEvent(live, event);
    let run: Promise<DriverResult>;
    try {
      run = driver({
        task: { ...live.record },
        agent: live.agent,
        signal: live.controller.signal,
        emit,
        killGraceMs: this.killGraceMs,
        cwd: live.record.cwd,
        maxLineBytes: this.maxLineBytes,
        onProcess: (group) => this.recordProcesses(live, group),
        ...(this.childTools ? { childTools: this.childTools } : {}),
        ...(live.trace ? { trace: live.trace.driverScope } : {}),
      });
    } catch (err) {
      run = Promise.resolve({ exitCode: 1, error: messageOf(err) });
    }
    run.then(
      (result) => this.finish(live, result),
      (err: unknown) => this.finish(live, { exitCode: 1, error: messageOf(err) }),
    );
  }

  /** What a later host needs to stop this task's processes if this host dies first. */
  private recordProcesses(live: Live, group: TaskProcessGroup): void {
    if (live.finished || live.record.status !== "running") return;
    try {
      this.persist(live, { ...live.record, processes: group });
    } catch (err) {
      this.warn(`could not record the process group of task ${live.record.id}: ${messageOf(err)}`);
    }
  }

  /**
   * Another host took the record (it believed this one dead): the task is not this host's to
   * record any more. Its caller is answered with the record as last known, and it is forgotten.
   */
  private abandon(live: Live, err: unknown, freeSlot = true): void {
    live.finished = true;
    this.live.delete(live.record.id);
    this.slots.dequeue(live.record.id);
    if (freeSlot && live.started) this.slots.release(live);
    live.controller.abort(new Error("the task's record was taken over by another host"));
    live.trace?.finished(live.record);
    live.settle({ ...live.record, errorMessage: `this host could not record the task's progress (${messageOf(err)}); read it with ptc_task_output` });
  }

  private onEvent(live: Live, event: DriverEvent): void {
    if (live.finished || event === null || typeof event !== "object") return;
    switch (event.type) {
      case "text":
        if (typeof event.text === "string") live.log.write(event.text);
        break;
      case "usage": {
        live.usage.input = addTokens(live.usage.input, tokenReading(event.input));
        live.usage.output = addTokens(live.usage.output, tokenReading(event.output));
        const cost = costReading(event.cost);
        if (cost !== undefined) live.usage.cost = addCost(live.usage.cost, cost);
        break;
      }
      case "turn":
        live.usage.turns = addTokens(live.usage.turns, 1);
        break;
      case "report": {
        const bytes = reportBytes(event.report);
        if (bytes !== undefined && bytes > REPORT_BYTES) {
          live.log.write(`\n[a report of ${formatBytes(bytes)} was ignored: a report is at most ${formatBytes(REPORT_BYTES)}]\n`);
          break;
        }
        const parsed = parseReport(event.report);
        if (parsed) live.toolReport = parsed;
        break;
      }
      case "error":
        live.lastError = boundedMessage(typeof event.message === "string" && event.message !== "" ? event.message : "the child reported an error", EVENT_MESSAGE_BYTES);
        break;
    }
  }

  private finish(live: Live, result: DriverResult, forced?: "canceled"): void {
    if (live.finished) return;
    live.finished = true;
    const id = live.record.id;
    const wasRunning = live.started;
    live.log.finish();
    const outputBytes = this.store.outputSize(id);
    const usage = this.measuredUsage(live);
    const { status, error } = finishOutcome({
      ...(live.hostFailure !== undefined ? { hostFailure: live.hostFailure } : {}),
      canceled: forced !== undefined || live.stopRequested,
      exitCode: result.exitCode,
      ...(result.error !== undefined ? { driverError: result.error } : {}),
      ...(live.lastError !== undefined ? { lastError: live.lastError } : {}),
      hasFinalOutput: () => hasFinalOutput(this.store, id, live.outputStart, outputBytes),
    });

    // Whatever happens to the final write, the slot is freed and the caller is answered.
    try {
      const channelReport = chooseReport({
        status,
        wantsReport: live.agent.report,
        ...(live.toolReport ? { toolReport: live.toolReport } : {}),
        outputTail: () => outputTail(this.store, id, live.outputStart, outputBytes, REPORT_SCAN_BYTES),
      });
      this.transition(live, status, (r) => {
        r.endedAt = Date.now();
        r.outputBytes = outputBytes;
        r.usage = usage;
        r.reportChannel = channelReport.channel;
        if (wasRunning && result.exitCode >= 0) r.exitCode = result.exitCode;
        if (error !== undefined) r.errorMessage = boundedMessage(error, RECORD_MESSAGE_BYTES);
        if (live.log.cutBytes > 0) r.outputCutBytes = live.log.cutBytes;
        if (status === "canceled" && live.stopReason !== undefined) r.stopReason = live.stopReason;
        if (channelReport.report) r.report = { ...channelReport.report, usage: { ...usage } };
      });
      this.live.delete(id);
      if (live.stored !== live.record.status) this.unrecorded.set(id, { record: live.record, stored: live.stored });
      live.trace?.finished(live.record);
      live.settle({ ...live.record });
    } catch (err) {
      this.abandon(live, err, false);
    } finally {
      if (wasRunning) this.slots.release(live);
    }
  }

  private measuredUsage(live: Live): Usage {
    return { input: live.usage.input, output: live.usage.output, cost: pricedCost(live.usage, live.agent.prices), turns: live.usage.turns };
  }

  private transition(live: Live, to: TaskStatus, mutate?: (r: TaskRecord) => void): void {
    assertTransition(live.record.id, live.record.status, to);
    const next: TaskRecord = { ...live.record, status: to };
    mutate?.(next);
    this.persist(live, next);
  }

  /**
   * Writes a live task's record. A store that refuses the write (a full disk, a database busy
   * past its timeout) does not stop the task: the host keeps the record as it should be, serves
   * it from memory, and writes it again until the store takes it. Only a record another host has
   * taken over throws.
   */
  private persist(live: Live, next: TaskRecord): void {
    let replaced: boolean;
    try {
      replaced = this.store.replace(next, { status: live.stored, owner: this.owner });
    } catch (err) {
      if (err instanceof TaskError && err.code === "task_store_read_only") throw err;
      live.record = next;
      this.warn(`could not record task ${next.id} as ${next.status} (${messageOf(err)}); this host keeps it and writes it again every ${RETRY_WRITES_MS / 1000} s`);
      this.scheduleRetry();
      return;
    }
    if (!replaced) {
      // Only a reaper that believed this host dead could have moved it; the record is not ours now.
      throw new TaskError("task_not_owner", `task ${live.record.id} was changed by another host while this host owned it`, live.record.id);
    }
    live.record = next;
    live.stored = next.status;
  }

  private scheduleRetry(): void {
    if (this.retryTimer) return;
    this.retryTimer = setInterval(() => this.retryUnrecorded(), RETRY_WRITES_MS);
    this.retryTimer.unref();
  }

  /** Writes again what the store refused; live tasks are written again by their next transition. */
  private retryUnrecorded(): void {
    for (const [id, pending] of this.unrecorded) {
      try {
        if (!this.store.replace(pending.record, { status: pending.stored, owner: this.owner })) {
          this.warn(`task ${id} was changed by another host before this host could record it as ${pending.record.status}`);
        }
        this.unrecorded.delete(id);
      } catch {
        // Still refused: try again on the next tick.
      }
    }
    const livePending = [...this.live.values()].some((l) => l.stored !== l.record.status);
    if (this.unrecorded.size === 0 && !livePending && this.retryTimer) {
      clearInterval(this.retryTimer);
      this.retryTimer = undefined;
    }
  }

  private warn(message: string): void {
    this.ownWarnings.push(message);
    if (this.ownWarnings.length > MAX_WARNINGS) this.ownWarnings.shift();
  }

  private getOrThrow(id: string): TaskRecord {
    if (typeof id !== "string" || id.length === 0) throw invalidArgument("task_id", "a task id string", id);
    const r = this.get(id);
    if (!r) throw new TaskError("task_not_found", `unknown task id "${id}"; list task ids with ptc_task_list`, id);
    return r;
  }

  private assertOpen(): void {
    if (this.closed) throw new TaskError("task_host_closed", "the task host is closed; create a new one to spawn tasks");
  }
}

function positiveInt(field: string, v: unknown): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) throw invalidArgument(field, "a positive integer", v);
  return v;
}

function defaultLabel(task: string): string {
  const first = task.trim().split("\n", 1)[0] ?? "";
  return first.length > LABEL_CHARS ? first.slice(0, LABEL_CHARS - 1) + "…" : first;
}

function workflowAgent(name: string, run: FunctionAgent): AgentDefinition {
  return { name, description: "a workflow", driver: "workflow", readOnly: false, report: false, prompt: "", source: "workflow", run };
}

function validateSpawn(r: SpawnRequest): Required<Pick<SpawnRequest, "agent" | "task" | "background">> & SpawnRequest {
  if (r === null || typeof r !== "object") throw invalidArgument("request", "an object { agent, task, background?, label?, model?, cwd? }", r);
  if (typeof r.agent !== "string" || r.agent.length === 0) throw invalidArgument("agent", "a non-empty agent name", r.agent);
  if (typeof r.task !== "string" || r.task.trim().length === 0) throw invalidArgument("task", "a non-empty task description", r.task);
  if (r.background !== undefined && typeof r.background !== "boolean") throw invalidArgument("background", "a boolean", r.background);
  for (const f of ["label", "model", "cwd"] as const) {
    if (r[f] !== undefined && typeof r[f] !== "string") throw invalidArgument(f, "a string", r[f]);
  }
  if (r.workflow !== undefined && typeof r.workflow !== "function") throw invalidArgument("workflow", "an async function", r.workflow);
  return { ...r, background: r.background ?? false };
}
