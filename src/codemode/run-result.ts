// Assembling the RunResult (docs/guest-api.md#the-run-result) from what a run produced. One budget
// covers every byte the model sees: the failure line, the program's output and the receipt of
// tool calls.
import { z } from "zod";
import { type ConsoleLine, ERROR_KINDS, type GuestError } from "../engine/protocol.js";
import type { TextContent } from "../tools/index.js";
import type { OutputCollector } from "./output.js";
import type { SourceNote } from "./run.js";
import { codeFrame } from "./diagnose.js";
import { formatBytes, headChars, takeHead, wellFormed } from "../text.js";
import type { PendingApproval } from "./continuation.js";
import { interruptedText } from "./approvals.js";

export interface CallRecord {
  id: number;
  tool: string;
  args: string;
  status: "ok" | "error" | "cancelled";
  durationMs: number;
  error?: string;
  /** Answered from the ledger of the run this one resumes: the tool did not run again. */
  replayed?: true;
  /** The call waits for a person's approval (the run was interrupted there). */
  awaitingApproval?: string;
}

/** A run's `structuredContent`: the output schema of `ptc_run_code`, and the type derived from it. */
export const runStructuredSchema = z.object({
  status: z.enum(["ok", "error", "interrupted"]),
  value: z.unknown().optional(),
  error: z
    .object({
      kind: z.enum(ERROR_KINDS),
      message: z.string(),
      line: z.number().int().optional(),
      column: z.number().int().optional(),
      hint: z.string().optional(),
    })
    .optional(),
  /** Interrupted: the calls that wait for a person's decision (docs/approvals.md). */
  pending_approvals: z
    .array(z.object({ approval_id: z.string(), tool: z.string(), input: z.record(z.string(), z.unknown()), digest: z.string() }))
    .optional()
    .describe("status interrupted: the calls that wait for a person's decision"),
  /** Interrupted: what cm.resume() / ptc_run_code({ resume }) continues the run from. */
  continuation: z.string().optional().describe("status interrupted: pass it back as `resume` with the person's `approvals`"),
  tool_calls: z.number().int(),
  duration_ms: z.number(),
});
export type RunStructuredContent = z.infer<typeof runStructuredSchema>;

export interface RunDetails {
  runId: string;
  durationMs: number;
  calls: CallRecord[];
  /** Calls made but not listed in `calls` (the list is bounded). */
  callsOmitted?: number;
  console: ConsoleLine[];
  warnings: string[];
  fullOutputPath?: string;
  /** The program was taken out of a Markdown fence, or had its TypeScript types stripped. */
  source?: SourceNote;
}

export interface RunResult {
  content: TextContent[];
  structuredContent: RunStructuredContent;
  details: RunDetails;
  isError?: boolean;
}

/** Receipt lines listed in `content` on failure; the rest are counted. */
const RECEIPT_LINES = 20;
/** Warnings listed in `content`, and the longest shown whole; all stay in `details.warnings`. */
const CONTENT_WARNINGS = 10;
const WARNING_CHARS = 600;

export interface RunOutcome {
  runId: string;
  ok: boolean;
  value?: unknown;
  hasValue: boolean;
  error?: GuestError & { hint?: string };
  /** The program as it ran, for the code frame of a failure. */
  code?: string;
  source?: SourceNote;
  durationMs: number;
  calls: CallRecord[];
  callCount: number;
  callsOmitted: number;
  console: ConsoleLine[];
  warnings: string[];
  output: OutputCollector;
  outputBudget: number;
}

export function buildRunResult(outcome: RunOutcome): RunResult {
  const structuredContent: RunStructuredContent = {
    status: outcome.ok ? "ok" : "error",
    tool_calls: outcome.callCount,
    duration_ms: outcome.durationMs,
  };
  if (outcome.hasValue) structuredContent.value = outcome.value;
  const failure = outcome.error && { ...outcome.error, message: wellFormed(outcome.error.message), ...(outcome.error.hint === undefined ? {} : { hint: wellFormed(outcome.error.hint) }) };
  if (failure) {
    const error: RunStructuredContent["error"] = { kind: failure.kind, message: failure.message };
    if (failure.line !== undefined) error.line = failure.line;
    if (failure.column !== undefined) error.column = failure.column;
    if (failure.hint !== undefined) error.hint = failure.hint;
    structuredContent.error = error;
  }

  const warnings = outcome.warnings.map(wellFormed);
  const printed = outcome.output.totalBytes > 0;
  if (outcome.hasValue && printed) {
    const bytes = Buffer.byteLength(JSON.stringify(outcome.value) ?? "");
    warnings.push(`the return value (${formatBytes(bytes)} of JSON) is not shown because the program printed with text(); text() it to see it here`);
  }
  if (!printed && outcome.console.length > 0) {
    const one = outcome.console.length === 1;
    warnings.push(`the program wrote ${outcome.console.length} console line${one ? "" : "s"}, which ${one ? "does" : "do"} not reach you (console.* goes to logs): print with text()`);
  }

  let header = "";
  let footer = "";
  if (failure) {
    const at = failure.line !== undefined ? ` (line ${failure.line}, column ${failure.column ?? 1})` : "";
    header = `Script failed (${failure.kind}): ${failure.message}${at}`;
    const frame = failure.line !== undefined && outcome.code !== undefined ? codeFrame(outcome.code, failure.line, failure.column) : "";
    if (frame) header += `\n${frame}`;
    if (failure.hint) header += `\n${failure.hint}`;
    footer = receipt(outcome.calls, outcome.callCount);
  }
  const separators = (header ? 1 : 0) + (footer ? 1 : 0);
  let room = Math.max(0, outcome.outputBudget - Buffer.byteLength(header) - Buffer.byteLength(footer) - separators * 2);
  // What the model must act on, bounded: at most half of what is left, the rest in details.warnings.
  let notes = warningsText(warnings);
  if (notes) {
    if (Buffer.byteLength(notes) + 2 > room / 2) notes = cut(notes, Math.floor(room / 2) - 2);
    if (notes) room = Math.max(0, room - Buffer.byteLength(notes) - 2);
  }
  const rendered = outcome.output.render(room);
  let body = rendered.text;
  if (!failure && body === "") {
    body = outcome.hasValue ? renderValue(outcome.value, room) : "(no output)";
  }
  const text = wellFormed([header, body, notes, footer].filter((part) => part !== "").join("\n\n"));

  const details: RunDetails = {
    runId: outcome.runId,
    durationMs: outcome.durationMs,
    calls: outcome.calls,
    // A lone surrogate (from text(), a tool, a thrown value) reaches no reader: each becomes U+FFFD.
    console: outcome.console.some((line) => wellFormed(line.text) !== line.text) ? outcome.console.map((line) => ({ level: line.level, text: wellFormed(line.text) })) : outcome.console,
    warnings,
  };
  if (outcome.callsOmitted > 0) details.callsOmitted = outcome.callsOmitted;
  if (rendered.fullOutputPath) details.fullOutputPath = rendered.fullOutputPath;
  if (outcome.source && Object.keys(outcome.source).length > 0) details.source = outcome.source;

  const result: RunResult = { content: [{ type: "text", text }], structuredContent, details };
  if (!outcome.ok) result.isError = true;
  return result;
}

/**
 * A warning about a run found after its result was rendered (its session's save failed): into
 * details.warnings and at the end of `content`, cut like any other warning, so the model reads
 * it too. (At most a warning's length past the output budget, once, on a failure the run never saw.)
 */
export function addLateWarning(result: RunResult, warning: string): void {
  const shown = wellFormed(warning);
  result.details.warnings.push(shown);
  const block = result.content[0];
  if (block) block.text += `\n\nWarning: ${shown.length > WARNING_CHARS ? `${headChars(shown, WARNING_CHARS)}…` : shown}`;
}

function warningsText(warnings: readonly string[]): string {
  if (warnings.length === 0) return "";
  const lines = warnings.slice(0, CONTENT_WARNINGS).map((warning) => `- ${warning.length > WARNING_CHARS ? `${headChars(warning, WARNING_CHARS)}…` : warning}`);
  if (warnings.length > CONTENT_WARNINGS) lines.push(`- … and ${warnings.length - CONTENT_WARNINGS} more in details.warnings`);
  return `Warnings:\n${lines.join("\n")}`;
}

function cut(text: string, bytes: number): string {
  if (bytes < 40) return "";
  const marker = "\n[… more warnings in details.warnings]";
  return takeHead(text, bytes - Buffer.byteLength(marker)) + marker;
}

function renderValue(value: unknown, room: number): string {
  const json = JSON.stringify(value, null, 2) ?? String(value);
  if (Buffer.byteLength(json) <= room) return json;
  const marker = `\n[… return value cut to fit the ${room}-byte output budget; read it from structuredContent.value …]`;
  return takeHead(json, room - Buffer.byteLength(marker)) + marker;
}

function receipt(calls: CallRecord[], callCount: number): string {
  if (callCount === 0) return "No tool calls were made before the failure.";
  const lines = calls.slice(0, RECEIPT_LINES).map((call) => `- tools.${call.tool}: ${call.status}`);
  const more = callCount - Math.min(calls.length, RECEIPT_LINES);
  if (more > 0) lines.push(`- … and ${more} more`);
  return `Tool calls made before the failure (not undone):\n${lines.join("\n")}`;
}

/** An interrupted run (docs/approvals.md): what waits for whom, the continuation, and the receipt so far. */
export function buildInterruptedResult(
  outcome: Pick<RunOutcome, "runId" | "durationMs" | "calls" | "callCount" | "callsOmitted" | "console" | "warnings" | "source">,
  pending: PendingApproval[],
  continuation: string,
  resumeHint: string,
): RunResult {
  const structuredContent: RunStructuredContent = { status: "interrupted", pending_approvals: pending, continuation, tool_calls: outcome.callCount, duration_ms: outcome.durationMs };
  const details: RunDetails = { runId: outcome.runId, durationMs: outcome.durationMs, calls: outcome.calls, console: outcome.console, warnings: outcome.warnings.map(wellFormed) };
  if (outcome.callsOmitted > 0) details.callsOmitted = outcome.callsOmitted;
  if (outcome.source && Object.keys(outcome.source).length > 0) details.source = outcome.source;
  return { content: [{ type: "text", text: wellFormed(interruptedText(pending, resumeHint)) }], structuredContent, details };
}
