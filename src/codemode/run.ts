// One program run from the host's side: dispatching the program's tool calls (with the in-flight
// limit and FIFO queue), collecting output, console and stores, cancelling what is left at the
// end, and building the RunResult.
import type { SandboxEngine } from "../engine/engine.js";
import type { ConsoleLine, DoneMessage, GuestError } from "../engine/protocol.js";
import { prepareCalls, toolRejection, ToolError, type ApprovalAnswer, type ApprovalRequest, type ResultView, type Tool, type ToolCaller, type ToolHooks } from "../tools/index.js";
import { encodeToolResult } from "../engine/bjson.js";
import type { ApprovalAnswerInput, RememberedApprovals } from "./approvals.js";
import { codeDigest, ContinuationError, newContinuationId, type ContinuationVault, type PendingApproval, type SuspendedRun } from "./continuation.js";
import { ClockRecord, randomSeed, Replayer, splitClock, type LedgerCall } from "./ledger.js";
import { engineLimits, type Limits } from "./limits.js";
import { formatBytes, headChars, tailChars } from "../text.js";
import { OutputCollector } from "./output.js";
import { buildInterruptedResult, buildRunResult, type CallRecord, type RunResult } from "./run-result.js";
import { jsonDepth, MAX_VALUE_DEPTH, parseGuestJson } from "./guest-json.js";
import { stripTypes, unfence, type FenceNote } from "./source.js";
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
  controller: AbortController;
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

export async function executeRun(env: RunEnvironment, settings: RunSettings): Promise<RunResult> {
  const { runId } = settings;
  const started = performance.now();
  const resume = settings.resume;
  // A replayable run: seeded random, recorded clock and calls, an approval gate that can interrupt.
  const approvals = env.approvals;
  const originRunId = resume?.state.run_id ?? runId;
  const seed = resume?.state.seed ?? randomSeed();
  const clock = new ClockRecord();
  const ledger: LedgerCall[] = [];
  const replayer = resume ? new Replayer(resume.state.calls) : undefined;
  const pending: Array<PendingApproval & { seq: number; path: string }> = [];
  /** The first call that stopped for a person: calls issued after it do not run. */
  let firstGate: number | undefined;
  let interrupting = false;
  let interrupted = false;
  let diverged: string | undefined;
  let settledCount = 0;
  let liveCalls = 0;
  /** Replayed results waiting for their turn (the order and time they settled in the first run). */
  const ready = new Map<number, { state: CallState; call: LedgerCall }>();
  let nextRelease = 0;
  let releaseTimer: ReturnType<typeof setTimeout> | undefined;
  const { limits } = settings;
  const output = new OutputCollector(limits.outputBudget, env.spillDir, runId, limits.maxSpillBytes);
  const consoleLines: ConsoleLine[] = [];
  const calls = new Map<number, CallState>();
  const records: CallRecord[] = [];
  const warnings: string[] = [];
  const queue: CallState[] = [];
  const callsByTool = new Map<string, number>();
  const taskStatuses = new Map<string, string>();
  let callCount = 0;
  let running = 0;
  let ended = false;

  const source: SourceNote = {};
  let code = settings.code;
  const fenced = unfence(code);
  if (fenced) {
    code = fenced.code;
    source.fence = fenced.fence;
  }
  /** The program as the user wrote it (fences taken out): code frames and hints quote it; stripping keeps positions. */
  const written = code;

  const callbacks = {
    onCall(callId: number, path: string, sentJson: string) {
      let argsJson = sentJson;
      if (approvals) {
        const split = splitClock(sentJson);
        argsJson = split.args;
        clock.add(split.readings);
      }
      callCount++;
      callsByTool.set(path, (callsByTool.get(path) ?? 0) + 1);
      const record: CallRecord = { id: callId, tool: path, args: preview(argsJson), status: "ok", durationMs: 0 };
      if (records.length < CALL_RECORDS) records.push(record);
      const state: CallState = { seq: callCount, record, controller: new AbortController(), started: 0, finished: false, tool: env.tools.get(path), argsJson };
      calls.set(callId, state);
      if (replayer && !diverged) {
        const match = replayer.match(state.seq, path, argsJson);
        if (match.kind === "diverged") return diverge(match.message);
        if (match.kind === "recorded") {
          record.replayed = true;
          ready.set(match.call.order, { state, call: match.call });
          return release();
        }
      }
      if (diverged) return;
      liveCalls++;
      // Issued after a gate too: it goes as far as the gate, where it stops unrun (or joins the question).
      if (running < limits.maxInFlight) start(state, callId);
      else queue.push(state);
    },
    onFlush(text: string[], lines: ConsoleLine[]) {
      if (text.length) output.append(text);
      if (text.length) env.onOutput?.(text);
      for (const line of lines) if (consoleLines.length < CONSOLE_LINES) consoleLines.push(line);
    },
    onStore(key: string, json: string | undefined) {
      if (json === undefined) env.store.delete(key);
      else env.store.set(key, json);
      env.onStored?.();
    },
  };
  const determinism = approvals ? { seed, clock: resume?.state.clock ?? [] } : undefined;
  const launch = (program: string) =>
    env.engine.run(
      {
        type: "run",
        runId,
        abortSeq: 0,
        code: program,
        session: settings.session,
        limits: engineLimits(limits),
        deadline: 0,
        tools: [...env.tools.keys()],
        ...(env.unavailable ? { unavailable: env.unavailable } : {}),
        globals: settings.globals,
        store: Object.fromEntries(env.store),
        ...(determinism ? { determinism } : {}),
      },
      callbacks,
      settings.signal,
    );
  let handle = launch(code);
  // The program, not the model, reads these results: the crossing limit bounds them, not the
  // output budget, and the model's text of a tool with an output is never built. Made at the
  // first call, so a bad option fails that call, as it always did.
  let caller: ToolCaller | undefined;

  function start(state: CallState, callId: number): void {
    running++;
    state.started = performance.now();
    void runCall(state).then(
      (value) => finish(state, callId, true, value),
      (error) => finish(state, callId, false, error),
    );
  }

  async function runCall(state: CallState): Promise<string | Uint8Array> {
    const tool = state.tool;
    if (!tool) throw new ToolError("tool_not_found", `tools.${state.record.tool} is not bound`);
    let input = parseGuestJson(state.argsJson);
    if (settings.resultView && tool.hasResultViews && input && typeof input === "object" && !Array.isArray(input) && !Object.hasOwn(input, "result_view")) {
      input = { ...(input as Record<string, unknown>), result_view: settings.resultView };
    }
    // Plain JSON goes in QuickJS's own format, which the guest reads ~3x faster than JSON text;
    // anything else (and anything near the limit) takes the JSON path and its errors.
    // A recorded run keeps JSON text: its ledger replays results as the text they first were.
    const binary = handle.binaryResults && !approvals;
    caller ??= prepareCalls({ hooks: env.hooks, trace: env.trace, outputBudget: Infinity, development: env.development, audience: "program" });
    const outcome = await caller.forGuest(
      tool,
      input,
      {
        ctx: { signal: state.controller.signal, callId: `${runId}:${state.record.id}`, runId, depth: settings.depth, deadline: handle.deadline, idempotencyKey: `${originRunId}:${state.seq}`, ...(settings.taskId ? { taskId: settings.taskId } : {}) },
        ...(approvals ? { approval: (request: ApprovalRequest) => gate(state, request) } : {}),
      },
      binary && !TASK_TOOLS.has(tool.name),
    );
    if (TASK_TOOLS.has(tool.name)) noteStatuses(outcome.value());
    if (binary) {
      const encoded = outcome.encoded ?? encodeToolResult(outcome.value());
      if (encoded && encoded.jsonBytesAtMost <= limits.maxCrossingBytes) return encoded.bytes;
    }
    const value = outcome.value();
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch (error) {
      throw new ToolError("tool_output_invalid", `tools.${state.record.tool}() returned a value that is not JSON (${(error as Error).message}); the tool must return JSON data`);
    }
    json ??= "null";
    const bytes = Buffer.byteLength(json);
    if (bytes > limits.maxCrossingBytes) {
      throw new ToolError(
        "crossing_limit",
        `tools.${state.record.tool}() returned ${formatBytes(bytes)} of JSON; one value crossing the sandbox wall is limited to ${formatBytes(limits.maxCrossingBytes)}`,
      );
    }
    return json;
  }

  /** The last status seen of each task, from ptc_* results, for a run that ends while polling. */
  function noteStatuses(value: unknown): void {
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

  function finish(state: CallState, callId: number, ok: boolean, payload: unknown): void {
    if (state.finished) return;
    state.finished = true;
    if (!state.parked) running--;
    state.record.durationMs = round(performance.now() - state.started);
    let json: string | Uint8Array;
    if (ok) {
      json = payload as string | Uint8Array;
    } else {
      const failure = toolRejection(payload);
      state.record.status = ended ? "cancelled" : "error";
      state.record.error = failure.message.length > ARGS_PREVIEW ? headChars(failure.message, ARGS_PREVIEW) + "…" : failure.message;
      json = JSON.stringify(failure);
    }
    if (approvals && !ended && !state.parked) ledger.push({ seq: state.seq, path: state.record.tool, args: state.argsJson, ok, json: json as string, order: settledCount++, at: round(performance.now() - started) });
    handle.settle(callId, ok, json);
    startQueued();
    checkQuiet();
  }

  function startQueued(): void {
    while (running < limits.maxInFlight) {
      const next = queue.shift();
      if (!next) return;
      start(next, next.record.id);
    }
  }

  /** Replayed results go back to the program in the order, and no earlier than the time, they first settled. */
  function release(): void {
    if (releaseTimer !== undefined || ended) return;
    for (;;) {
      const next = ready.get(nextRelease);
      if (!next) return;
      const wait = next.call.at - (performance.now() - started);
      if (wait > 1) {
        releaseTimer = setTimeout(() => {
          releaseTimer = undefined;
          release();
        }, wait);
        return;
      }
      ready.delete(nextRelease++);
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
      ledger.push({ ...call, order: settledCount++, at: round(performance.now() - started) });
      handle.settle(state.record.id, call.ok, call.json);
      checkQuiet();
    }
  }

  /** The resumed program left the recorded path: it stops before any host call runs. */
  function diverge(message: string): void {
    diverged ??= message;
    handle.abort();
  }

  /**
   * The approval gate of one call (tools/invoke.ts): a standing decision (the resume's answers, a
   * remembered approval) or a person asked now; otherwise the run is interrupted here. While it
   * is, every later call stops here too, unrun.
   */
  async function gate(state: CallState, request: ApprovalRequest): Promise<ApprovalAnswer> {
    // Issued after the call the run stops for: it runs (or is decided again) when the program resumes.
    const afterGate = interrupting && state.seq > firstGate!;
    if (!request.required) return afterGate ? park(state) : "allow";
    const entry = { approval_id: `call_${state.seq}`, tool: request.tool.id, input: request.input, digest: request.digest };
    const answered = resume?.state.pending.find((p) => p.seq === state.seq && p.digest === request.digest);
    const answer = answered ? resume!.answers.get(answered.approval_id) : undefined;
    if (answer) {
      if (answer.remember) approvals!.remembered.remember({ session: settings.session, tool: entry.tool, digest: entry.digest, decision: answer.decision, input: entry.input });
      if (afterGate) return park(state);
      return answer.decision === "allow" ? "allow" : { deny: denial(entry.tool, answer.reason) };
    }
    const remembered = approvals!.remembered.match(settings.session, request.digest);
    if (remembered) {
      if (afterGate) return park(state);
      return remembered.decision === "allow" ? "allow" : { deny: denial(entry.tool, "a decision remembered for this session") };
    }
    if (approvals!.ask && !interrupting) {
      const asked = await askPerson(entry, state.controller.signal);
      if (asked) {
        if (asked.remember) approvals!.remembered.remember({ session: settings.session, tool: entry.tool, digest: entry.digest, decision: asked.decision, input: entry.input });
        return asked.decision === "allow" ? "allow" : { deny: denial(entry.tool, asked.reason) };
      }
    }
    pending.push({ ...entry, seq: state.seq, path: state.record.tool });
    state.record.awaitingApproval = entry.approval_id;
    if (!interrupting) {
      interrupting = true;
      firstGate = state.seq;
    } else if (state.seq < firstGate!) {
      firstGate = state.seq;
    }
    return park(state);
  }

  /** A call stopped at the gate: its slot is freed, and it waits until the run ends (then it is cancelled, unrun). */
  function park(state: CallState): Promise<ApprovalAnswer> {
    state.parked = true;
    running--;
    startQueued();
    checkQuiet();
    return new Promise((_, reject) => {
      const stop = () => reject(new ToolError("tool_aborted", `tools.${state.record.tool}() did not run: the program stopped to ask for an approval`));
      if (state.controller.signal.aborted) stop();
      else state.controller.signal.addEventListener("abort", stop, { once: true });
    });
  }

  /**
   * Asks the person for calls that reached the gate together, in one question, and one question
   * at a time: calls that reach it while the person is being asked wait for the next one.
   */
  let asking: { entries: PendingApproval[]; answers: Promise<Record<string, ApprovalAnswerInput> | undefined> } | undefined;
  let asked: Promise<unknown> = Promise.resolve();
  async function askPerson(entry: PendingApproval, signal: AbortSignal): Promise<{ decision: "allow" | "deny"; remember: boolean; reason?: string } | undefined> {
    if (!asking) {
      const batch: PendingApproval[] = [];
      const answers = Promise.all([asked, new Promise<void>((resolve) => setImmediate(resolve))]).then(() => {
        asking = undefined;
        // Once the run is stopping for another call, these wait for the continuation with it.
        if (interrupting || ended) return undefined;
        // A person who has not answered when the run's deadline nears gets the continuation instead.
        const left = limits.timeoutMs - (performance.now() - started) - ASK_MARGIN_MS;
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, Math.max(0, left), undefined)));
        return Promise.race([approvals!.ask!(batch, signal).catch(() => undefined), late]).finally(() => clearTimeout(timer));
      });
      asking = { entries: batch, answers };
      asked = answers.catch(() => undefined);
    }
    asking.entries.push(entry);
    const answers = await asking.answers;
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
  function checkQuiet(): void {
    if (!interrupting || interrupted) return;
    // Recorded results still on their way back count too: stopping before them would lose them from the next ledger.
    const quiet = () => running === 0 && queue.length === 0 && ready.size === 0;
    if (!quiet()) return;
    setImmediate(() => {
      if (interrupted || !quiet()) return;
      interrupted = true;
      handle.abort();
    });
  }

  const onAbort = () => handle.abort();
  if (settings.signal) {
    if (settings.signal.aborted) handle.abort();
    else settings.signal.addEventListener("abort", onAbort, { once: true });
  }

  let done: DoneMessage;
  let diagnosis: Diagnosis = {};
  /** The run's last output arrives with its result, after every flush before it. */
  const takeOutput = (message: DoneMessage): DoneMessage => {
    if (message.text || message.console) callbacks.onFlush(message.text ?? [], message.console ?? []);
    return message;
  };
  try {
    done = takeOutput(await handle.done);
    // Compiling runs nothing, so a program QuickJS refused can be tried again as TypeScript.
    if (done.error?.kind === "syntax" && !settings.signal?.aborted && analysable(code, done.error)) {
      const stripped = await stripTypes(code).catch(() => undefined);
      if (stripped?.unsupported) {
        const { construct, line, column, fix } = stripped.unsupported;
        source.typescript = true;
        done = { ...done, error: { kind: "syntax", message: `TypeScript ${construct} is not supported: it needs generated code, and only types are stripped here`, line, column } };
        diagnosis = { hint: fix };
      } else if (stripped?.changed) {
        source.typescript = true;
        code = stripped.code;
        handle = launch(code);
        if (settings.signal?.aborted) handle.abort();
        done = takeOutput(await handle.done);
      }
    }
  } catch (error) {
    output.close();
    throw error;
  } finally {
    settings.signal?.removeEventListener("abort", onAbort);
  }
  ended = true;
  if (releaseTimer !== undefined) clearTimeout(releaseTimer);

  // Whatever the program left running is cancelled: its signal fires and the receipt says so.
  const cancelled: CallState[] = [];
  for (const state of calls.values()) {
    if (state.finished) continue;
    state.finished = true;
    state.record.status = "cancelled";
    state.record.durationMs = state.started ? round(performance.now() - state.started) : 0;
    state.controller.abort(new Error("the program ended before this call finished"));
    if (!(interrupted && state.parked)) cancelled.push(state);
  }
  queue.length = 0;

  if (replayer && !diverged && liveCalls === 0 && !interrupted && !settings.signal?.aborted) {
    const missing = replayer.missing();
    if (missing.length > 0) diverged = `the resumed program ended without making call ${missing[0]!.seq} (tools.${missing[0]!.path}) that the run it continues made; a resumed program must take the same path up to the approval (no host call was run)`;
  }
  if (diverged) {
    output.close();
    throw new ContinuationError("diverged", diverged);
  }
  if (interrupted && done.error?.kind === "aborted" && !settings.signal?.aborted) {
    output.close();
    const state: SuspendedRun = {
      v: 1,
      id: newContinuationId(),
      run_id: originRunId,
      session: settings.session,
      code: settings.code,
      code_digest: codeDigest(settings.code),
      seed,
      clock: clock.pairs,
      calls: ledger,
      pending,
      options: { limits, ...(settings.resultView ? { resultView: settings.resultView } : {}) },
      created_at: Date.now(),
      expires_at: Date.now() + approvals!.vault.ttlMs,
    };
    let continuation: string | undefined;
    try {
      continuation = approvals!.vault.seal(state);
    } catch (error) {
      if (!(error instanceof ContinuationError)) throw error;
      done = { ...done, error: { kind: "exception", message: `the program stopped for an approval, but it cannot be resumed: ${error.message}` } };
    }
    if (continuation !== undefined) {
      const shown = pending.map(({ approval_id, tool, input, digest }) => ({ approval_id, tool, input, digest }));
      return buildInterruptedResult(
        { runId, durationMs: round(performance.now() - started), calls: records, callCount, callsOmitted: Math.max(0, callCount - records.length), console: consoleLines, warnings: [...done.warnings, ...warnings], source },
        shown,
        continuation,
        approvals!.resumeHint(continuation, shown),
      );
    }
  }

  // Promises the program dropped: found by a parse only when a text check or a cancelled call says there may be some.
  const analysed = analysable(code, done.error);
  const floating = analysed && (cancelled.length > 0 || mayDropPromises(code)) ? await floatingCalls(code, env.tools).catch(() => [] as Floating[]) : [];
  const sites = new Map<string, Floating[]>();
  for (const site of floating) if (site.kind === "tool") sites.set(site.callee, [...(sites.get(site.callee) ?? []), site]);
  for (const state of cancelled) {
    const site = sites.get(`tools.${state.record.tool}`);
    const at = site?.length === 1 ? ` at line ${site[0]!.line}` : "";
    // "Missing await" only fits a program that ended on its own; a stopped one was still waiting.
    const why = done.ok ? ` — missing await?${at ? ` Write await tools.${state.record.tool}(…).` : ""}` : ` when the run stopped (${done.error?.kind ?? "error"})`;
    warnings.push(`tools.${state.record.tool}(${state.record.args})${at} was still pending and was cancelled${why}`);
  }
  for (const site of floating) {
    if (site.kind === "forEach") {
      warnings.push(`${site.callee}(async …) at line ${site.line} does not wait for its callbacks: their tool calls are cancelled when the program ends and their errors are lost — write for (const item of …) { await … } or await Promise.all(items.map(async (item) => …))`);
      continue;
    }
    if (site.kind === "combinator") {
      warnings.push(`${site.callee}(…) at line ${site.line} is not awaited, so the program does not wait for it — write await ${site.callee}(…)`);
      continue;
    }
    if (site.kind === "async") {
      warnings.push(`${site.callee}() at line ${site.line} calls an async function without await, so the program does not wait for it: its errors are lost and its tool calls are cancelled when the program ends — write await ${site.callee}()`);
      continue;
    }
    const path = site.callee.slice("tools.".length);
    if (cancelled.some((state) => state.record.tool === path)) continue;
    const failed = records.find((record) => record.tool === path && record.status === "error");
    const outcome = failed ? `; it failed and nothing caught it: ${failed.error}` : "";
    warnings.push(`${site.callee}(…) at line ${site.line} is neither awaited nor kept, so the program does not wait for it${outcome} — write await ${site.callee}(…)`);
  }

  let value: unknown;
  let hasValue = false;
  if (done.valueJson !== undefined) {
    // A value nested deeper than the host can serialise would make run() (or whoever sends the
    // result on, such as the MCP server) throw a RangeError: it is dropped with a warning.
    const depth = jsonDepth(done.valueJson, MAX_VALUE_DEPTH);
    if (depth > MAX_VALUE_DEPTH) {
      warnings.push(`the return value is nested more than ${MAX_VALUE_DEPTH} levels deep, past what the host passes on; it was dropped`);
    } else {
      value = JSON.parse(done.valueJson);
      hasValue = true;
    }
  }
  let error = done.error && boundMessage(done.error);
  if (error) {
    if (diagnosis.hint === undefined && analysed) {
      diagnosis = await diagnose({
        code,
        source: written,
        error,
        tools: env.tools,
        resultView: settings.resultView,
        timeoutMs: limits.timeoutMs,
        maxToolCalls: limits.maxToolCalls,
        callsByTool,
        taskStatuses,
        failedCalls: records.filter((record) => record.status === "error"),
      });
    }
    error = withDiagnosis(error, diagnosis);
  }
  return buildRunResult({
    runId,
    ok: done.ok,
    value,
    hasValue,
    error,
    code: written,
    source,
    durationMs: round(performance.now() - started),
    calls: records,
    callCount,
    callsOmitted: Math.max(0, callCount - records.length),
    console: consoleLines,
    warnings: [...done.warnings, ...warnings],
    output,
    outputBudget: limits.outputBudget,
  });
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
