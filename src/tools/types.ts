// The types of the tool contract: a call's context and channels, hooks and their events,
// descriptors and annotations (docs/tool-contract.md).
import type { ToolError } from "./errors.js";
import type { TraceScope } from "../tracing.js";

/** What a tool's `execute` receives besides its input. `signal` is the caller's own, untouched. */
export interface ToolContext {
  signal: AbortSignal;
  callId: string;
  runId: string;
  depth: number;
  taskId?: string;
  /**
   * Stable across replays and resumes of the same run (its run id and the call's sequence number):
   * a tool with side effects can deduplicate on it. Absent for calls outside a program.
   */
  idempotencyKey?: string;
  /**
   * Present when a person can be asked now (an MCP client with elicitation, a terminal): what
   * ptc_run_code hands its program's approval gate. Answers by approval_id; undefined: nobody answered.
   */
  askApproval?: (
    pending: Array<{ approval_id: string; tool: string; input: Record<string, unknown>; digest: string }>,
    signal: AbortSignal,
  ) => Promise<Record<string, "allow" | "deny" | { decision: "allow" | "deny"; remember?: boolean; reason?: string }> | undefined>;
  /** When the calling program's run times out (epoch milliseconds), for a tool that waits; absent outside a program. */
  deadline?: number;
  /** Where this call's own spans go (OpenTelemetry: the tracer and the call's span as parent); absent when nothing is traced. */
  trace?: TraceScope;
  /** Present when someone listens (an MCP client that asked for progress): tell them what the call is doing. */
  progress?: (message: string) => void;
}

export interface TextContent {
  type: "text";
  text: string;
}

/** The three channels of one call (docs/tool-contract.md): `content` for the model, `details` for a UI, `structuredContent` for programs. */
export interface ToolCallResult {
  content: TextContent[];
  structuredContent?: Record<string, unknown>;
  details?: unknown;
  isError?: boolean;
  /** Fail-soft problems met while building the channels (e.g. a `toModelOutput` that threw). */
  warnings?: string[];
}

export type ResultView = "compact" | "full";
export const RESULT_VIEWS: readonly ResultView[] = ["compact", "full"];

/** What `execute` may return instead of the bare record, to carry its own model text or details. */
export interface ToolResult<R> {
  output: R;
  modelOutput?: string;
  details?: unknown;
  /**
   * The tool ran, and what it reports is a failure the model should see as one (ptc_run_code: a
   * program that failed): the channels are built as usual and flagged `isError`. A program's own
   * call still resolves to the record.
   */
  isError?: boolean;
}

/** How hooks see a tool: enough to match on, nothing to call. */
export interface ToolRef {
  id: string;
  name: string;
  namespace?: string;
}

export interface PreCallEvent {
  tool: ToolRef;
  /** The input as sent, `result_view` included. */
  input: Record<string, unknown>;
  has_result_views: boolean;
  /** Present only for tools with views whose caller fixed the view. */
  pinned_result_view?: ResultView;
  ctx: ToolContext;
}

/**
 * `deny` stops the call (the tool does not run); `input` replaces the input, `result_view`
 * included, and is validated again.
 */
export type PreCallDecision = void | undefined | { deny: string; reason?: string } | { input: Record<string, unknown> };

export interface PostCallEvent {
  tool: ToolRef;
  input: Record<string, unknown>;
  has_result_views: boolean;
  /** Present only for tools with views. */
  result_view?: ResultView;
  /** The full record `execute` returned, before any projection. */
  record: unknown;
  /** The channels built from that record. */
  result: ToolCallResult;
  ctx: ToolContext;
}

/**
 * Returning `record` replaces the record (e.g. redaction): every channel is rebuilt from it, so
 * the model never sees what the hook removed. `modelOutput` replaces the model text.
 */
export type PostCallDecision = void | undefined | { record?: unknown; modelOutput?: string };

export interface PostErrorEvent {
  tool: ToolRef;
  input: unknown;
  has_result_views: boolean;
  result_view?: ResultView;
  /** Which step failed: the input check, the preCall hook, `execute`, or the output projection. */
  stage: "input" | "pre_call" | "approval" | "execute" | "output";
  error: ToolError;
  ctx: ToolContext;
}

/** What `hooks.approve` sees: every call, after preCall, before the tool runs. */
export interface ApproveEvent {
  tool: ToolRef;
  /** The input as sent, `result_view` included. */
  input: Record<string, unknown>;
  has_result_views: boolean;
  /** `approvalDigest(tool.id, input)`: the input without `result_view` (docs/tool-contract.md#hooks-and-pinned-views), what remembered approvals match. */
  digest: string;
  /** Whether the tool itself asks for approval (`approval: "required"`, or its function said so). */
  tool_requires_approval: boolean;
  ctx: ToolContext;
}

/**
 * `allow` runs the call, `deny` refuses it (tool_denied / approval_denied), `ask` needs a person's
 * decision; nothing (undefined) leaves it to the tool's own `approval`.
 */
export type ApproveDecision = void | undefined | "allow" | "deny" | "ask";

/** A tool's own approval policy: always, or when its function says so for this input. */
export type ApprovalPolicy = "required" | ((input: Record<string, unknown>, ctx: ToolContext) => boolean | Promise<boolean>);

export interface ToolHooks {
  /** The host's approval policy for any call; see ApproveDecision. */
  approve?(event: ApproveEvent): ApproveDecision | Promise<ApproveDecision>;
  preCall?(event: PreCallEvent): PreCallDecision | Promise<PreCallDecision>;
  postCall?(event: PostCallEvent): PostCallDecision | Promise<PostCallDecision>;
  postError?(event: PostErrorEvent): void | Promise<void>;
}

export interface ToolDescriptorView {
  schema: Record<string, unknown>;
  digest: string;
}

/**
 * What a client may be told about a tool's effects (MCP tool annotations): hints for a UI or an
 * approval policy, never a guarantee. An absent hint means "not stated" (MCP's defaults are the
 * cautious ones: not read-only, destructive, not idempotent, open world).
 */
export interface ToolAnnotations {
  /** It changes nothing in its environment. */
  readOnlyHint?: boolean;
  /** Not read-only, and it may delete or overwrite what was there. */
  destructiveHint?: boolean;
  /** Calling it again with the same arguments has no further effect. */
  idempotentHint?: boolean;
  /** It reaches an open world (other processes, the network, agents) rather than a closed domain. */
  openWorldHint?: boolean;
}

export const TOOL_ANNOTATION_KEYS: readonly (keyof ToolAnnotations)[] = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];

/** A tool's descriptor, as `tool_info` returns it (docs/tool-contract.md#descriptors-titles-and-annotations). */
export interface ToolDescriptor {
  id: string;
  description: string;
  input_schema: Record<string, unknown>;
  output_schema?: Record<string, unknown>;
  output_schema_digest?: string;
  output_views?: { compact: ToolDescriptorView; full: ToolDescriptorView };
}

export type MaybePromise<T> = T | Promise<T>;
