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

function checkOptions(options: unknown): Required<Pick<InvokeOptions, "ctx" | "outputBudget" | "development">> & InvokeOptions {
  const where = "invokeTool: options";
  if (!isPlainObject(options)) throw new TypeError(`${where} must be an object { ctx, hooks?, outputBudget?, development?, pinnedResultView? }, received ${describeValue(options)}`);
  const ctx = options.ctx;
  if (ctx === null || typeof ctx !== "object") throw new TypeError(`${where}.ctx must be an object { signal, callId, runId, depth }, received ${describeValue(ctx)}`);
  const c = ctx as Record<string, unknown>;
  if (!(c.signal instanceof AbortSignal)) throw new TypeError(`${where}.ctx.signal must be an AbortSignal, received ${describeValue(c.signal)}`);
  if (typeof c.callId !== "string" || c.callId === "") throw new TypeError(`${where}.ctx.callId must be a non-empty string, received ${describeValue(c.callId)}`);
  if (typeof c.runId !== "string" || c.runId === "") throw new TypeError(`${where}.ctx.runId must be a non-empty string, received ${describeValue(c.runId)}`);
  if (typeof c.depth !== "number" || !Number.isInteger(c.depth) || c.depth < 0) throw new TypeError(`${where}.ctx.depth must be an integer ≥ 0, received ${String(c.depth)}`);
  if (c.taskId !== undefined && typeof c.taskId !== "string") throw new TypeError(`${where}.ctx.taskId must be a string, received ${describeValue(c.taskId)}`);
  if (c.deadline !== undefined && !Number.isFinite(c.deadline)) throw new TypeError(`${where}.ctx.deadline must be epoch milliseconds, received ${describeValue(c.deadline)}`);
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
  if (options.approval !== undefined && typeof options.approval !== "function") {
    throw new TypeError(`${where}.approval must be a function (request) => Promise<"allow" | { deny }>, received ${describeValue(options.approval)}`);
  }
  const audience = options.audience;
  if (audience !== undefined && audience !== "model" && audience !== "program") {
    throw new TypeError(`${where}.audience must be "model" or "program", received ${JSON.stringify(audience) ?? describeValue(audience)}`);
  }
  return {
    ...(options as unknown as InvokeOptions),
    ctx: ctx as unknown as ToolContext,
    outputBudget: validateBudget(options.outputBudget, `${where}.outputBudget`),
    development: options.development === true,
    ...(typeof options.boundOutput === "function" ? { boundOutput: options.boundOutput as BoundOutput } : {}),
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
    view = sentView ? (raw.result_view as ResultView) : pinned ?? "compact";
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
    throw new ToolError(
      "tool_output_invalid",
      `tool "${tool.id}" returned a record that does not match its ${plan.label} schema: ${formatIssues("record", parsed.error.issues, projected)}`,
      { reason: "schema_invalid" },
    );
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
  return (await invoke(tool, input, options)).result;
}

/**
 * One call as a program makes it: the value `await tools.x(args)` resolves to. A tool with an
 * output (or views) gives its `structuredContent`; any other tool the record its `execute`
 * returned (a `ToolResult`'s `output`, after a postCall redaction), not its model text: the
 * program is the reader, and it must get what the tool returned. Never the model text, so it is
 * never built. The caller sends it across as JSON, which makes it a JSON copy.
 */
export async function invokeToolForProgram(tool: Tool, input: unknown, options: Omit<InvokeOptions, "audience">): Promise<unknown> {
  const { result, record } = await invoke(tool, input, options, true);
  return tool.hasOutput ? result.structuredContent : record;
}

async function invoke(tool: Tool, input: unknown, options: InvokeOptions, forProgram = false): Promise<{ result: ToolCallResult; record: unknown }> {
  const impl = toolInternals(tool, "invokeTool: tool");
  const opts = checkOptions(options);
  if (forProgram) opts.audience = "program";
  const traced = opts.trace && ToolCallTrace.start(opts.trace, tool, opts.ctx, input);
  const ctx = traced ? { ...opts.ctx, trace: traced.scope } : opts.ctx;
  const { hooks } = opts;
  const pinned = tool.hasResultViews ? opts.pinnedResultView : undefined;
  const ref = refOf(tool);
  let stage: PostErrorEvent["stage"] = "input";
  let sent: unknown = input;
  let view: ResultView | undefined;
  try {
    let checked = checkInput(tool, impl, sent, pinned);
    if (hooks?.preCall) {
      stage = "pre_call";
      let decision: unknown;
      try {
        decision = await hooks.preCall({
          tool: ref,
          input: sent as Record<string, unknown>,
          has_result_views: tool.hasResultViews,
          ...(pinned === undefined ? {} : { pinned_result_view: pinned }),
          ctx,
        });
      } catch (err) {
        throw new ToolError("tool_denied", `tool "${tool.id}" call denied: its preCall hook failed: ${messageOf(err)}`, { reason: "hook_failed", cause: err });
      }
      if (decision !== undefined && decision !== null) {
        if (!isPlainObject(decision)) {
          throw new ToolError("tool_denied", `tool "${tool.id}" call denied: its preCall hook returned ${describeValue(decision)}; expected nothing, { deny } or { input }`, { reason: "hook_failed" });
        }
        if (decision.deny !== undefined) {
          const reason = typeof decision.reason === "string" && decision.reason !== "" ? decision.reason : "hook_denied";
          throw new ToolError("tool_denied", `tool "${tool.id}" call denied: ${textOf(decision.deny)}`, { reason });
        }
        if (decision.input !== undefined) {
          stage = "input";
          sent = decision.input;
          checked = checkInput(tool, impl, sent, pinned);
        }
      }
    }
    stage = "approval";
    await passApprovalGate(tool, impl, sent as Record<string, unknown>, ctx, hooks, opts.approval);
    view = checked.view;
    if (ctx.signal.aborted) {
      throw new ToolError("tool_aborted", `tool "${tool.id}" was cancelled before it ran`);
    }
    stage = "execute";
    let returned: unknown;
    try {
      returned = await (traced ? traced.run(() => impl.execute(checked.args, ctx)) : impl.execute(checked.args, ctx));
    } catch (err) {
      if (err instanceof ToolError) throw err;
      if (ctx.signal.aborted) throw new ToolError("tool_aborted", `tool "${tool.id}" was cancelled: ${messageOf(err)}`, { cause: err });
      throw new ToolError("tool_failed", messageOf(err), { cause: err });
    }
    stage = "output";
    const wrapped = asToolResult(returned, { brandedOnly: impl.recordHasOutputKey });
    let record = wrapped ? wrapped.output : returned;
    const overrides: Overrides = {};
    if (wrapped && wrapped.modelOutput !== undefined) overrides.modelOutput = { value: wrapped.modelOutput };
    if (wrapped && Object.hasOwn(wrapped, "details")) overrides.details = { value: wrapped.details };
    const programOnly = opts.audience === "program";
    const bound = opts.boundOutput ?? boundText;
    let result = buildChannels(tool, impl, record, view, overrides, opts.outputBudget, opts.development, programOnly, bound);
    if (hooks?.postCall) {
      let decision: unknown;
      try {
        decision = await hooks.postCall({
          tool: ref,
          input: sent as Record<string, unknown>,
          has_result_views: tool.hasResultViews,
          ...(view === undefined ? {} : { result_view: view }),
          record,
          result,
          ctx,
        });
      } catch (err) {
        const warning = `tool "${tool.id}" postCall hook failed: ${messageOf(err)}`;
        result.warnings = [...(result.warnings ?? []), warning];
        if (result.details !== undefined) result.details = withWarnings(result.details, [warning]);
        decision = undefined;
      }
      if (isPlainObject(decision) && (decision.record !== undefined || decision.modelOutput !== undefined)) {
        // Model text and details built from the unredacted record must not survive a redaction.
        const next: Overrides = {};
        if (decision.record !== undefined) {
          record = decision.record;
        } else {
          if (overrides.modelOutput) next.modelOutput = overrides.modelOutput;
          if (overrides.details) next.details = overrides.details;
        }
        if (decision.modelOutput !== undefined) next.modelOutput = { value: decision.modelOutput };
        result = buildChannels(tool, impl, record, view, next, opts.outputBudget, opts.development, programOnly, bound);
      }
    }
    // The tool flagged its own result as a failure (a program that failed): the model sees an error.
    if (wrapped?.isError === true && !programOnly) result.isError = true;
    traced?.succeeded(view, record, programOnly ? undefined : result.content.map((c) => c.text).join("\n"));
    return { result, record };
  } catch (err) {
    const error = err instanceof ToolError ? err : new ToolError("tool_failed", messageOf(err), { cause: err });
    traced?.failed(error, stage, view);
    if (hooks?.postError) {
      try {
        await hooks.postError({
          tool: ref,
          input: sent,
          has_result_views: tool.hasResultViews,
          ...(view === undefined ? {} : { result_view: view }),
          stage,
          error,
          ctx,
        });
      } catch {
        // The call already failed; a failing observer must not replace the error the caller needs.
      }
    }
    throw error;
  }
}

/**
 * The approval gate (docs/approvals.md): the host's `approve` hook first, for any call; when it
 * says nothing, the tool's own `approval`. A call that needs a person goes to the caller's gate,
 * and is refused where nothing can ask one (a direct call, a subagent task, a workflow step).
 */
async function passApprovalGate(tool: Tool, impl: ToolInternals, input: Record<string, unknown>, ctx: ToolContext, hooks: ToolHooks | undefined, gate: ApprovalGate | undefined): Promise<void> {
  if (!hooks?.approve && impl.approval === undefined && gate === undefined) return;
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
    const where = ctx.depth > 0 || ctx.taskId !== undefined
      ? "a subagent task cannot ask a person: approvals belong to the top-level program, so make this call from the program that spawned the task"
      : "nothing here can ask a person: call it from a program (ptc_run_code or cm.run), which stops and asks";
    throw new ToolError("tool_denied", `tool "${tool.id}" needs a person's approval before it runs, and ${where}`, { reason: "approval_required" });
  }
  if (required && digest === "") digest = approvalDigest(tool.id, input);
  const answer = await gate({ tool, input, digest, required });
  if (answer !== "allow") throw new ToolError("tool_denied", answer.deny, { reason: answer.reason ?? "approval_denied" });
}
