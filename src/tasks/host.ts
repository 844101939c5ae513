import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve as resolvePath } from "node:path";
import { monotonicFactory } from "ulid";
import type { AgentDefinition, AgentRegistry, DriverEvent, FunctionAgent } from "./agents.js";
import { TaskError, invalidArgument } from "./errors.js";
import { commandDriver } from "./drivers/command.js";
import { functionDriver } from "./drivers/function.js";
import { openaiDriver } from "./drivers/openai.js";
import { scriptDriver, type ScriptRunner } from "./drivers/script.js";
import type { ChildToolProvider, Driver, DriverResult } from "./drivers/types.js";
import { errorMessage } from "./drivers/types.js";
import { checkSinceBytes, headPreview, OUTPUT_TAIL_BYTES, PREVIEW_BYTES, SMALL_OUTPUT_BYTES, tailTruncate } from "./output.js";
import { currentOwner, isOwnerAlive, sameOwner } from "./owner.js";
import { extractPromptJsonReport, parseReport, type ReportBody } from "./report.js";
import { assertTransition } from "./status.js";
import type { TaskStore } from "./store.js";
import {
  isTerminal,
  TASK_STATUSES,
  zeroUsage,
  type DriverKind,
  type LostReason,
  type ReadOnlyTier,
  type ReportChannel,
  type TaskRecord,
  type TaskStatus,
  type Usage,
} from "./types.js";

export interface TaskHostOptions {
  store: TaskStore;
  agents: AgentRegistry;
  /** Tasks running at once on this host; further background spawns wait in FIFO order. */
  maxRunning?: number;
  /** Tasks waiting for a slot at once; spawns past it are refused (a fan-out bomb stops here). */
  maxQueued?: number;
  /** Deepest allowed nesting: a top-level program is depth 0, each spawn adds 1. */
  maxDepth?: number;
  scriptRunner?: ScriptRunner;
  /** Where spilled output of in-memory tasks goes; default a directory under the OS temp dir. */
  dataDir?: string;
  /** Grace between SIGTERM and SIGKILL when a task is stopped. */
  killGraceMs?: number;
  /** Tools offered to openai children (filtered by each agent's `tools` and `read_only`). */
  childTools?: ChildToolProvider;
  /** Default working directory of children. */
  cwd?: string;
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
  /** The task whose program is spawning, for parent links, depth and stop cascades. */
  parentTaskId?: string;
  /** A foreground child is stopped when this aborts. */
  signal?: AbortSignal;
}

export interface StopResult {
  record: TaskRecord;
  fromStatus: TaskStatus;
}

export interface OutputPage {
  record: TaskRecord;
  /** The page from `sinceBytes`, tail-truncated. */
  output: string;
  /** Total bytes of the log (the next `since_bytes`). */
  outputBytes: number;
  truncated: boolean;
  fullPath?: string;
  preview?: string;
}

export interface ListOptions {
  status?: readonly string[];
  limit?: number;
}

export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 10_000;
const LABEL_CHARS = 60;
/** How long after SIGKILL the host waits for a driver before it records the stop anyway. */
const ABANDON_AFTER_KILL_MS = 1000;
const REPORT_SCAN_BYTES = 64 * 1024;

interface Live {
  record: TaskRecord;
  agent: AgentDefinition;
  controller: AbortController;
  usage: { input: number; output: number; cost: number; turns: number };
  toolReport?: ReportBody;
  errors: string[];
  stopReason?: string;
  stopRequested: boolean;
  done: Promise<TaskRecord>;
  settle: (r: TaskRecord) => void;
  finished: boolean;
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
  private readonly drivers: Record<DriverKind, Driver>;
  private readonly spillDir: string;
  private readonly childTools?: ChildToolProvider;
  private readonly cwd: string;
  private readonly owner = currentOwner();
  private readonly live = new Map<string, Live>();
  /** Bytes of each in-memory log already copied to its spill file. */
  private readonly spilled = new Map<string, number>();
  private readonly queue: string[] = [];
  private runningCount = 0;
  private closed = false;

  constructor(options: TaskHostOptions) {
    if (options === null || typeof options !== "object") throw invalidArgument("options", "an object with store and agents", options);
    if (!options.store || typeof options.store.insert !== "function") throw invalidArgument("store", "a TaskStore (memoryTaskStore() or sqliteTaskStore(dataDir))", options.store);
    if (!options.agents || typeof options.agents.get !== "function") throw invalidArgument("agents", "an AgentRegistry", options.agents);
    this.maxRunning = positiveInt("maxRunning", options.maxRunning ?? 8);
    this.maxQueued = positiveInt("maxQueued", options.maxQueued ?? 1000);
    this.maxDepth = positiveInt("maxDepth", options.maxDepth ?? 3);
    const grace = options.killGraceMs ?? 5000;
    if (!Number.isSafeInteger(grace) || grace < 0) throw invalidArgument("killGraceMs", "a non-negative integer of milliseconds", grace);
    this.killGraceMs = grace;
    this.store = options.store;
    this.agents = options.agents;
    this.childTools = options.childTools;
    this.cwd = options.cwd ?? process.cwd();
    this.spillDir = join(options.dataDir ?? options.store.dataDir ?? join(tmpdir(), `codemode-${process.pid}`), "spill");
    this.drivers = {
      function: functionDriver,
      // A workflow's graph is an in-process function too: its runner is handed over at spawn.
      workflow: functionDriver,
      command: commandDriver,
      openai: openaiDriver,
      script: scriptDriver(options.scriptRunner),
    };
    this.reapLost();
  }

  /**
   * Marks `lost` every active record whose owner process is gone. Records of live owners — this
   * host's or another host's on the same data dir — are never touched.
   */
  reapLost(): TaskRecord[] {
    const reaped: TaskRecord[] = [];
    for (const rec of this.store.active()) {
      if (sameOwner(rec.owner, this.owner) || isOwnerAlive(rec.owner)) continue;
      const reason: LostReason = rec.status === "queued" ? "lost_on_restart" : "host_exited_while_running";
      const lost: TaskRecord = {
        ...rec,
        status: "lost",
        lostReason: reason,
        endedAt: Date.now(),
        outputBytes: this.store.outputSize(rec.id),
        errorMessage:
          reason === "lost_on_restart"
            ? `the host (pid ${rec.owner.pid}) exited before the task started; spawn it again`
            : `the host (pid ${rec.owner.pid}) exited while the task was ${rec.status}; its output so far is kept — read it with ptc_task_output, or spawn the task again`,
      };
      delete lost.usage;
      if (this.store.replace(lost, { status: rec.status, owner: rec.owner })) reaped.push(lost);
    }
    return reaped;
  }

  async spawn(request: SpawnRequest, context: SpawnContext = {}): Promise<TaskRecord> {
    this.assertOpen();
    const req = validateSpawn(request);
    const agent = req.workflow ? workflowAgent(req.agent, req.workflow) : this.agents.get(req.agent);
    const parent = context.parentTaskId !== undefined ? this.store.get(context.parentTaskId) : undefined;
    const callerDepth = parent ? parent.depth : context.depth ?? 0;
    if (!Number.isSafeInteger(callerDepth) || callerDepth < 0) throw invalidArgument("depth", "a non-negative integer", callerDepth);
    const depth = callerDepth + 1;
    if (depth > this.maxDepth) {
      throw new TaskError(
        "task_depth_exceeded",
        `cannot spawn agent "${agent.name}" at depth ${depth}: subagents nest at most ${this.maxDepth} deep and this program already runs at depth ${callerDepth}; do this work here instead of spawning another subagent`,
      );
    }
    const willQueue = (req.background || parent === undefined) && (this.runningCount >= this.maxRunning || this.queue.length > 0);
    if (willQueue && this.queue.length >= this.maxQueued) {
      throw new TaskError(
        "task_queue_full",
        `cannot spawn agent "${agent.name}": ${this.queue.length} tasks are already waiting for one of ${this.maxRunning} slots (the host's limit is ${this.maxQueued} waiting); wait for some to finish (poll ptc_task_list) or stop ones you no longer need (ptc_task_stop), then spawn again`,
      );
    }
    const readOnlyTier: ReadOnlyTier | undefined = agent.readOnly
      ? agent.driver === "script" || agent.driver === "openai"
        ? "enforced"
        : "advisory"
      : undefined;
    const record: TaskRecord = {
      id: nextId(),
      agent: agent.name,
      driver: agent.driver,
      task: req.task,
      label: req.label ?? defaultLabel(req.task),
      depth,
      background: req.background,
      cwd: req.cwd ? resolvePath(this.cwd, req.cwd) : this.cwd,
      status: "queued",
      owner: this.owner,
      createdAt: Date.now(),
      outputBytes: 0,
    };
    if (parent) record.parentId = parent.id;
    else if (context.parentTaskId !== undefined) record.parentId = context.parentTaskId;
    const model = req.model ?? agent.model;
    if (model !== undefined) record.model = model;
    if (readOnlyTier) record.readOnlyTier = readOnlyTier;
    this.store.insert(record);

    const live = this.track(record, agent);
    // The cap holds for every spawn from a top-level program, foreground ones too (they wait in the
    // queue). A task's own foreground child starts at once: its parent holds a slot while it waits,
    // and queueing the child behind work that may wait on that parent could deadlock.
    const nestedForeground = !req.background && parent !== undefined;
    if (nestedForeground || (this.runningCount < this.maxRunning && this.queue.length === 0)) {
      this.start(live);
    } else {
      this.queue.push(record.id);
    }
    if (req.background) return { ...live.record };

    const onAbort = (): void => {
      void this.stop(record.id, "the calling program was cancelled").catch(() => undefined);
    };
    context.signal?.addEventListener("abort", onAbort, { once: true });
    if (context.signal?.aborted) onAbort();
    const final = await live.done;
    context.signal?.removeEventListener("abort", onAbort);
    if (final.status !== "succeeded") {
      throw new TaskError(
        "task_failed",
        `subagent task ${final.id} (agent "${final.agent}") ${final.status}${final.errorMessage ? `: ${final.errorMessage}` : ""}; its output and usage stay readable with ptc_task_output({ task_id: "${final.id}" })`,
        final.id,
      );
    }
    return final;
  }

  /** Resolves with the record once the task has ended (any terminal status). */
  async wait(id: string): Promise<TaskRecord> {
    const live = this.live.get(id);
    if (live) return live.done;
    return this.getOrThrow(id);
  }

  get(id: string): TaskRecord | undefined {
    const live = this.live.get(id);
    if (live) return { ...live.record, outputBytes: this.store.outputSize(id) };
    return this.store.get(id);
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
    const records = page.records.map((r) => (isTerminal(r.status) ? r : { ...r, outputBytes: this.store.outputSize(r.id) }));
    return { records, total: page.total };
  }

  output(id: string, options: { sinceBytes?: number } = {}): OutputPage {
    const record = this.getOrThrow(id);
    const total = this.store.outputSize(id);
    const since = options.sinceBytes ?? 0;
    // A UTF-8 character is at most 4 bytes: this window holds every byte the boundary check reads.
    const windowStart = Math.max(0, since - 4);
    let window: Buffer | undefined;
    checkSinceBytes(id, since, total, (offset) => {
      window ??= this.store.readOutput(id, windowStart, Math.min(total, since + 1));
      return window[offset - windowStart]!;
    });
    // Only the tail is ever returned: one byte past the 50 KB cut is all tailTruncate needs to find
    // the same cut it would find in the whole page, so a huge log is never read whole.
    const page = this.store.readOutput(id, Math.max(since, total - (OUTPUT_TAIL_BYTES + 1)), total);
    const tail = tailTruncate(page);
    const result: OutputPage = { record: { ...record, outputBytes: total }, output: tail.text, outputBytes: total, truncated: tail.truncated };
    if (tail.truncated) result.fullPath = this.fullLogPath(id, total);
    // "Small" = the whole log would fit one untruncated page; large logs get a tail and a path only.
    if (total > 0 && total <= SMALL_OUTPUT_BYTES) {
      const whole = since === 0 ? page : this.store.readOutput(id, 0, total);
      if (since === 0 ? !tail.truncated : !tailTruncate(whole).truncated) result.preview = headPreview(whole.subarray(0, PREVIEW_BYTES + 4));
    }
    return result;
  }

  /**
   * Stops a task: a queued one is canceled at once; a running one gets SIGTERM (its signal aborts),
   * SIGKILL after the grace period, and the tasks it spawned are stopped too.
   */
  async stop(id: string, reason?: string): Promise<StopResult> {
    if (reason !== undefined && typeof reason !== "string") throw invalidArgument("reason", "a string", reason);
    let record = this.getOrThrow(id);
    const live = this.live.get(id);
    if (!live) {
      if (!isTerminal(record.status) && !isOwnerAlive(record.owner)) {
        this.reapLost();
        record = this.getOrThrow(id);
      }
      if (!isTerminal(record.status)) {
        throw new TaskError(
          "task_not_owner",
          `task ${id} is run by another host (pid ${record.owner.pid}); stop it from that host, or wait until it ends`,
          id,
        );
      }
      assertTransition(id, record.status, "canceled");
      throw new TaskError("task_not_owner", `task ${id} is not run by this host; wait for it to end`, id);
    }
    const l = live;
    const fromStatus = l.record.status;
    if (isTerminal(fromStatus)) assertTransition(id, fromStatus, "canceled");
    if (!l.stopRequested) {
      l.stopRequested = true;
      if (reason !== undefined) l.stopReason = reason;
      if (fromStatus === "queued") {
        const at = this.queue.indexOf(id);
        if (at !== -1) this.queue.splice(at, 1);
        this.finish(l, { exitCode: -1 }, "canceled");
      } else {
        this.transition(l, "stopping", (r) => {
          if (reason !== undefined) r.stopReason = reason;
        });
        const cascade = this.stopChildren(id);
        l.controller.abort(new Error(reason ?? "stopped"));
        // A driver that ignores its signal is abandoned once SIGKILL would have landed.
        const settleDelay = Math.min(ABANDON_AFTER_KILL_MS, Math.max(50, this.killGraceMs));
        const abandon = setTimeout(() => this.finish(l, { exitCode: 137, error: "did not stop within the kill grace period" }, "canceled"), this.killGraceMs + settleDelay);
        abandon.unref();
        void l.done.then(() => clearTimeout(abandon));
        await cascade;
      }
    }
    const final = await l.done;
    return { record: final, fromStatus };
  }

  /** Stops every task this host runs and refuses further spawns. Does not close the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const ids = [...this.live.keys()].reverse();
    await Promise.all(ids.map((id) => this.stop(id, "host closed").catch(() => undefined)));
  }

  get running(): number {
    return this.runningCount;
  }

  get queued(): number {
    return this.queue.length;
  }

  private async stopChildren(parentId: string): Promise<void> {
    const children = this.store.children(parentId).filter((c) => !isTerminal(c.status) && this.live.has(c.id));
    await Promise.all(children.map((c) => this.stop(c.id, `parent task ${parentId} was stopped`).catch(() => undefined)));
  }

  private track(record: TaskRecord, agent: AgentDefinition): Live {
    let settle!: (r: TaskRecord) => void;
    const done = new Promise<TaskRecord>((r) => (settle = r));
    const live: Live = {
      record,
      agent,
      controller: new AbortController(),
      usage: zeroUsage(),
      errors: [],
      stopRequested: false,
      done,
      settle,
      finished: false,
    };
    this.live.set(record.id, live);
    return live;
  }

  private start(live: Live): void {
    try {
      this.transition(live, "running", (r) => {
        r.startedAt = Date.now();
      });
    } catch (err) {
      this.abandon(live, err);
      return;
    }
    this.runningCount++;
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
        ...(this.childTools ? { childTools: this.childTools } : {}),
      });
    } catch (err) {
      run = Promise.resolve({ exitCode: 1, error: errorMessage(err) });
    }
    run.then(
      (result) => this.finish(live, result),
      (err: unknown) => this.finish(live, { exitCode: 1, error: errorMessage(err) }),
    );
  }

  /**
   * The store refused a transition (disk full, database busy, another host took the record): the
   * task can no longer be recorded, but its caller must not wait forever. It is settled with the
   * record as last written and the reason, and forgotten by this host.
   */
  private abandon(live: Live, err: unknown): void {
    live.finished = true;
    this.live.delete(live.record.id);
    const queued = this.queue.indexOf(live.record.id);
    if (queued >= 0) this.queue.splice(queued, 1);
    live.settle({ ...live.record, errorMessage: `this host could not record the task's progress (${errorMessage(err)}); read it with ptc_task_output` });
  }

  private onEvent(live: Live, event: DriverEvent): void {
    if (live.finished) return;
    switch (event.type) {
      case "text":
        if (event.text.length > 0) this.store.appendOutput(live.record.id, Buffer.from(event.text, "utf8"));
        break;
      case "usage":
        live.usage.input += event.input;
        live.usage.output += event.output;
        if (event.cost !== undefined) live.usage.cost += event.cost;
        break;
      case "turn":
        live.usage.turns++;
        break;
      case "report": {
        const parsed = parseReport(event.report);
        if (parsed) live.toolReport = parsed;
        break;
      }
      case "error":
        live.errors.push(event.message);
        break;
    }
  }

  private finish(live: Live, result: DriverResult, forced?: "canceled"): void {
    if (live.finished) return;
    live.finished = true;
    const id = live.record.id;
    const wasRunning = live.record.status !== "queued";
    const outputBytes = this.store.outputSize(id);
    const usage = this.measuredUsage(live);

    let status: TaskStatus;
    let error: string | undefined;
    if (forced || live.stopRequested) {
      status = "canceled";
    } else if (result.exitCode !== 0) {
      status = "failed";
      // What the child said went wrong beats a bare exit status.
      error = live.errors.at(-1) ?? result.error ?? `exited with code ${result.exitCode}`;
    } else if (live.errors.length > 0) {
      status = "failed";
      error = `exited 0 after reporting an error: ${live.errors.at(-1)}`;
    } else if (!this.hasFinalOutput(id, outputBytes)) {
      status = "failed";
      error = "exited 0 without any final output";
    } else {
      status = "succeeded";
    }

    // Whatever happens to the final write, the slot is freed and the caller is answered.
    try {
      const channelReport = this.reportFor(live, outputBytes);
      this.transition(live, status, (r) => {
        r.endedAt = Date.now();
        r.outputBytes = outputBytes;
        r.usage = usage;
        r.reportChannel = channelReport.channel;
        if (wasRunning && result.exitCode >= 0) r.exitCode = result.exitCode;
        if (error !== undefined) r.errorMessage = error;
        if (status === "canceled" && live.stopReason !== undefined) r.stopReason = live.stopReason;
        if (status === "succeeded" && channelReport.report) r.report = { ...channelReport.report, usage: { ...usage } };
      });
      this.live.delete(id);
      live.settle({ ...live.record });
    } catch (err) {
      this.abandon(live, err);
    } finally {
      if (wasRunning) {
        this.runningCount--;
        this.pump();
      }
    }
  }

  private measuredUsage(live: Live): Usage {
    const { input, output } = live.usage;
    const prices = live.agent.prices;
    const cost = prices ? (input * prices.input + output * prices.output) / 1_000_000 : live.usage.cost;
    // Sums of float prices drift in the last digits; a stable value keeps both channels equal.
    return { input, output, cost: Math.round(cost * 1e9) / 1e9, turns: live.usage.turns };
  }

  /** Final output = something other than whitespace, found by scanning the log backwards in chunks. */
  private hasFinalOutput(id: string, bytes: number): boolean {
    for (let end = bytes; end > 0; end -= 64 * 1024) {
      const chunk = this.store.readOutput(id, Math.max(0, end - 64 * 1024), end);
      if (/\S/.test(chunk.toString("latin1"))) return true;
    }
    return false;
  }

  private reportFor(live: Live, bytes: number): { channel: ReportChannel; report?: ReportBody } {
    if (!live.agent.report) return { channel: "opted-out" };
    if (live.toolReport) return { channel: "tool", report: live.toolReport };
    if (bytes > 0) {
      const tail = this.store.readOutput(live.record.id, Math.max(0, bytes - REPORT_SCAN_BYTES), bytes).toString("utf8");
      const report = extractPromptJsonReport(tail);
      if (report) return { channel: "prompt-json", report };
    }
    return { channel: "none" };
  }

  private pump(): void {
    while (!this.closed && this.runningCount < this.maxRunning && this.queue.length > 0) {
      const id = this.queue.shift()!;
      const live = this.live.get(id);
      if (live && live.record.status === "queued") this.start(live);
    }
  }

  private transition(live: Live, to: TaskStatus, mutate?: (r: TaskRecord) => void): void {
    const from = live.record.status;
    assertTransition(live.record.id, from, to);
    const next: TaskRecord = { ...live.record, status: to };
    mutate?.(next);
    if (!this.store.replace(next, { status: from, owner: this.owner })) {
      // Only a reaper that believed this host dead could have moved it; the record is not ours now.
      throw new TaskError("task_not_owner", `task ${live.record.id} was changed by another host while this host owned it`, live.record.id);
    }
    live.record = next;
  }

  private getOrThrow(id: string): TaskRecord {
    if (typeof id !== "string" || id.length === 0) throw invalidArgument("task_id", "a task id string", id);
    const r = this.get(id);
    if (!r) throw new TaskError("task_not_found", `unknown task id "${id}"; list task ids with ptc_task_list`, id);
    return r;
  }

  private fullLogPath(id: string, total: number): string {
    const path = this.store.outputPath(id);
    if (path) return path;
    // In-memory logs have no file: the spill holds the log, extended with what arrived since the
    // last read (appended, never rewritten, so polling a growing log stays cheap).
    mkdirSync(this.spillDir, { recursive: true });
    const spill = join(this.spillDir, `${id}.log`);
    const written = this.spilled.get(id) ?? 0;
    if (written === 0) writeFileSync(spill, this.store.readOutput(id, 0, total));
    else if (total > written) appendFileSync(spill, this.store.readOutput(id, written, total));
    this.spilled.set(id, Math.max(written, total));
    return spill;
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
