// One program run from the host's side: dispatching the program's tool calls (with the in-flight
// limit and FIFO queue), collecting output, console and stores, cancelling what is left at the
// end, and building the RunResult.
import type { RunCallbacks, RunHandle, SandboxEngine } from "../engine/engine.js";
import type { ConsoleLine, DoneMessage, GuestError, RunRequest } from "../engine/protocol.js";
import { prepareCalls, toolRejection, ToolError, type ApprovalAnswer, type ApprovalRequest, type PerCall, type ResultView, type Tool, type ToolCaller, type ToolHooks } from "../tools/index.js";
import { encodeToolResult } from "../engine/bjson.js";
import type { ApprovalAnswerInput, RememberedApprovals } from "./approvals.js";
import { codeDigest, ContinuationError, newContinuationId, type ContinuationVault, type PendingApproval, type SuspendedRun } from "./continuation.js";
import { ClockRecord, randomSeed, Replayer, splitClock, type LedgerCall } from "./ledger.js";
import { engineLimits, type Limits } from "./limits.js";
import { formatBytes, headChars, tailChars } from "../text.js";
import { OutputCollector } from "./output.js";
import { buildInterruptedResult, buildRunResult, type CallRecord, type RunResult } from "./run-result.js";
import { jsonDepth, MAX_ARGUMENT_DEPTH, MAX_VALUE_DEPTH, parseGuestJson } from "./guest-json.js";
import { stripTypes, unfence, type FenceNote } from "./source.js";
import { toolMapFacts } from "./tool-set.js";
import { CALL_ABORT, LazyAbort, type LazyAbortCarrier } from "../tools/call-signal.js";
import { diagnose, floatingCalls, mayDropPromises, type Diagnosis, type Floating } from "./diagnose.js";
import type { TraceScope } from "../tracing.js";

/** Calls listed in `details.calls`; past it they are counted. */
const CALL_RECORDS = 200;
const ARGS_PREVIEW = 200;
const CONSOLE_LINES = 500;
/**
 * Programs longer than this are run as they are and not analysed: stripping types and parsing
 * happen on the host's own thread (~1 ms per 10 KB), and no model writes a program this long.
 */
const MAX_ANALYSED_CHARS = 512 * 1024;
/** Tools whose results say how polled tasks stand: a deadline reached while polling names the last statuses. */
const TASK_TOOLS = new Set(["ptc_task_output", "ptc_task_list", "ptc_subagent", "ptc_task_wait"]);
/** Binary results below this many bytes of encoding go as JSON text instead (see runCall). */
const BINARY_MIN_BYTES = 2048;
/** After this many small results in a row, a tool's results are no longer encoded only to be dropped. */
const SMALL_STREAK = 8;
/** A person asked during a run must answer this long before its deadline; later, the run interrupts instead. */
const ASK_MARGIN_MS = 2_000;
/** Tasks whose last seen status is kept. */
const TASK_STATUSES = 50;

export interface RunEnvironment {
  engine: SandboxEngine;
  /** Tools as the program reaches them, by path ("name" or "namespace.name"). */
  tools: ReadonlyMap<string, Tool>;
  hooks?: ToolHooks;
  development: boolean;
  spillDir: string;
  /** The session's stored values (JSON strings), updated as the program stores. */
  store: Map<string, string>;
  /** Called after the program changed the store, so a persisted session can be written back. */
  onStored?: () => void;
  /** Where the program's tool calls put their spans (the run's span); absent when nothing is traced. */
  trace?: TraceScope;
  /** Sees text() output as the program flushes it, while it runs (progress for a client). */
  onOutput?: (chunks: readonly string[]) => void;
  /** Names not bound, with why: `CodemodeOptions.unavailableTools`. */
  unavailable?: Record<string, string>;
  /** Present for a top-level program that may reach a call needing approval: the run is recorded so it can be resumed. */
  approvals?: RunApprovals;
}

/** Asks a person now (an MCP client's elicitation, a terminal); undefined: nobody can, interrupt instead. */
export type ApprovalAsker = (pending: PendingApproval[], signal: AbortSignal) => Promise<Record<string, ApprovalAnswerInput> | undefined>;

export interface RunApprovals {
  remembered: RememberedApprovals;
  vault: ContinuationVault;
  ask?: ApprovalAsker;
  /** How the content of an interrupted result tells the reader to resume (library call or tool call). */
  resumeHint: (continuation: string, pending: readonly PendingApproval[]) => string;
}

/** A resumed run: the state it continues and the person's answers, by approval id. */
export interface Resumption {
  state: SuspendedRun;
  answers: Map<string, { decision: "allow" | "deny"; remember: boolean; reason?: string }>;
}

export interface RunSettings {
  runId: string;
  code: string;
  limits: Limits;
  session: string;
  signal?: AbortSignal;
  resultView?: ResultView;
  depth: number;
  taskId?: string;
  globals: Record<string, unknown>;
  resume?: Resumption;
}

interface CallState {
  /** The call's number in the run: 1, 2, … in the order the program issued them. */
  seq: number;
  record: CallRecord;
  /** The call's cancellation; its AbortSignal is made only when something reads it. */
  abort: LazyAbort;
  started: number;
  finished: boolean;
  tool?: Tool;
  argsJson: string;
  /** Stopped at the approval gate while the run is interrupted: it holds no in-flight slot and never runs. */
  parked?: boolean;
}

/** How the program that ran differs from the text that was sent: noted in `details.source`. */
export interface SourceNote {
  /** The program came inside a Markdown code fence. */
  fence?: FenceNote;
  /** TypeScript types were stripped (positions kept). */
  typescript?: true;
}

/**
 * One run, step by step: run the program (retrying it as TypeScript when QuickJS refused it),
 * cancel what it left running, stop if a resumed program left its recorded path, suspend it if
 * it stopped for an approval, find the promises it dropped, and build its result. Each step is
 * a method of the one ProgramRun that holds the run's state.
 */
export async function executeRun(env: RunEnvironment, settings: RunSettings): Promise<RunResult> {
  const run = new ProgramRun(env, settings);
  await run.execute();
  run.cancelLeftovers();
  run.checkReplayed();
  const interrupted = run.suspend();
  if (interrupted) return interrupted;
  // Most runs drop nothing: then this step costs no turn of the microtask queue.
  const dropped = run.noteDroppedPromises();
  if (dropped) await dropped;
  return run.result();
}

/** A person's answer to one approval, normalised. */
type Decision = { decision: "allow" | "deny"; remember: boolean; reason?: string };

/** The state of one run and the steps over it. Its fields are written only by its own methods. */
class ProgramRun {
  private readonly runId: string;
  private readonly started = performance.now();
  private readonly limits: Limits;
  private readonly output: OutputCollector;
  /** How the program that ran differs from the text that was sent. */
  private readonly source: SourceNote = {};
  /** The program that runs: fences taken out, types stripped once QuickJS refused it. */
  private code: string;
  /** The program as the user wrote it (fences taken out): code frames and hints quote it; stripping keeps positions. */
  private readonly written: string;
  private handle!: RunHandle;
  /** How this run calls tools: options checked once, at the first call. */
  private caller: ToolCaller | undefined;
  private done!: DoneMessage;
  private diagnosis: Diagnosis = {};
  /** The program has ended: calls still running are cancelled, results no longer reach it. */
  private ended = false;

  // ---- the program's calls --------------------------------------------------------------------
  private readonly calls = new Map<number, CallState>();
  private readonly records: CallRecord[] = [];
  /** Calls waiting for an in-flight slot, in the order they were made. */
  private readonly queue: CallState[] = [];
  private readonly consoleLines: ConsoleLine[] = [];
  private readonly warnings: string[] = [];
  private readonly callsByTool = new Map<string, number>();
  /** Per tool, how many results in a row crossed as JSON for being small (see runCall). */
  private readonly smallResults = new Map<string, number>();
  private readonly taskStatuses = new Map<string, string>();
  private callCount = 0;
  /** Calls holding an in-flight slot. */
  private running = 0;
  /** Calls left when the program ended, that its result reports as cancelled. */
  private cancelled: CallState[] = [];

  // ---- replay and approvals (a replayable run: seeded random, recorded clock and calls) ---------
  private readonly approvals: RunApprovals | undefined;
  private readonly resume: Resumption | undefined;
  private readonly originRunId: string;
  /** Math.random's seed: only a replayable run has one (a seed costs a call into the system's random source). */
  private readonly seed: number[] | undefined;
  private readonly clock = new ClockRecord();
  private readonly ledger: LedgerCall[] = [];
  private readonly replayer: Replayer | undefined;
  private readonly pending: Array<PendingApproval & { seq: number; path: string }> = [];
  /** The first call that stopped for a person: calls issued after it do not run. */
  private firstGate: number | undefined;
  private interrupting = false;
  private interrupted = false;
  private diverged: string | undefined;
  private settledCount = 0;
  /** Calls that really ran (not answered from the ledger). */
  private liveCalls = 0;
  /** Replayed results waiting for their turn (the order and time they settled in the first run). */
  private readonly ready = new Map<number, { state: CallState; call: LedgerCall }>();
  private nextRelease = 0;
  private releaseTimer: ReturnType<typeof setTimeout> | undefined;
  /** The question being put to a person now, which calls reaching the gate meanwhile join. */
  private asking: { entries: PendingApproval[]; answers: Promise<Record<string, ApprovalAnswerInput> | undefined> } | undefined;
  private asked: Promise<unknown> = Promise.resolve();

  /** What the engine reports while the program runs. */
  private readonly callbacks: RunCallbacks = {
    onCall: (callId, path, sentJson) => this.onCall(callId, path, sentJson),
    onFlush: (text, lines) => this.onFlush(text, lines),
    onStore: (key, json) => {
      if (json === undefined) this.env.store.delete(key);
      else this.env.store.set(key, json);
      this.env.onStored?.();
    },
  };

  constructor(
    private readonly env: RunEnvironment,
    private readonly settings: RunSettings,
  ) {
    this.runId = settings.runId;
    this.limits = settings.limits;
    this.resume = settings.resume;
    this.approvals = env.approvals;
    this.originRunId = this.resume?.state.run_id ?? this.runId;
    this.seed = this.resume?.state.seed ?? (this.approvals ? randomSeed() : undefined);
    this.replayer = this.resume ? new Replayer(this.resume.state.calls) : undefined;
    this.output = new OutputCollector(this.limits.outputBudget, env.spillDir, this.runId, this.limits.maxSpillBytes);
    const fenced = unfence(settings.code);
    if (fenced) this.source.fence = fenced.fence;
    this.code = fenced ? fenced.code : settings.code;
    this.written = this.code;
  }

  // ---- step 1: run the program ----------------------------------------------------------------

  /** Runs the program; one QuickJS refused is tried again as TypeScript (compiling runs nothing). */
  async execute(): Promise<void> {
    const { signal } = this.settings;
    const onAbort = () => this.handle.abort();
    this.launch();
    if (signal) {
      if (signal.aborted) this.handle.abort();
      else signal.addEventListener("abort", onAbort, { once: true });
    }
    try {
      this.done = this.takeOutput(await this.handle.done);
      if (this.done.error?.kind === "syntax" && !signal?.aborted && analysable(this.code, this.done.error)) await this.retryAsTypeScript();
    } catch (error) {
      this.output.close();
      throw error;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  private launch(): void {
    const { env, settings } = this;
    const determinism = this.approvals ? { seed: this.seed!, clock: this.resume?.state.clock ?? [] } : undefined;
    const request: RunRequest = {
      runId: this.runId,
      code: this.code,
      session: settings.session,
      limits: engineLimits(this.limits),
      tools: toolMapFacts(env.tools).paths,
      ...(env.unavailable ? { unavailable: env.unavailable } : {}),
      globals: settings.globals,
      store: Object.fromEntries(env.store),
      ...(determinism ? { determinism } : {}),
    };
    this.handle = env.engine.run(request, this.callbacks, settings.signal);
  }

  private async retryAsTypeScript(): Promise<void> {
    const stripped = await stripTypes(this.code).catch(() => undefined);
    if (stripped?.unsupported) {
      const { construct, line, column, fix, message } = stripped.unsupported;
      this.source.typescript = true;
      this.done = {
        ...this.done,
        error: { kind: "syntax", message: message ?? `TypeScript ${construct} is not supported: it needs generated code, and only types are stripped here`, line, column },
      };
      this.diagnosis = { hint: fix };
    } else if (stripped?.changed) {
      this.source.typescript = true;
      this.code = stripped.code;
      this.launch();
      if (this.settings.signal?.aborted) this.handle.abort();
      this.done = this.takeOutput(await this.handle.done);
    }
  }

  /** The run's last output arrives with its result, after every flush before it. */
  private takeOutput(message: DoneMessage): DoneMessage {
    if (message.text || message.console) this.onFlush(message.text ?? [], message.console ?? []);
    return message;
  }

  private onFlush(text: string[], lines: ConsoleLine[]): void {
    if (text.length) this.output.append(text);
    if (text.length) this.env.onOutput?.(text);
    for (const line of lines) if (this.consoleLines.length < CONSOLE_LINES) this.consoleLines.push(line);
  }

  // ---- the program's calls, while it runs -----------------------------------------------------

  private onCall(callId: number, path: string, sentJson: string): void {
    let argsJson = sentJson;
    if (this.approvals) {
      const split = splitClock(sentJson);
      argsJson = split.args;
      this.clock.add(split.readings);
    }
    this.callCount++;
    this.callsByTool.set(path, (this.callsByTool.get(path) ?? 0) + 1);
    const record: CallRecord = { id: callId, tool: path, args: preview(argsJson), status: "ok", durationMs: 0 };
    if (this.records.length < CALL_RECORDS) this.records.push(record);
    const state: CallState = { seq: this.callCount, record, abort: new LazyAbort(), started: 0, finished: false, tool: this.env.tools.get(path), argsJson };
    this.calls.set(callId, state);
    if (this.replayer && !this.diverged) {
      const match = this.replayer.match(state.seq, path, argsJson);
      if (match.kind === "diverged") {
        this.diverge(match.message);
        return;
      }
      if (match.kind === "recorded") {
        record.replayed = true;
        this.ready.set(match.call.order, { state, call: match.call });
        this.release();
        return;
      }
    }
    if (this.diverged) return;
    this.liveCalls++;
    // Issued after a gate too: it goes as far as the gate, where it stops unrun (or joins the question).
    if (this.running < this.limits.maxInFlight) this.start(state, callId);
    else this.queue.push(state);
  }

  private start(state: CallState, callId: number): void {
    this.running++;
    state.started = performance.now();
    void this.runCall(state).then(
      (value) => this.finishCall(state, callId, true, value),
      (error) => this.finishCall(state, callId, false, error),
    );
  }

  private async runCall(state: CallState): Promise<string | Uint8Array> {
    const { settings, limits, runId } = this;
    const tool = state.tool;
    if (!tool) throw new ToolError("tool_not_found", `tools.${state.record.tool} is not bound`);
    // Nesting this deep needs at least two characters a level; past it, schema checks and whatever
    // the tool does with the input would overflow the host's stack after the tool already ran.
    if (state.argsJson.length > 2 * MAX_ARGUMENT_DEPTH && jsonDepth(state.argsJson, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH) {
      throw new ToolError("tool_invalid_input", `tools.${state.record.tool}(): the argument is nested more than ${MAX_ARGUMENT_DEPTH} levels deep; pass flatter data (the tool did not run)`);
    }
    let input = parseGuestJson(state.argsJson);
    if (settings.resultView && tool.hasResultViews && input && typeof input === "object" && !Array.isArray(input) && !Object.hasOwn(input, "result_view")) {
      input = { ...(input as Record<string, unknown>), result_view: settings.resultView };
    }
    // Plain JSON goes in QuickJS's own format, which the guest reads ~3x faster than JSON text;
    // anything else (and anything near the limit) takes the JSON path and its errors.
    // A recorded run keeps JSON text: its ledger replays results as the text they first were.
    const binary = this.handle.binaryResults && !this.approvals;
    const path = state.record.tool;
    // The program, not the model, reads these results: the crossing limit bounds them, not the
    // output budget, and the model's text of a tool with an output is never built. Made at the
    // first call, so a bad option fails that call, as it always did.
    const abort = state.abort;
    const call: PerCall & LazyAbortCarrier = {
      // The signal is made when first read (most tools never do): see tools/call-signal.ts.
      ctx: {
        get signal() {
          return abort.signal;
        },
        callId: `${runId}:${state.record.id}`,
        runId,
        depth: settings.depth,
        deadline: this.handle.deadline,
        idempotencyKey: `${this.originRunId}:${state.seq}`,
        ...(settings.taskId ? { taskId: settings.taskId } : {}),
      },
      [CALL_ABORT]: abort,
      ...(this.approvals ? { approval: (request: ApprovalRequest) => this.gate(state, request) } : {}),
    };
    this.caller ??= prepareCalls({ hooks: this.env.hooks, trace: this.env.trace, outputBudget: Infinity, development: this.env.development, audience: "program" });
    // Asked when the result is there: the calls of a Promise.all all start before the first ends.
    const wanted = () => (this.smallResults.get(path) ?? 0) < SMALL_STREAK;
    const outcome = await this.caller.forGuest(tool, input, call, binary && !TASK_TOOLS.has(tool.name) && wanted);
    if (TASK_TOOLS.has(tool.name)) this.noteStatuses(outcome.value());
    if (binary && (outcome.encoded || wanted())) {
      const encoded = outcome.encoded ?? encodeToolResult(outcome.value());
      // A small value goes as JSON: results of a poll that arrive as text reach the guest in one
      // call, while each binary one costs its own decode and settle, which outweighs JSON.parse
      // below a few KiB. After a streak of small ones, the tool's next results are expected small
      // too, and not encoded only to be dropped (both paths give the guest the same value: this is
      // speed, not meaning).
      if (encoded && encoded.jsonBytesAtMost <= limits.maxCrossingBytes) {
        if (encoded.bytes.length >= BINARY_MIN_BYTES) {
          this.smallResults.delete(path);
          return encoded.bytes;
        }
        this.smallResults.set(path, (this.smallResults.get(path) ?? 0) + 1);
      }
    }
    const value = outcome.value();
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch (error) {
      throw new ToolError("tool_output_invalid", `tools.${path}() returned a value that is not JSON (${(error as Error).message}); the tool must return JSON data`);
    }
    json ??= "null";
    const bytes = Buffer.byteLength(json);
    // A large one ends the streak: the tool's next result is encoded again.
    if (bytes >= BINARY_MIN_BYTES) this.smallResults.delete(path);
    if (bytes > limits.maxCrossingBytes) {
      throw new ToolError("crossing_limit", `tools.${path}() returned ${formatBytes(bytes)} of JSON; one value crossing the sandbox wall is limited to ${formatBytes(limits.maxCrossingBytes)}`);
    }
    return json;
  }

  /** The last status seen of each task, from ptc_* results, for a run that ends while polling. */
  private noteStatuses(value: unknown): void {
    const { taskStatuses } = this;
    const note = (record: unknown): void => {
      if (!record || typeof record !== "object") return;
      const { task_id: taskId, id, status } = record as Record<string, unknown>;
      const key = typeof taskId === "string" ? taskId : typeof id === "string" ? id : undefined;
      if (key === undefined || typeof status !== "string") return;
      taskStatuses.delete(key);
      taskStatuses.set(key, status);
      if (taskStatuses.size > TASK_STATUSES) taskStatuses.delete(taskStatuses.keys().next().value as string);
    };
    note(value);
    const tasks = (value as { tasks?: unknown } | null)?.tasks;
    if (Array.isArray(tasks)) for (const task of tasks.slice(0, TASK_STATUSES)) note(task);
  }

  private finishCall(state: CallState, callId: number, ok: boolean, payload: unknown): void {
    if (state.finished) return;
    state.finished = true;
    if (!state.parked) this.running--;
    state.record.durationMs = round(performance.now() - state.started);
    let json: string | Uint8Array;
    if (ok) {
      json = payload as string | Uint8Array;
    } else {
      const failure = toolRejection(payload);
      state.record.status = this.ended ? "cancelled" : "error";
      state.record.error = failure.message.length > ARGS_PREVIEW ? headChars(failure.message, ARGS_PREVIEW) + "…" : failure.message;
      json = JSON.stringify(failure);
    }
    if (this.approvals && !this.ended && !state.parked) {
      this.ledger.push({ seq: state.seq, path: state.record.tool, args: state.argsJson, ok, json: json as string, order: this.settledCount++, at: round(performance.now() - this.started) });
    }
    this.handle.settle(callId, ok, json);
    this.startQueued();
    this.checkQuiet();
  }

  private startQueued(): void {
    while (this.running < this.limits.maxInFlight) {
      const next = this.queue.shift();
      if (!next) return;
      this.start(next, next.record.id);
    }
  }

  /** Replayed results go back to the program in the order, and no earlier than the time, they first settled. */
  private release(): void {
    if (this.releaseTimer !== undefined || this.ended) return;
    for (;;) {
      const next = this.ready.get(this.nextRelease);
      if (!next) return;
      const wait = next.call.at - (performance.now() - this.started);
      if (wait > 1) {
        this.releaseTimer = setTimeout(() => {
          this.releaseTimer = undefined;
          this.release();
        }, wait);
        return;
      }
      this.ready.delete(this.nextRelease++);
      const { state, call } = next;
      state.finished = true;
      if (!call.ok) {
        state.record.status = "error";
        try {
          state.record.error = preview(String((JSON.parse(call.json) as { message?: unknown }).message ?? ""));
        } catch {
          // A recorded failure is the host's own JSON.
        }
      }
      this.ledger.push({ ...call, order: this.settledCount++, at: round(performance.now() - this.started) });
      this.handle.settle(state.record.id, call.ok, call.json);
      this.checkQuiet();
    }
  }

  /** The resumed program left the recorded path: it stops before any host call runs. */
  private diverge(message: string): void {
    this.diverged ??= message;
    this.handle.abort();
  }

  /**
   * The approval gate of one call (tools/invoke.ts): a standing decision (the resume's answers, a
   * remembered approval) or a person asked now; otherwise the run is interrupted here. While it
   * is, every later call stops here too, unrun.
   */
  private async gate(state: CallState, request: ApprovalRequest): Promise<ApprovalAnswer> {
    const approvals = this.approvals!;
    const { session } = this.settings;
    // Issued after the call the run stops for: it runs (or is decided again) when the program resumes.
    const afterGate = this.interrupting && state.seq > this.firstGate!;
    if (!request.required) return afterGate ? this.park(state) : "allow";
    const entry = { approval_id: `call_${state.seq}`, tool: request.tool.id, input: request.input, digest: request.digest };
    const answered = this.resume?.state.pending.find((p) => p.seq === state.seq && p.digest === request.digest);
    const answer = answered ? this.resume!.answers.get(answered.approval_id) : undefined;
    if (answer) {
      if (answer.remember) approvals.remembered.remember({ session, tool: entry.tool, digest: entry.digest, decision: answer.decision, input: entry.input });
      if (afterGate) return this.park(state);
      return answer.decision === "allow" ? "allow" : { deny: denial(entry.tool, answer.reason) };
    }
    const remembered = approvals.remembered.match(session, request.digest);
    if (remembered) {
      if (afterGate) return this.park(state);
      return remembered.decision === "allow" ? "allow" : { deny: denial(entry.tool, "a decision remembered for this session") };
    }
    if (approvals.ask && !this.interrupting) {
      const asked = await this.askPerson(entry, state.abort.signal);
      if (asked) {
        if (asked.remember) approvals.remembered.remember({ session, tool: entry.tool, digest: entry.digest, decision: asked.decision, input: entry.input });
        return asked.decision === "allow" ? "allow" : { deny: denial(entry.tool, asked.reason) };
      }
    }
    this.pending.push({ ...entry, seq: state.seq, path: state.record.tool });
    state.record.awaitingApproval = entry.approval_id;
    if (!this.interrupting) {
      this.interrupting = true;
      this.firstGate = state.seq;
    } else if (state.seq < this.firstGate!) {
      this.firstGate = state.seq;
    }
    return this.park(state);
  }

  /** A call stopped at the gate: its slot is freed, and it waits until the run ends (then it is cancelled, unrun). */
  private park(state: CallState): Promise<ApprovalAnswer> {
    state.parked = true;
    this.running--;
    this.startQueued();
    this.checkQuiet();
    return new Promise((_, reject) => {
      const stop = () => reject(new ToolError("tool_aborted", `tools.${state.record.tool}() did not run: the program stopped to ask for an approval`));
      const signal = state.abort.signal;
      if (signal.aborted) stop();
      else signal.addEventListener("abort", stop, { once: true });
    });
  }

  /**
   * Asks the person for calls that reached the gate together, in one question, and one question
   * at a time: calls that reach it while the person is being asked wait for the next one.
   */
  private async askPerson(entry: PendingApproval, signal: AbortSignal): Promise<Decision | undefined> {
    if (!this.asking) {
      const batch: PendingApproval[] = [];
      const answers = Promise.all([this.asked, new Promise<void>((resolve) => setImmediate(resolve))]).then(() => {
        this.asking = undefined;
        // Once the run is stopping for another call, these wait for the continuation with it.
        if (this.interrupting || this.ended) return undefined;
        // A person who has not answered when the run's deadline nears gets the continuation instead.
        const left = this.limits.timeoutMs - (performance.now() - this.started) - ASK_MARGIN_MS;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, Math.max(0, left), undefined)));
        return Promise.race([this.approvals!.ask!(batch, signal).catch(() => undefined), late]).finally(() => clearTimeout(timer));
      });
      this.asking = { entries: batch, answers };
      this.asked = answers.catch(() => undefined);
    }
    this.asking.entries.push(entry);
    const answers = await this.asking.answers;
    const answer = answers?.[entry.approval_id];
    if (answer === undefined) return undefined;
    if (answer === "allow" || answer === "deny") return { decision: answer, remember: false };
    return { decision: answer.decision, remember: answer.remember === true, ...(answer.reason ? { reason: answer.reason } : {}) };
  }

  /**
   * Interrupting: once no call is running or waiting for a slot (the calls issued before the gate
   * have settled and the later ones are parked), and the program has had a turn to issue the rest
   * of a batch, the run stops.
   */
  private checkQuiet(): void {
    if (!this.interrupting || this.interrupted) return;
    // Recorded results still on their way back count too: stopping before them would lose them from the next ledger.
    const quiet = () => this.running === 0 && this.queue.length === 0 && this.ready.size === 0;
    if (!quiet()) return;
    setImmediate(() => {
      if (this.interrupted || !quiet()) return;
      this.interrupted = true;
      this.handle.abort();
    });
  }

  // ---- step 2: cancel what the program left running -------------------------------------------

  /** Whatever the program left running is cancelled: its signal fires and the receipt says so. */
  cancelLeftovers(): void {
    this.ended = true;
    if (this.releaseTimer !== undefined) clearTimeout(this.releaseTimer);
    for (const state of this.calls.values()) {
      if (state.finished) continue;
      state.finished = true;
      state.record.status = "cancelled";
      state.record.durationMs = state.started ? round(performance.now() - state.started) : 0;
      state.abort.abort(new Error("the program ended before this call finished"));
      if (!(this.interrupted && state.parked)) this.cancelled.push(state);
    }
    this.queue.length = 0;
  }

  // ---- step 3: a resumed program must have taken the recorded path ----------------------------

  checkReplayed(): void {
    const { replayer } = this;
    if (replayer && !this.diverged && this.liveCalls === 0 && !this.interrupted && !this.settings.signal?.aborted) {
      const missing = replayer.missing();
      if (missing.length > 0)
        this.diverged = `the resumed program ended without making call ${missing[0]!.seq} (tools.${missing[0]!.path}) that the run it continues made; a resumed program must take the same path up to the approval (no host call was run)`;
    }
    if (this.diverged) {
      this.output.close();
      throw new ContinuationError("diverged", this.diverged);
    }
  }

  // ---- step 4: a run stopped for an approval becomes a continuation ---------------------------

  /** The interrupted result, when the run stopped for an approval and can be resumed. */
  suspend(): RunResult | undefined {
    const { settings, approvals } = this;
    if (!(this.interrupted && this.done.error?.kind === "aborted" && !settings.signal?.aborted)) return undefined;
    this.output.close();
    const state: SuspendedRun = {
      v: 1,
      id: newContinuationId(),
      run_id: this.originRunId,
      session: settings.session,
      code: settings.code,
      code_digest: codeDigest(settings.code),
      seed: this.seed!,
      clock: this.clock.pairs,
      calls: this.ledger,
      pending: this.pending,
      options: { limits: this.limits, ...(settings.resultView ? { resultView: settings.resultView } : {}) },
      created_at: Date.now(),
      expires_at: Date.now() + approvals!.vault.ttlMs,
    };
    let continuation: string;
    try {
      continuation = approvals!.vault.seal(state);
    } catch (error) {
      if (!(error instanceof ContinuationError)) throw error;
      this.done = { ...this.done, error: { kind: "exception", message: `the program stopped for an approval, but it cannot be resumed: ${error.message}` } };
      return undefined;
    }
    const shown = this.pending.map(({ approval_id, tool, input, digest }) => ({ approval_id, tool, input, digest }));
    return buildInterruptedResult({ ...this.receipt(), warnings: [...this.done.warnings, ...this.warnings], source: this.source }, shown, continuation, approvals!.resumeHint(continuation, shown));
  }

  // ---- step 5: promises the program dropped ---------------------------------------------------

  /** Found by a parse only when a text check or a cancelled call says there may be some. */
  noteDroppedPromises(): Promise<void> | undefined {
    const parse = analysable(this.code, this.done.error) && (this.cancelled.length > 0 || mayDropPromises(this.code));
    // Nothing cancelled and nothing the text check flags: there is nothing to note.
    if (!parse && this.cancelled.length === 0) return undefined;
    return this.noteDropped(parse);
  }

  private async noteDropped(parse: boolean): Promise<void> {
    const { code, cancelled, warnings, done } = this;
    const floating = parse ? await floatingCalls(code, this.env.tools).catch(() => [] as Floating[]) : [];
    const sites = new Map<string, Floating[]>();
    // Calls made as statements, or kept in a variable nothing awaited by the end.
    for (const site of floating) if (site.kind === "tool" || site.kind === "kept") sites.set(site.callee, [...(sites.get(site.callee) ?? []), site]);
    for (const state of cancelled) {
      const site = sites.get(`tools.${state.record.tool}`);
      const at = site?.length === 1 ? ` at line ${site[0]!.line}` : "";
      // "Missing await" only fits a program that ended on its own; a stopped one was still waiting.
      const why = done.ok ? ` — missing await?${at ? ` Write await tools.${state.record.tool}(…).` : ""}` : ` when the run stopped (${done.error?.kind ?? "error"})`;
      warnings.push(`tools.${state.record.tool}(${state.record.args})${at} was still pending and was cancelled${why}`);
    }
    for (const site of floating) {
      if (site.kind === "forEach") {
        warnings.push(
          `${site.callee}(async …) at line ${site.line} does not wait for its callbacks: their tool calls are cancelled when the program ends and their errors are lost — write for (const item of …) { await … } or await Promise.all(items.map(async (item) => …))`,
        );
        continue;
      }
      if (site.kind === "combinator") {
        warnings.push(`${site.callee}(…) at line ${site.line} is not awaited, so the program does not wait for it — write await ${site.callee}(…)`);
        continue;
      }
      if (site.kind === "async") {
        warnings.push(
          `${site.callee}() at line ${site.line} calls an async function without await, so the program does not wait for it: its errors are lost and its tool calls are cancelled when the program ends — write await ${site.callee}()`,
        );
        continue;
      }
      // A kept promise may be awaited later: only a cancelled call of it is noted, above.
      if (site.kind === "kept") continue;
      const path = site.callee.slice("tools.".length);
      if (cancelled.some((state) => state.record.tool === path)) continue;
      const failed = this.records.find((record) => record.tool === path && record.status === "error");
      const outcome = failed ? `; it failed and nothing caught it: ${failed.error}` : "";
      warnings.push(`${site.callee}(…) at line ${site.line} is neither awaited nor kept, so the program does not wait for it${outcome} — write await ${site.callee}(…)`);
    }
  }

  // ---- step 6: the result ---------------------------------------------------------------------

  async result(): Promise<RunResult> {
    const { done } = this;
    const value = this.returnValue();
    let error = done.error && boundMessage(done.error);
    if (error) {
      if (this.diagnosis.hint === undefined && analysable(this.code, done.error)) this.diagnosis = await this.diagnose(error);
      error = withDiagnosis(error, this.diagnosis);
    }
    // Named fields, not spreads: a spread followed by more fields takes V8's slow path (microseconds per run).
    const receipt = this.receipt();
    return buildRunResult({
      runId: receipt.runId,
      durationMs: receipt.durationMs,
      calls: receipt.calls,
      callCount: receipt.callCount,
      callsOmitted: receipt.callsOmitted,
      console: receipt.console,
      ok: done.ok,
      value: value.value,
      hasValue: value.hasValue,
      error,
      code: this.written,
      source: this.source,
      warnings: [...done.warnings, ...this.warnings],
      output: this.output,
      outputBudget: this.limits.outputBudget,
    });
  }

  /** The program's return value, parsed; none when it is nested deeper than the host passes on. */
  private returnValue(): { value: unknown; hasValue: boolean } {
    const { valueJson } = this.done;
    if (valueJson === undefined) return { value: undefined, hasValue: false };
    // A value nested deeper than the host can serialise would make run() (or whoever sends the
    // result on, such as the MCP server) throw a RangeError: it is dropped with a warning.
    if (jsonDepth(valueJson, MAX_VALUE_DEPTH) > MAX_VALUE_DEPTH) {
      this.warnings.push(`the return value is nested more than ${MAX_VALUE_DEPTH} levels deep, past what the host passes on; it was dropped`);
      return { value: undefined, hasValue: false };
    }
    return { value: JSON.parse(valueJson), hasValue: true };
  }

  private diagnose(error: GuestError): Promise<Diagnosis> {
    return diagnose({
      code: this.code,
      source: this.written,
      error,
      tools: this.env.tools,
      resultView: this.settings.resultView,
      timeoutMs: this.limits.timeoutMs,
      maxToolCalls: this.limits.maxToolCalls,
      callsByTool: this.callsByTool,
      taskStatuses: this.taskStatuses,
      failedCalls: this.records.filter((record) => record.status === "error"),
    });
  }

  /** What every result of the run reports about it: its id, duration, calls and console. */
  private receipt(): { runId: string; durationMs: number; calls: CallRecord[]; callCount: number; callsOmitted: number; console: ConsoleLine[] } {
    return {
      runId: this.runId,
      durationMs: round(performance.now() - this.started),
      calls: this.records,
      callCount: this.callCount,
      callsOmitted: Math.max(0, this.callCount - this.records.length),
      console: this.consoleLines,
    };
  }
}

/**
 * Whether the host reads the program (to strip types or diagnose): not when it is too long, nor
 * when QuickJS's own parser ran out of stack on it (nesting that deep would only cost the host's
 * parsers the same, on the host's thread).
 */
function analysable(code: string, error: GuestError | undefined): boolean {
  return code.length <= MAX_ANALYSED_CHARS && !(error?.kind === "syntax" && /stack overflow/i.test(error.message));
}

/** The engine's error with what diagnosis found: a clearer message, the fix, a position it lacked. */
function withDiagnosis(error: GuestError & { hint?: string }, diagnosis: Diagnosis): GuestError & { hint?: string } {
  const out: GuestError & { hint?: string } = { ...error };
  if (diagnosis.message !== undefined) out.message = diagnosis.message;
  if (diagnosis.hint !== undefined) out.hint = diagnosis.hint;
  if (diagnosis.line !== undefined && (error.line === undefined || diagnosis.message !== undefined || diagnosis.relocated)) {
    out.line = diagnosis.line;
    out.column = diagnosis.column;
  }
  return out;
}

/** Longest failure message kept; it reaches the model in content, so it must not flood the budget. */
const ERROR_MESSAGE_CHARS = 2_000;

/** A thrown value's message can be any size (`throw "x".repeat(1e6)`): keep its head and tail. */
function boundMessage(error: GuestError): GuestError {
  const { message } = error;
  if (message.length <= ERROR_MESSAGE_CHARS) return error;
  const half = ERROR_MESSAGE_CHARS / 2;
  const head = headChars(message, half);
  const tail = tailChars(message, half);
  const cut = message.length - head.length - tail.length;
  return { ...error, message: `${head}… [${cut} characters cut] …${tail}` };
}

function preview(json: string): string {
  return json.length > ARGS_PREVIEW ? headChars(json, ARGS_PREVIEW) + "…" : json;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/** The message a denied call rejects with (tool_denied / approval_denied): who decided, and why when they said. */
function denial(tool: string, reason: string | undefined): string {
  return `tool "${tool}" call denied: the person asked to approve it said no${reason ? ` (${reason})` : ""}; the tool did not run`;
}
