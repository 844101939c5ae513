// One tool call, from input to the three channels: input checks, the preCall hook, execute, the
// projection of the selected view, the model text under the output budget, postCall or postError.
// docs/tool-contract.md.
import * as zc from "zod/v4/core";
import { boundText, isPinnedText, validateBudget, type BoundOutput } from "./budget.js";
import { toolInternals, type Tool, type ToolInternals, type ViewPlan } from "./define.js";
import { describeValue, messageOf, ToolError } from "./errors.js";
import { formatIssues } from "./issues.js";
import { isPlainObject, textOf } from "./json.js";
import { asToolResult } from "./result.js";
import { assertViewSubset } from "./subset.js";
import { describeUnknownKeys, findUnknownKeys } from "./unknown-keys.js";
import { checkCompactResult } from "./view-schemas.js";
import { approvalDigest } from "./canonical.js";
import type { PostErrorEvent, ResultView, ToolCallResult, ToolContext, ToolHooks, ToolRef } from "./types.js";
import { ToolCallTrace, type TraceScope } from "../tracing.js";
import type { BjsonEncoding } from "../engine/bjson.js";
import { projectingEncoderFor } from "./guest-encoding.js";
import { CALL_ABORT, type LazyAbort, type LazyAbortCarrier } from "./call-signal.js";

/** One call at the approval gate: after preCall, before the tool runs. */
export interface ApprovalRequest {
  tool: Tool;
  /** The input as sent (after a preCall patch), `result_view` included. */
  input: Record<string, unknown>;
  /** `approvalDigest(tool.id, input)`: what remembered approvals match ("" when no decision is needed). */
  digest: string;
  /** A person's decision is needed (the host's `approve` hook or the tool's own `approval` said so). */
  required: boolean;
}

/** The gate's answer: run the call, or refuse it with this message (tool_denied / approval_denied). */
export type ApprovalAnswer = "allow" | { deny: string; reason?: "approval_denied" | "approval_required" };

/**
 * Who decides at the gate. Called for every call when given (a program's run also holds calls
 * there while it stops for an approval); without one, a call that needs approval is refused.
 */
export type ApprovalGate = (request: ApprovalRequest) => Promise<ApprovalAnswer>;

export interface InvokeOptions {
  ctx: ToolContext;
  hooks?: ToolHooks;
  /** Cap on the bytes of `content` (default 40,000). */
  outputBudget?: number;
  /**
   * Also check "compact ⊆ full" against a second, whole projection of the other view on every
   * call (a test-time aid: the definition-time check and the per-result check always run).
   */
  development?: boolean;
  /**
   * How `content` over the budget is cut: head and tail kept, a marker naming where the whole text
   * is. Default `boundText` (the same cut, no file); `createCodemode` passes one that writes a spill file.
   */
  boundOutput?: BoundOutput;
  /** The caller fixed the view (e.g. a pipeline step): a hook that changes it is denied. */
  pinnedResultView?: ResultView;
  /**
   * Who reads the result. A program reads only `structuredContent` of a tool with an output, so
   * for `"program"` the model text and details of such a tool are not built (they can cost as
   * much as the call itself: the JSON of the whole record). Default `"model"`.
   */
  audience?: "model" | "program";
  /** Decides calls that need a person's approval; see ApprovalGate. */
  approval?: ApprovalGate;
  /** Where the call's span goes (OpenTelemetry); absent: the call is not traced. */
  trace?: TraceScope;
}

interface Checked {
  args: Record<string, unknown>;
  view?: ResultView;
}

/** The options every call of one caller shares, validated once (`prepareCalls`) instead of on every call. */
export type CallerOptions = Omit<InvokeOptions, "ctx" | "approval">;

/** What varies per call: its context and, for a program's run, the gate that holds it for a person. */
export interface PerCall {
  ctx: ToolContext;
  approval?: ApprovalGate;
}

interface Settings {
  hooks: ToolHooks | undefined;
  outputBudget: number;
  development: boolean;
  bound: BoundOutput;
  pinnedResultView: ResultView | undefined;
  programOnly: boolean;
  trace: TraceScope | undefined;
}

const WHERE = "invokeTool: options";

function checkOptionsObject(options: unknown): asserts options is Record<string, unknown> {
  if (!isPlainObject(options)) throw new TypeError(`${WHERE} must be an object { ctx, hooks?, outputBudget?, development?, pinnedResultView? }, received ${describeValue(options)}`);
}

/** `lazySignal`: the context's `signal` is a getter over a LazyAbort the run made (tools/call-signal.ts), read only when needed. */
function checkContext(ctx: unknown, lazySignal = false): ToolContext {
  const where = WHERE;
  if (ctx === null || typeof ctx !== "object") throw new TypeError(`${where}.ctx must be an object { signal, callId, runId, depth }, received ${describeValue(ctx)}`);
  const c = ctx as Record<string, unknown>;
  if (!lazySignal && !(c.signal instanceof AbortSignal)) throw new TypeError(`${where}.ctx.signal must be an AbortSignal, received ${describeValue(c.signal)}`);
  if (typeof c.callId !== "string" || c.callId === "") throw new TypeError(`${where}.ctx.callId must be a non-empty string, received ${describeValue(c.callId)}`);
  if (typeof c.runId !== "string" || c.runId === "") throw new TypeError(`${where}.ctx.runId must be a non-empty string, received ${describeValue(c.runId)}`);
  if (typeof c.depth !== "number" || !Number.isInteger(c.depth) || c.depth < 0) throw new TypeError(`${where}.ctx.depth must be an integer ≥ 0, received ${String(c.depth)}`);
  if (c.taskId !== undefined && typeof c.taskId !== "string") throw new TypeError(`${where}.ctx.taskId must be a string, received ${describeValue(c.taskId)}`);
  if (c.deadline !== undefined && !Number.isFinite(c.deadline)) throw new TypeError(`${where}.ctx.deadline must be epoch milliseconds, received ${describeValue(c.deadline)}`);
  return ctx as ToolContext;
}

function checkApprovalGate(approval: unknown): ApprovalGate | undefined {
  if (approval !== undefined && typeof approval !== "function") {
    throw new TypeError(`${WHERE}.approval must be a function (request) => Promise<"allow" | { deny }>, received ${describeValue(approval)}`);
  }
  return approval as ApprovalGate | undefined;
}

/** Everything but `ctx` and `approval` (checked per call, in this order, between `ctx` and the rest). */
function checkSettings(options: Record<string, unknown>, approval: () => void): Settings {
  const where = WHERE;
  const hooks = options.hooks;
  if (hooks !== undefined) {
    if (hooks === null || typeof hooks !== "object") throw new TypeError(`${where}.hooks must be an object { approve?, preCall?, postCall?, postError? }, received ${describeValue(hooks)}`);
    for (const key of ["approve", "preCall", "postCall", "postError"] as const) {
      const hook = (hooks as Record<string, unknown>)[key];
      if (hook !== undefined && typeof hook !== "function") throw new TypeError(`${where}.hooks.${key} must be a function, received ${describeValue(hook)}`);
    }
  }
  if (options.boundOutput !== undefined && typeof options.boundOutput !== "function") {
    throw new TypeError(`${where}.boundOutput must be a function (text, budget, pinnedBytes) => { text, truncated, totalBytes }, received ${describeValue(options.boundOutput)}`);
  }
  if (options.development !== undefined && typeof options.development !== "boolean") {
    throw new TypeError(`${where}.development must be a boolean, received ${describeValue(options.development)}`);
  }
  const pinned = options.pinnedResultView;
  if (pinned !== undefined && pinned !== "compact" && pinned !== "full") {
    throw new TypeError(`${where}.pinnedResultView must be "compact" or "full", received ${JSON.stringify(pinned) ?? describeValue(pinned)}`);
  }
  approval();
  const audience = options.audience;
  if (audience !== undefined && audience !== "model" && audience !== "program") {
    throw new TypeError(`${where}.audience must be "model" or "program", received ${JSON.stringify(audience) ?? describeValue(audience)}`);
  }
  return {
    hooks: hooks as ToolHooks | undefined,
    outputBudget: validateBudget(options.outputBudget, `${where}.outputBudget`),
    development: options.development === true,
    bound: typeof options.boundOutput === "function" ? (options.boundOutput as BoundOutput) : boundText,
    pinnedResultView: pinned as ResultView | undefined,
    programOnly: audience === "program",
    trace: options.trace as TraceScope | undefined,
  };
}

function invalidInput(message: string): ToolError {
  return new ToolError("tool_invalid_input", message, { reason: "schema_invalid" });
}

/**
 * Input checks of docs/tool-contract.md#input-what-is-refused-before-a-tool-runs, in the order
 * listed there; any failure means the tool does not run.
 */
function checkInput(tool: Tool, impl: ToolInternals, raw: unknown, pinned: ResultView | undefined): Checked {
  if (!isPlainObject(raw)) throw invalidInput(`tool "${tool.id}" input must be an object, received ${describeValue(raw)}`);
  let args = raw;
  let view: ResultView | undefined;
  const sentView = Object.hasOwn(raw, "result_view") && raw.result_view !== undefined;
  if (impl.views) {
    if (sentView && raw.result_view !== "compact" && raw.result_view !== "full") {
      throw invalidInput(`tool "${tool.id}" input "result_view" must be one of "compact", "full"`);
    }
    if (sentView && pinned !== undefined && raw.result_view !== pinned) {
      throw new ToolError("tool_denied", `tool "${tool.id}" result view is pinned to "${pinned}" by the caller`, { reason: "result_view_pinned" });
    }
    view = sentView ? (raw.result_view as ResultView) : (pinned ?? "compact");
    if (Object.hasOwn(raw, "result_view")) {
      const { result_view: _selector, ...rest } = raw;
      args = rest;
    }
  } else if (sentView && !impl.ownsResultView) {
    throw invalidInput(`tool "${tool.id}" returns a single result and does not accept "result_view"`);
  }
  if (impl.input) {
    // Before zod, which would strip them: a misspelled key is the cause of most of its other complaints.
    const unknown = findUnknownKeys(impl.input, args);
    if (unknown.length > 0) throw invalidInput(describeUnknownKeys(`tool "${tool.id}" input`, unknown));
    const parsed = zc.safeParse(impl.input, args);
    if (!parsed.success) throw invalidInput(formatIssues(`tool "${tool.id}" input`, parsed.error.issues, args));
    args = parsed.data as Record<string, unknown>;
  }
  return view === undefined ? { args } : { args, view };
}

function projectView(tool: Tool, plan: ViewPlan, record: unknown): Record<string, unknown> {
  const projected = plan.project(record);
  const parsed = zc.safeParse(plan.zod, projected);
  if (!parsed.success) {
    throw new ToolError("tool_output_invalid", `tool "${tool.id}" returned a record that does not match its ${plan.label} schema: ${formatIssues("record", parsed.error.issues, projected)}`, {
      reason: "schema_invalid",
    });
  }
  return parsed.data as Record<string, unknown>;
}

/**
 * Both views of one record, as programs would receive them, without running the tool: for tests
 * of any tool with views (pair with `assertViewSubset`) and for hosts that replay stored records.
 */
export function projectViews(tool: Tool, record: unknown): { compact: Record<string, unknown>; full: Record<string, unknown> } {
  const impl = toolInternals(tool, "projectViews: tool");
  if (!impl.views) throw new TypeError(`projectViews: tool "${tool.id}" has no result views`);
  return { compact: projectView(tool, impl.views.compact, record), full: projectView(tool, impl.views.full, record) };
}

/**
 * The check every tool with views owes its callers, in one call: both views project `record`
 * and the compact one is a subset of the full one. Throws naming the tool and the first bad path.
 */
export function assertToolViews(tool: Tool, record: unknown): void {
  const { compact, full } = projectViews(tool, record);
  try {
    assertViewSubset(compact, full);
  } catch (err) {
    throw new Error(`tool "${tool.id}": ${messageOf(err)}`);
  }
}

interface Overrides {
  modelOutput?: { value: unknown };
  details?: { value: unknown };
}

/**
 * The three channels from one record. Projection errors throw (the program was promised a shape);
 * a failing `toModelOutput`/`toDetails` only costs a warning, since the model and the UI can
 * still be served from the record itself (docs/tool-contract.md#model-output-fail-soft).
 */
export function buildChannels(
  tool: Tool,
  impl: ToolInternals,
  record: unknown,
  view: ResultView | undefined,
  overrides: Overrides,
  budget: number,
  development: boolean,
  programOnly = false,
  bound: BoundOutput = boundText,
): ToolCallResult {
  const warnings: string[] = [];
  let structured: Record<string, unknown> | undefined;
  if (impl.views) {
    const selected = view ?? "compact";
    structured = projectView(tool, impl.views[selected], record);
    // What the schemas could not prove at definition (unions and the like) is compared here, on
    // those subtrees only: the rest of compact ⊆ full was settled when the tool was defined.
    if (selected === "compact" && impl.subsetChecks) {
      try {
        checkCompactResult(impl.subsetChecks, structured, record);
      } catch (err) {
        throw new ToolError("tool_output_invalid", `tool "${tool.id}" compact view is not a subset of its full view: ${messageOf(err)}`, { reason: "view_not_subset" });
      }
    }
    if (development) {
      const other = projectView(tool, impl.views[selected === "compact" ? "full" : "compact"], record);
      try {
        if (selected === "compact") assertViewSubset(structured, other);
        else assertViewSubset(other, structured);
      } catch (err) {
        throw new ToolError("tool_output_invalid", `tool "${tool.id}" compact view is not a subset of its full view: ${messageOf(err)}`, { reason: "view_not_subset" });
      }
    }
  } else if (impl.output) {
    structured = projectView(tool, impl.output, record);
  }
  // A program reads structuredContent, or the record itself when the tool declares no output.
  if (programOnly) return structured === undefined ? { content: [] } : { content: [], structuredContent: structured };

  let text: string | undefined;
  // Leading bytes a tool pinned (its status and usage lines): the cut falls after them.
  let pinnedBytes = 0;
  if (overrides.modelOutput) {
    text = textOf(overrides.modelOutput.value);
  } else if (impl.toModelOutput) {
    try {
      const out = impl.toModelOutput(record);
      if (isPinnedText(out)) {
        text = out.pinned + out.rest;
        pinnedBytes = Buffer.byteLength(out.pinned);
      } else if (out !== undefined && out !== null) {
        text = textOf(out);
      }
    } catch (err) {
      warnings.push(`tool "${tool.id}" toModelOutput failed (${messageOf(err)}); the model was sent the JSON result instead`);
    }
  }
  // docs/tool-contract.md#model-output-fail-soft: the last resort is the JSON of the full record. structuredContent is the programs'
  // channel and never goes to the model; a tool that wants a short model view says so itself.
  text ??= textOf(record);

  let details: unknown = record;
  if (overrides.details) {
    details = overrides.details.value;
  } else if (impl.toDetails) {
    try {
      details = impl.toDetails(record);
    } catch (err) {
      warnings.push(`tool "${tool.id}" toDetails failed (${messageOf(err)}); details hold the record instead`);
    }
  }

  const bounded = bound(text, budget, pinnedBytes);
  const result: ToolCallResult = { content: [{ type: "text", text: bounded.text }] };
  if (structured !== undefined) result.structuredContent = structured;
  if (bounded.truncated) {
    const where = bounded.fullOutputPath !== undefined ? `; full output: ${bounded.fullOutputPath}` : "";
    warnings.push(`tool "${tool.id}" output was ${bounded.totalBytes} bytes; the model was sent its head and tail within the ${budget}-byte budget${where}`);
  }
  if (warnings.length > 0) {
    result.warnings = warnings;
    details = withWarnings(details, warnings);
  }
  if (details !== undefined) result.details = details;
  return result;
}

/**
 * Fail-soft warnings go in `details`, where a UI looks (docs/tool-contract.md#model-output-fail-soft). They join an object's own
 * `warnings` list (a copy: the record stays as the tool returned it); details of another shape
 * keep them only in `ToolCallResult.warnings`.
 */
function withWarnings(details: unknown, warnings: string[]): unknown {
  if (!isPlainObject(details)) return details;
  const existing = details.warnings;
  if (existing !== undefined && !Array.isArray(existing)) return details;
  return { ...details, warnings: [...(existing ?? []), ...warnings] };
}

function refOf(tool: Tool): ToolRef {
  return tool.namespace === undefined ? { id: tool.id, name: tool.name } : { id: tool.id, name: tool.name, namespace: tool.namespace };
}

/**
 * One tool call, as a model or a program makes it: check the input (and `result_view`), run the
 * preCall hook, execute, project the selected view, build the channels, run postCall.
 * Throws ToolError whenever the tool did not succeed; `errorResult` turns that into channels.
 */
export async function invokeTool(tool: Tool, input: unknown, options: InvokeOptions): Promise<ToolCallResult> {
  const [settings, per] = checkInvokeOptions(options);
  return (await perform(newCall(tool, input, settings, per, settings.programOnly, false))).result!;
}

/**
 * One call as a program makes it: the value `await tools.x(args)` resolves to. A tool with an
 * output (or views) gives its `structuredContent`; any other tool the record its `execute`
 * returned (a `ToolResult`'s `output`, after a postCall redaction), not its model text: the
 * program is the reader, and it must get what the tool returned. Never the model text, so it is
 * never built. The caller sends it across as JSON, which makes it a JSON copy.
 */
export async function invokeToolForProgram(tool: Tool, input: unknown, options: Omit<InvokeOptions, "audience">): Promise<unknown> {
  const [settings, per] = checkInvokeOptions(options);
  return programValue(await perform(newCall(tool, input, settings, per, true, false)));
}

/**
 * Whether the guest wants this result in QuickJS's format; a function is asked once the result is
 * there. The caller knows what its results cost to cross (a small one may be cheaper as text).
 */
export type BinaryWanted = boolean | (() => boolean);

/** What a program's call resolves to, ready to cross into the guest. */
export interface GuestResult {
  /**
   * The value in QuickJS's own format (`encodeToolResult`'s form), when the record was checked,
   * projected and encoded in one pass by its output schema's generated encoder.
   */
  encoded?: BjsonEncoding;
  /** The value as `invokeToolForProgram` gives it (built on first use when `encoded` is present). */
  value(): unknown;
}

/** Invocation with the shared options checked once: what a program's run uses for each of its calls. */
export interface ToolCaller {
  invoke(tool: Tool, input: unknown, call: PerCall): Promise<ToolCallResult>;
  forProgram(tool: Tool, input: unknown, call: PerCall): Promise<unknown>;
  /**
   * `forProgram`, with the value encoded for the guest in the same pass when the tool's output
   * schema allows it and `binary` (asked when the result is there) says the encoding is wanted.
   */
  forGuest(tool: Tool, input: unknown, call: PerCall, binary: BinaryWanted): Promise<GuestResult>;
}

/** A ToolCaller for `options` (everything but `ctx` and `approval`), checked here once, with invokeTool's errors. */
export function prepareCalls(options: CallerOptions): ToolCaller {
  checkOptionsObject(options);
  if (Object.hasOwn(options, "ctx") || Object.hasOwn(options, "approval")) throw new TypeError(`prepareCalls: "ctx" and "approval" are given per call, not here`);
  const settings = checkSettings(options, () => undefined);
  const percall = (call: PerCall): PerCall => {
    checkContext(call.ctx, (call as LazyAbortCarrier)[CALL_ABORT] !== undefined);
    checkApprovalGate(call.approval);
    return call;
  };
  return {
    invoke: async (tool, input, call) => (await perform(newCall(tool, input, settings, percall(call), settings.programOnly, false))).result!,
    forProgram: async (tool, input, call) => programValue(await perform(newCall(tool, input, settings, percall(call), true, false))),
    forGuest: async (tool, input, call, binary) => {
      const done = await perform(newCall(tool, input, settings, percall(call), true, binary));
      if (done.encoded) {
        let value: { of: unknown } | undefined;
        const encoded = done.encoded;
        return { encoded, value: () => (value ??= { of: projectView(done.tool, done.plan!, done.record) }).of };
      }
      const value = programValue(done);
      return { value: () => value };
    },
  };
}

function checkInvokeOptions(options: unknown): [Settings, PerCall] {
  checkOptionsObject(options);
  const ctx = checkContext(options.ctx);
  let approval: ApprovalGate | undefined;
  const settings = checkSettings(options, () => {
    approval = checkApprovalGate(options.approval);
  });
  return [settings, approval === undefined ? { ctx } : { ctx, approval }];
}

/**
 * One call as it moves through the stages (prepare → approve → execute → finalize): what each
 * stage reads, and what it leaves for the next. `stage` names the one running, for postError.
 */
interface Call {
  readonly tool: Tool;
  readonly impl: ToolInternals;
  readonly settings: Settings;
  readonly approval: ApprovalGate | undefined;
  /** What the context's signal is made from, when it is made lazily: cancellation is read here without making it. */
  readonly abort: LazyAbort | undefined;
  readonly traced: ToolCallTrace | undefined;
  readonly ctx: ToolContext;
  readonly ref: ToolRef;
  /** The view the caller fixed, for a tool with views. */
  readonly pinned: ResultView | undefined;
  /** A program reads the result: the model text and details are not built. */
  readonly programOnly: boolean;
  /** The guest reads the result: encode it in QuickJS's format in the projection's pass when the schema allows and this says so. */
  readonly binary: BinaryWanted;
  stage: PostErrorEvent["stage"];
  /** The input as sent (after a preCall patch), `result_view` included. */
  sent: unknown;
  checked: Checked | undefined;
  /** Set once the call passed the gate: the view its result is projected on. */
  view: ResultView | undefined;
  returned: unknown;
  record: unknown;
  overrides: Overrides;
  /** The tool flagged its own result as a failure (`toolResult(…, { isError: true })`): the model's result says so. */
  isError?: boolean;
  result: ToolCallResult | undefined;
  /** The schema the record was projected on (for `encoded`: what the value is projected on when asked for). */
  plan: ViewPlan | undefined;
  encoded: BjsonEncoding | undefined;
}

function newCall(tool: Tool, input: unknown, settings: Settings, per: PerCall, programOnly: boolean, binary: BinaryWanted): Call {
  const impl = toolInternals(tool, "invokeTool: tool");
  const traced = settings.trace && ToolCallTrace.start(settings.trace, tool, per.ctx, input);
  return {
    tool,
    impl,
    settings,
    approval: per.approval,
    abort: (per as LazyAbortCarrier)[CALL_ABORT],
    traced: traced || undefined,
    ctx: traced ? { ...per.ctx, trace: traced.scope } : per.ctx,
    ref: refOf(tool),
    pinned: tool.hasResultViews ? settings.pinnedResultView : undefined,
    programOnly,
    binary,
    stage: "input",
    sent: input,
    checked: undefined,
    view: undefined,
    returned: undefined,
    record: undefined,
    overrides: {},
    result: undefined,
    plan: undefined,
    encoded: undefined,
  };
}

function programValue(call: Call): unknown {
  return call.tool.hasOutput ? call.result!.structuredContent : call.record;
}

/** The stages in order; a failure in any goes to `fail` (postError) and is rethrown as a ToolError. */
async function perform(call: Call): Promise<Call> {
  try {
    // Stages with nothing to wait for return nothing, and cost no turn of the microtask queue.
    const preparing = prepare(call);
    if (preparing) await preparing;
    const approving = approve(call);
    if (approving) await approving;
    await execute(call);
    const finalizing = finalize(call);
    if (finalizing) await finalizing;
    return call;
  } catch (err) {
    throw await fail(call, err);
  }
}

/** Input checks, then the preCall hook, which may deny the call or replace its input (checked again). */
function prepare(call: Call): Promise<void> | undefined {
  call.checked = checkInput(call.tool, call.impl, call.sent, call.pinned);
  if (!call.settings.hooks?.preCall) return undefined;
  return preCall(call, call.settings.hooks.preCall);
}

/** What the preCall and postCall hooks are told of every call. */
function hookEvent(call: Call): { tool: Call["ref"]; input: Record<string, unknown>; has_result_views: boolean } {
  return { tool: call.ref, input: call.sent as Record<string, unknown>, has_result_views: call.tool.hasResultViews };
}

async function preCall(call: Call, hook: NonNullable<ToolHooks["preCall"]>): Promise<void> {
  const { tool } = call;
  call.stage = "pre_call";
  let decision: unknown;
  try {
    decision = await hook({
      ...hookEvent(call),
      ...(call.pinned === undefined ? {} : { pinned_result_view: call.pinned }),
      ctx: call.ctx,
    });
  } catch (err) {
    throw new ToolError("tool_denied", `tool "${tool.id}" call denied: its preCall hook failed: ${messageOf(err)}`, { reason: "hook_failed", cause: err });
  }
  if (decision === undefined || decision === null) return;
  if (!isPlainObject(decision)) {
    throw new ToolError("tool_denied", `tool "${tool.id}" call denied: its preCall hook returned ${describeValue(decision)}; expected nothing, { deny } or { input }`, { reason: "hook_failed" });
  }
  if (decision.deny !== undefined) {
    const reason = typeof decision.reason === "string" && decision.reason !== "" ? decision.reason : "hook_denied";
    throw new ToolError("tool_denied", `tool "${tool.id}" call denied: ${textOf(decision.deny)}`, { reason });
  }
  if (decision.input !== undefined) {
    call.stage = "input";
    call.sent = decision.input;
    call.checked = checkInput(tool, call.impl, call.sent, call.pinned);
  }
}

/** The approval gate, when anything can hold the call there; then the view is settled and a cancelled call stops. */
function approve(call: Call): Promise<void> | undefined {
  call.stage = "approval";
  const { hooks } = call.settings;
  if (!hooks?.approve && call.impl.approval === undefined && call.approval === undefined) {
    settleView(call);
    return undefined;
  }
  return passApprovalGate(call.tool, call.impl, call.sent as Record<string, unknown>, call.ctx, hooks, call.approval).then(() => settleView(call));
}

/** `ctx.signal.aborted`, without making a lazily made signal. */
function aborted(call: Call): boolean {
  return call.abort ? call.abort.aborted : call.ctx.signal.aborted;
}

function settleView(call: Call): void {
  call.view = call.checked!.view;
  if (aborted(call)) throw new ToolError("tool_aborted", `tool "${call.tool.id}" was cancelled before it ran`);
}

async function execute(call: Call): Promise<void> {
  call.stage = "execute";
  const { impl, ctx, traced } = call;
  const args = call.checked!.args;
  try {
    call.returned = await (traced ? traced.run(() => impl.execute(args, ctx)) : impl.execute(args, ctx));
  } catch (err) {
    if (err instanceof ToolError) throw err;
    if (aborted(call)) throw new ToolError("tool_aborted", `tool "${call.tool.id}" was cancelled: ${messageOf(err)}`, { cause: err });
    throw new ToolError("tool_failed", messageOf(err), { cause: err });
  }
}

/** The record, its channels (or, for the guest, its encoding), the postCall hook, the trace. */
function finalize(call: Call): Promise<void> | undefined {
  call.stage = "output";
  const { impl, returned } = call;
  const wrapped = asToolResult(returned, { brandedOnly: impl.recordHasOutputKey });
  call.record = wrapped ? wrapped.output : returned;
  if (wrapped && wrapped.modelOutput !== undefined) call.overrides.modelOutput = { value: wrapped.modelOutput };
  if (wrapped && Object.hasOwn(wrapped, "details")) call.overrides.details = { value: wrapped.details };
  if (wrapped?.isError === true) call.isError = true;
  const postCallHook = call.settings.hooks?.postCall;
  if (!(call.binary && !postCallHook && (call.binary === true || call.binary()) && encodeForGuest(call))) call.result = channels(call, call.overrides);
  if (!postCallHook) {
    succeeded(call);
    return undefined;
  }
  return postCall(call, postCallHook).then(() => succeeded(call));
}

function channels(call: Call, overrides: Overrides): ToolCallResult {
  const { settings } = call;
  return buildChannels(call.tool, call.impl, call.record, call.view, overrides, settings.outputBudget, settings.development, call.programOnly, settings.bound);
}

/**
 * The guest's fast path: the record checked against the selected schema, projected on it and
 * encoded in one pass (docs/tool-contract.md: the same value the JSON path gives). Only where
 * nothing else must see the projected object: no postCall hook, no per-result subset check, no
 * development cross-check. False sends the call down the ordinary path, with its exact errors.
 */
function encodeForGuest(call: Call): boolean {
  const { impl } = call;
  if (call.settings.development) return false;
  const selected = call.view ?? "compact";
  const plan = impl.views ? impl.views[selected] : impl.output;
  if (!plan || (impl.views && selected === "compact" && impl.subsetChecks)) return false;
  const encoded = projectingEncoderFor(plan.zod)(call.record);
  if (!encoded) return false;
  call.plan = plan;
  call.encoded = encoded;
  call.result = { content: [] };
  return true;
}

async function postCall(call: Call, hook: NonNullable<ToolHooks["postCall"]>): Promise<void> {
  const { tool } = call;
  const result = call.result!;
  let decision: unknown;
  try {
    decision = await hook({
      ...hookEvent(call),
      ...(call.view === undefined ? {} : { result_view: call.view }),
      record: call.record,
      result,
      ctx: call.ctx,
    });
  } catch (err) {
    const warning = `tool "${tool.id}" postCall hook failed: ${messageOf(err)}`;
    result.warnings = [...(result.warnings ?? []), warning];
    if (result.details !== undefined) result.details = withWarnings(result.details, [warning]);
    return;
  }
  if (!isPlainObject(decision) || (decision.record === undefined && decision.modelOutput === undefined)) return;
  // Model text and details built from the unredacted record must not survive a redaction.
  const next: Overrides = {};
  if (decision.record !== undefined) {
    call.record = decision.record;
  } else {
    if (call.overrides.modelOutput) next.modelOutput = call.overrides.modelOutput;
    if (call.overrides.details) next.details = call.overrides.details;
  }
  if (decision.modelOutput !== undefined) next.modelOutput = { value: decision.modelOutput };
  call.result = channels(call, next);
}

function succeeded(call: Call): void {
  if (call.isError && !call.programOnly) call.result!.isError = true;
  call.traced?.succeeded(call.view, call.record, call.programOnly ? undefined : call.result!.content.map((c) => c.text).join("\n"));
}

/** The error the caller gets, after the trace and the postError hook saw it. */
async function fail(call: Call, err: unknown): Promise<ToolError> {
  const error = err instanceof ToolError ? err : new ToolError("tool_failed", messageOf(err), { cause: err });
  const { stage, view } = call;
  call.traced?.failed(error, stage, view);
  const hook = call.settings.hooks?.postError;
  if (hook) {
    try {
      await hook({
        tool: call.ref,
        input: call.sent,
        has_result_views: call.tool.hasResultViews,
        ...(view === undefined ? {} : { result_view: view }),
        stage,
        error,
        ctx: call.ctx,
      });
    } catch {
      // The call already failed; a failing observer must not replace the error the caller needs.
    }
  }
  return error;
}

/**
 * The approval gate (docs/approvals.md): the host's `approve` hook first, for any call; when it
 * says nothing, the tool's own `approval`. A call that needs a person goes to the caller's gate,
 * and is refused where nothing can ask one (a direct call, a subagent task, a workflow step).
 */
async function passApprovalGate(tool: Tool, impl: ToolInternals, input: Record<string, unknown>, ctx: ToolContext, hooks: ToolHooks | undefined, gate: ApprovalGate | undefined): Promise<void> {
  // The digest costs a canonical JSON of the input: only for the hook, or for a call that needs a person.
  let digest = hooks?.approve ? approvalDigest(tool.id, input) : "";
  let toolRequires = false;
  if (impl.approval === "required") toolRequires = true;
  else if (impl.approval !== undefined) {
    try {
      toolRequires = (await impl.approval(input, ctx)) === true;
    } catch (err) {
      throw new ToolError("tool_denied", `tool "${tool.id}" call denied: its approval function failed: ${messageOf(err)}`, { reason: "hook_failed", cause: err });
    }
  }
  let required = toolRequires;
  if (hooks?.approve) {
    let decision: unknown;
    try {
      decision = await hooks.approve({ tool: refOf(tool), input, has_result_views: tool.hasResultViews, digest, tool_requires_approval: toolRequires, ctx });
    } catch (err) {
      throw new ToolError("tool_denied", `tool "${tool.id}" call denied: the approve hook failed: ${messageOf(err)}`, { reason: "hook_failed", cause: err });
    }
    if (decision === "deny") throw new ToolError("tool_denied", `tool "${tool.id}" call denied by the host's approval policy`, { reason: "approval_denied" });
    if (decision === "allow") required = false;
    else if (decision === "ask") required = true;
    else if (decision !== undefined && decision !== null) {
      throw new ToolError("tool_denied", `tool "${tool.id}" call denied: the approve hook returned ${describeValue(decision)}; expected "allow", "deny", "ask" or nothing`, { reason: "hook_failed" });
    }
  }
  if (!gate) {
    if (!required) return;
    const where =
      ctx.depth > 0 || ctx.taskId !== undefined
        ? "a subagent task cannot ask a person: approvals belong to the top-level program, so make this call from the program that spawned the task"
        : "nothing here can ask a person: call it from a program (ptc_run_code or cm.run), which stops and asks";
    throw new ToolError("tool_denied", `tool "${tool.id}" needs a person's approval before it runs, and ${where}`, { reason: "approval_required" });
  }
  if (required && digest === "") digest = approvalDigest(tool.id, input);
  const answer = await gate({ tool, input, digest, required });
  if (answer !== "allow") throw new ToolError("tool_denied", answer.deny, { reason: answer.reason ?? "approval_denied" });
}
