// One program run from the host's side: dispatching the program's tool calls (with the in-flight
// limit and FIFO queue), collecting output, console and stores, cancelling what is left at the
// end, and building the RunResult.
import type { SandboxEngine } from "../engine/engine.js";
import type { ConsoleLine, DoneMessage, GuestError } from "../engine/protocol.js";
import { invokeToolForProgram, toolRejection, ToolError, type ResultView, type Tool, type ToolHooks } from "../tools/index.js";
import { engineLimits, type Limits } from "./limits.js";
import { formatBytes, headChars, tailChars } from "../text.js";
import { OutputCollector } from "./output.js";
import { buildRunResult, type CallRecord, type RunResult } from "./run-result.js";
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
}

interface CallState {
  record: CallRecord;
  controller: AbortController;
  started: number;
  finished: boolean;
  tool?: Tool;
  argsJson: string;
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
    onCall(callId: number, path: string, argsJson: string) {
      callCount++;
      callsByTool.set(path, (callsByTool.get(path) ?? 0) + 1);
      const record: CallRecord = { id: callId, tool: path, args: preview(argsJson), status: "ok", durationMs: 0 };
      if (records.length < CALL_RECORDS) records.push(record);
      const state: CallState = { record, controller: new AbortController(), started: 0, finished: false, tool: env.tools.get(path), argsJson };
      calls.set(callId, state);
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
      },
      callbacks,
    );
  let handle = launch(code);

  function start(state: CallState, callId: number): void {
    running++;
    state.started = performance.now();
    void runCall(state).then(
      (value) => finish(state, callId, true, value),
      (error) => finish(state, callId, false, error),
    );
  }

  async function runCall(state: CallState): Promise<string> {
    const tool = state.tool;
    if (!tool) throw new ToolError("tool_not_found", `tools.${state.record.tool} is not bound`);
    let input = parseGuestJson(state.argsJson);
    if (settings.resultView && tool.hasResultViews && input && typeof input === "object" && !Array.isArray(input) && !Object.hasOwn(input, "result_view")) {
      input = { ...(input as Record<string, unknown>), result_view: settings.resultView };
    }
    const value = await invokeToolForProgram(tool, input, {
      ctx: { signal: state.controller.signal, callId: `${runId}:${state.record.id}`, runId, depth: settings.depth, deadline: handle.deadline, ...(settings.taskId ? { taskId: settings.taskId } : {}) },
      hooks: env.hooks,
      trace: env.trace,
      // The program, not the model, reads this result: the crossing limit bounds it, not the output
      // budget, and the model's text of a tool with an output is never built.
      outputBudget: Infinity,
      development: env.development,
    });
    if (TASK_TOOLS.has(tool.name)) noteStatuses(value);
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
    running--;
    state.record.durationMs = round(performance.now() - state.started);
    if (ok) {
      handle.settle(callId, true, payload as string);
    } else {
      const failure = toolRejection(payload);
      state.record.status = ended ? "cancelled" : "error";
      state.record.error = failure.message.length > ARGS_PREVIEW ? headChars(failure.message, ARGS_PREVIEW) + "…" : failure.message;
      handle.settle(callId, false, JSON.stringify(failure));
    }
    const next = queue.shift();
    if (next) start(next, next.record.id);
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

  // Whatever the program left running is cancelled: its signal fires and the receipt says so.
  const cancelled: CallState[] = [];
  for (const state of calls.values()) {
    if (state.finished) continue;
    state.finished = true;
    state.record.status = "cancelled";
    state.record.durationMs = state.started ? round(performance.now() - state.started) : 0;
    state.controller.abort(new Error("the program ended before this call finished"));
    cancelled.push(state);
  }
  queue.length = 0;

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
