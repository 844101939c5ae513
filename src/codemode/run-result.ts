// Assembling the RunResult of SPEC §4 from what a run produced. One budget covers every byte the
// model sees: the failure line, the program's output and the receipt of tool calls.
import type { ConsoleLine, ErrorKind, GuestError } from "../engine/protocol.js";
import type { TextContent } from "../tools/index.js";
import type { OutputCollector } from "./output.js";

export interface CallRecord {
  id: number;
  tool: string;
  args: string;
  status: "ok" | "error" | "cancelled";
  durationMs: number;
  error?: string;
}

// A type alias (not an interface) so it is assignable to the record type tool outputs use.
export type RunStructuredContent = {
  status: "ok" | "error";
  value?: unknown;
  error?: { kind: ErrorKind; message: string; line?: number; column?: number };
  tool_calls: number;
  duration_ms: number;
};

export interface RunDetails {
  runId: string;
  durationMs: number;
  calls: CallRecord[];
  /** Calls made but not listed in `calls` (the list is bounded). */
  callsOmitted?: number;
  console: ConsoleLine[];
  warnings: string[];
  fullOutputPath?: string;
}

export interface RunResult {
  content: TextContent[];
  structuredContent: RunStructuredContent;
  details: RunDetails;
  isError?: boolean;
}

/** Receipt lines listed in `content` on failure; the rest are counted. */
const RECEIPT_LINES = 20;

export interface RunOutcome {
  runId: string;
  ok: boolean;
  value?: unknown;
  hasValue: boolean;
  error?: GuestError;
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
  if (outcome.error) {
    const error: RunStructuredContent["error"] = { kind: outcome.error.kind, message: outcome.error.message };
    if (outcome.error.line !== undefined) error.line = outcome.error.line;
    if (outcome.error.column !== undefined) error.column = outcome.error.column;
    structuredContent.error = error;
  }

  let header = "";
  let footer = "";
  if (outcome.error) {
    const at = outcome.error.line !== undefined ? ` (line ${outcome.error.line}, column ${outcome.error.column ?? 1})` : "";
    header = `Script failed (${outcome.error.kind}): ${outcome.error.message}${at}`;
    footer = receipt(outcome.calls, outcome.callCount);
  }
  const separators = (header ? 1 : 0) + (footer ? 1 : 0);
  const room = Math.max(0, outcome.outputBudget - Buffer.byteLength(header) - Buffer.byteLength(footer) - separators * 2);
  const rendered = outcome.output.render(room);
  let body = rendered.text;
  if (!outcome.error && body === "") {
    body = outcome.hasValue ? renderValue(outcome.value, room) : "(no output)";
  }
  const text = [header, body, footer].filter((part) => part !== "").join("\n\n");

  const details: RunDetails = {
    runId: outcome.runId,
    durationMs: outcome.durationMs,
    calls: outcome.calls,
    console: outcome.console,
    warnings: outcome.warnings,
  };
  if (outcome.callsOmitted > 0) details.callsOmitted = outcome.callsOmitted;
  if (rendered.fullOutputPath) details.fullOutputPath = rendered.fullOutputPath;

  const result: RunResult = { content: [{ type: "text", text }], structuredContent, details };
  if (!outcome.ok) result.isError = true;
  return result;
}

function renderValue(value: unknown, room: number): string {
  const json = JSON.stringify(value, null, 2) ?? String(value);
  if (Buffer.byteLength(json) <= room) return json;
  const marker = `\n[… return value cut to fit the ${room}-byte output budget; read it from structuredContent.value …]`;
  return Buffer.from(json).subarray(0, Math.max(0, room - Buffer.byteLength(marker))).toString("utf8").replace(/\uFFFD$/, "") + marker;
}

function receipt(calls: CallRecord[], callCount: number): string {
  if (callCount === 0) return "No tool calls were made before the failure.";
  const lines = calls.slice(0, RECEIPT_LINES).map((call) => `- tools.${call.tool}: ${call.status}`);
  const more = callCount - Math.min(calls.length, RECEIPT_LINES);
  if (more > 0) lines.push(`- … and ${more} more`);
  return `Tool calls made before the failure (not undone):\n${lines.join("\n")}`;
}
