// OpenTelemetry tracing, through the API package only: a span per program run, a child span per
// tool call, spans for each task's life and for stopping it, and the trace context a command agent
// finds in its environment (TRACEPARENT) and a queue job carries to its worker. The tracer is the
// one createCodemode was given, else the global provider's. With neither, `traceScope` answers
// undefined and nothing else here runs: the rest of the runtime only ever checks for an absent scope. docs/tracing.md lists every name.
import {
  context as otelContext,
  createTraceState,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { packageVersion } from "./package-files.js";
import { takeHead } from "./text.js";
import type { TaskRecord, TaskStatus } from "./tasks/types.js";

export const TRACER_NAME = "codemode-runtime";
/** The most of a record or a model text one span event carries (UTF-8 bytes); past it the head is kept and the event says so. */
export const TRACE_EVENT_BYTES = 16 * 1024;

/** Where new spans go: the tracer that records them, and a context holding their parent span. */
export interface TraceScope {
  readonly tracer: Tracer;
  readonly context: Context;
}

/** The tracer to use: the given one, else the global provider's; undefined when no provider is registered. */
export function resolveTracer(explicit: Tracer | undefined): Tracer | undefined {
  if (explicit) return explicit;
  const provider = trace.getTracerProvider() as TracerProvider & { getDelegateTracer?(name: string, version?: string): Tracer | undefined };
  // The API's own provider is a proxy with no delegate until an SDK registers one: then there is nothing to record.
  if (typeof provider.getDelegateTracer === "function") return provider.getDelegateTracer(TRACER_NAME, packageVersion());
  return provider.getTracer(TRACER_NAME, packageVersion());
}

/** A scope under `parent` (default: the active context), or undefined when nothing traces. */
export function traceScope(explicit: Tracer | undefined, parent?: Context): TraceScope | undefined {
  const tracer = resolveTracer(explicit);
  return tracer ? { tracer, context: parent ?? otelContext.active() } : undefined;
}

/** Whether `value` can serve as a tracer (createCodemode's check of its option). */
export function isTracer(value: unknown): value is Tracer {
  return value !== null && typeof value === "object" && typeof (value as Tracer).startSpan === "function" && typeof (value as Tracer).startActiveSpan === "function";
}

function within(scope: TraceScope, span: Span): TraceScope {
  return { tracer: scope.tracer, context: trace.setSpan(scope.context, span) };
}

/** A text for an event: its head within TRACE_EVENT_BYTES, never a split character, with its whole size. */
function bounded(prefix: string, leaf: string, text: string): Attributes {
  const bytes = Buffer.byteLength(text);
  const kept = bytes <= TRACE_EVENT_BYTES ? text : takeHead(text, TRACE_EVENT_BYTES);
  return { [`${prefix}.${leaf}`]: kept, [`${prefix}.bytes`]: bytes, [`${prefix}.truncated`]: kept !== text };
}

function jsonOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    return "null";
  }
}

const ms = (since: number): number => Math.round((performance.now() - since) * 100) / 100;

/** What the run span reads from a RunResult (structurally, so this module needs nothing of codemode). */
export interface TracedRunResult {
  content: ReadonlyArray<{ text: string }>;
  structuredContent: { status: "ok" | "error" | "interrupted"; error?: { kind: string; message: string }; tool_calls: number; duration_ms: number };
}

/** `codemode.run`: one program run, from dispatch to its result. Its tool calls are its children. */
export class RunTrace {
  private constructor(
    private readonly span: Span,
    /** Where the run's tool calls put their spans. */
    readonly scope: TraceScope,
  ) {}

  static start(parent: TraceScope | undefined, info: { runId: string; session: string; depth: number; taskId?: string }): RunTrace | undefined {
    if (!parent) return undefined;
    const attributes: Attributes = { "codemode.run.id": info.runId, "codemode.session": info.session, "codemode.depth": info.depth };
    if (info.taskId !== undefined) attributes["codemode.task.id"] = info.taskId;
    const span = parent.tracer.startSpan("codemode.run", { kind: SpanKind.INTERNAL, attributes }, parent.context);
    return new RunTrace(span, within(parent, span));
  }

  end(result: TracedRunResult): void {
    const s = result.structuredContent;
    if (this.span.isRecording()) {
      const text = result.content.map((block) => block.text).join("\n");
      this.span.setAttributes({
        "codemode.run.status": s.status,
        "codemode.run.duration_ms": s.duration_ms,
        "codemode.run.tool_calls": s.tool_calls,
        "codemode.run.output_bytes": Buffer.byteLength(text),
        ...(s.error ? { "codemode.run.error_kind": s.error.kind } : {}),
      });
      // What the model reads of this run: the only model text a program's own calls have.
      this.span.addEvent("codemode.model_text", bounded("codemode.model_text", "content", text));
      if (s.error) this.span.setStatus({ code: SpanStatusCode.ERROR, message: `${s.error.kind}: ${s.error.message}` });
    }
    this.span.end();
  }

  /** The run could not be carried out at all (a misuse of the API, a closed runtime). */
  fail(error: unknown): void {
    if (this.span.isRecording()) {
      this.span.recordException(error instanceof Error ? error : String(error));
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    }
    this.span.end();
  }
}

/** `execute_tool <path>`: one tool call, with the full record (after the postCall hook) as an event. */
export class ToolCallTrace {
  private readonly started = performance.now();

  private constructor(
    private readonly span: Span,
    /** Where the tool's own spans go (ToolContext.trace). */
    readonly scope: TraceScope,
  ) {}

  static start(parent: TraceScope, tool: { id: string; path: readonly string[] }, ctx: { callId: string; runId: string; taskId?: string }, input: unknown): ToolCallTrace {
    const path = tool.path.join(".");
    const span = parent.tracer.startSpan(`execute_tool ${path}`, { kind: SpanKind.INTERNAL }, parent.context);
    if (span.isRecording()) {
      span.setAttributes({
        // The OpenTelemetry GenAI conventions' names, for backends that know them.
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": path,
        "gen_ai.tool.call.id": ctx.callId,
        "codemode.tool.path": path,
        "codemode.tool.id": tool.id,
        "codemode.run.id": ctx.runId,
        "codemode.tool.input_bytes": Buffer.byteLength(jsonOf(input)),
        ...(ctx.taskId !== undefined ? { "codemode.task.id": ctx.taskId } : {}),
      });
    }
    return new ToolCallTrace(span, within(parent, span));
  }

  /** Runs `execute` with the call's span active, for instrumented libraries the tool itself uses. */
  run<T>(fn: () => T): T {
    return otelContext.with(this.scope.context, fn);
  }

  /**
   * The call succeeded. `record` is the full record after the postCall hook (so a field the hook
   * removed never reaches a span); `modelText` the text a model read, when one did.
   */
  succeeded(view: string | undefined, record: unknown, modelText: string | undefined): void {
    if (this.span.isRecording()) {
      const json = jsonOf(record);
      this.span.setAttributes({
        "codemode.tool.status": "ok",
        "codemode.tool.duration_ms": ms(this.started),
        "codemode.tool.output_bytes": Buffer.byteLength(json),
        ...(view !== undefined ? { "codemode.tool.result_view": view } : {}),
      });
      this.span.addEvent("codemode.tool.record", bounded("codemode.record", "json", json));
      if (modelText !== undefined) this.span.addEvent("codemode.model_text", bounded("codemode.model_text", "content", modelText));
    }
    this.span.end();
  }

  failed(error: { code: string; message: string }, stage: string, view: string | undefined): void {
    if (this.span.isRecording()) {
      this.span.setAttributes({
        "codemode.tool.status": "error",
        "codemode.tool.duration_ms": ms(this.started),
        "codemode.tool.error_code": error.code,
        "codemode.tool.error_stage": stage,
        ...(view !== undefined ? { "codemode.tool.result_view": view } : {}),
      });
      this.span.recordException({ name: error.code, message: error.message });
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    }
    this.span.end();
  }
}

function pick(attributes: Attributes, keys: readonly string[]): Attributes {
  return Object.fromEntries(keys.filter((k) => attributes[k] !== undefined).map((k) => [k, attributes[k]]));
}

function taskEndAttributes(r: TaskRecord): Attributes {
  const attributes: Attributes = { "codemode.task.status": r.status, "codemode.task.output_bytes": r.outputBytes };
  if (r.exitCode !== undefined) attributes["codemode.task.exit_code"] = r.exitCode;
  if (r.stopReason !== undefined) attributes["codemode.task.stop_reason"] = r.stopReason;
  if (r.startedAt !== undefined && r.endedAt !== undefined) attributes["codemode.task.duration_ms"] = r.endedAt - r.startedAt;
  if (r.usage) {
    attributes["codemode.task.usage.input_tokens"] = r.usage.input;
    attributes["codemode.task.usage.output_tokens"] = r.usage.output;
    attributes["codemode.task.usage.cost"] = r.usage.cost;
    attributes["codemode.task.usage.turns"] = r.usage.turns;
  }
  return attributes;
}

/**
 * `codemode.task` spans a task's whole life, from its spawn to its end (queued time included);
 * `codemode.task.run`, its child, the time its driver ran: the parent of a script child's run
 * span and the trace context a command agent gets.
 */
export class TaskTrace {
  private run: Span | undefined;
  private runContext: TraceScope | undefined;
  private ended = false;

  private constructor(
    private readonly span: Span,
    private readonly scope: TraceScope,
  ) {}

  static spawned(parent: TraceScope | undefined, r: TaskRecord): TaskTrace | undefined {
    if (!parent) return undefined;
    const attributes: Attributes = {
      "codemode.task.id": r.id,
      "codemode.task.agent": r.agent,
      "codemode.task.driver": r.driver,
      "codemode.task.depth": r.depth,
      "codemode.task.background": r.background,
      "codemode.task.label": r.label,
    };
    if (r.parentId !== undefined) attributes["codemode.task.parent_id"] = r.parentId;
    if (r.model !== undefined) attributes["codemode.task.model"] = r.model;
    const span = parent.tracer.startSpan("codemode.task", { kind: SpanKind.INTERNAL, attributes }, parent.context);
    return new TaskTrace(span, within(parent, span));
  }

  /** The task left the queue and its driver starts. */
  started(r: TaskRecord): void {
    const waited = r.startedAt !== undefined ? r.startedAt - r.createdAt : 0;
    this.span.addEvent("codemode.task.started", { "codemode.task.queued_ms": waited });
    this.run = this.scope.tracer.startSpan("codemode.task.run", { kind: SpanKind.INTERNAL, attributes: { "codemode.task.id": r.id, "codemode.task.driver": r.driver } }, this.scope.context);
    this.runContext = within(this.scope, this.run);
  }

  /** Where the driver's own spans go: under the run span once the task started. */
  get driverScope(): TraceScope {
    return this.runContext ?? this.scope;
  }

  /** Where a stop of this task is recorded when its caller is not traced. */
  get stopParent(): TraceScope {
    return this.scope;
  }

  get spanContext(): ReturnType<Span["spanContext"]> {
    return this.span.spanContext();
  }

  stopRequested(reason: string | undefined): void {
    this.span.addEvent("codemode.task.stop_requested", reason !== undefined ? { "codemode.task.stop_reason": reason } : {});
  }

  finished(r: TaskRecord): void {
    if (this.ended) return;
    this.ended = true;
    const failed = r.status === "failed" || r.status === "lost";
    // The run span says how the driver ended; the task span also what the task cost.
    for (const span of this.run ? [this.run, this.span] : [this.span]) {
      if (span.isRecording()) {
        const all = taskEndAttributes(r);
        span.setAttributes(span === this.span ? all : pick(all, ["codemode.task.status", "codemode.task.exit_code", "codemode.task.duration_ms"]));
        if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: r.errorMessage ?? r.status });
      }
      span.end();
    }
    this.run = undefined;
  }
}

/** `codemode.task.stop`: a stop, from the request until the task ended; its cascade's stops are its children. */
export class StopTrace {
  private constructor(
    private readonly span: Span,
    readonly scope: TraceScope,
  ) {}

  static start(caller: TraceScope | undefined, task: TaskTrace | undefined, id: string, from: TaskStatus, reason: string | undefined): StopTrace | undefined {
    const parent = caller ?? task?.stopParent;
    if (!parent) return undefined;
    const attributes: Attributes = { "codemode.task.id": id, "codemode.task.from_status": from };
    if (reason !== undefined) attributes["codemode.task.stop_reason"] = reason;
    const span = parent.tracer.startSpan("codemode.task.stop", { kind: SpanKind.INTERNAL, attributes, ...(task && caller ? { links: [{ context: task.spanContext }] } : {}) }, parent.context);
    return new StopTrace(span, within(parent, span));
  }

  end(r: TaskRecord): void {
    if (this.span.isRecording()) this.span.setAttribute("codemode.task.status", r.status);
    this.span.end();
  }
}

/** A span's W3C trace context as text, to carry it across a process boundary (a queue job, an environment). */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The W3C trace context of `scope`'s span, or undefined when nothing traces. */
export function traceCarrier(scope: TraceScope | undefined): TraceCarrier | undefined {
  const parent = scope && trace.getSpanContext(scope.context);
  if (!parent || !isSpanContextValid(parent)) return undefined;
  const carrier: TraceCarrier = { traceparent: `00-${parent.traceId}-${parent.spanId}-${(parent.traceFlags & 0xff).toString(16).padStart(2, "0")}` };
  const state = parent.traceState?.serialize();
  if (state) carrier.tracestate = state;
  return carrier;
}

/**
 * Where spans go under a context carried from another process (a queue job's): under its span,
 * as a remote parent. A carrier that is absent or not a version-00 W3C traceparent gives the
 * plain scope of `explicit` (a trace of its own), never an error: a job is not refused for it.
 */
export function carriedScope(explicit: Tracer | undefined, carrier: unknown): TraceScope | undefined {
  const tracer = resolveTracer(explicit);
  if (!tracer) return undefined;
  const c = carrier as Partial<TraceCarrier> | null | undefined;
  const m = typeof c?.traceparent === "string" ? TRACEPARENT.exec(c.traceparent) : null;
  if (!m) return { tracer, context: otelContext.active() };
  const spanContext: SpanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: Number.parseInt(m[3]!, 16), isRemote: true };
  if (typeof c!.tracestate === "string" && c!.tracestate !== "") spanContext.traceState = createTraceState(c!.tracestate);
  if (!isSpanContextValid(spanContext)) return { tracer, context: otelContext.active() };
  return { tracer, context: trace.setSpanContext(ROOT_CONTEXT, spanContext) };
}

/**
 * The W3C trace context of `scope`'s span for a child process's environment: TRACEPARENT (and
 * TRACESTATE when there is one), as OpenTelemetry's environment carriers name them.
 */
export function traceEnvironment(scope: TraceScope | undefined): Record<string, string> {
  const carrier = traceCarrier(scope);
  if (!carrier) return {};
  const env: Record<string, string> = { TRACEPARENT: carrier.traceparent };
  if (carrier.tracestate) env.TRACESTATE = carrier.tracestate;
  return env;
}
