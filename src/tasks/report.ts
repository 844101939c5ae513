// A child's report: the schema it must fit (extra keys, a usage claim among them, are dropped) and
// the `prompt-json` channel that finds it in a fenced JSON block at the end of the final text.
import { z } from "zod";
import type { Report } from "./types.js";

// Extra keys (a child's own "usage" claim among them) are stripped: the host stamps usage itself.
const reportSchema = z.object({
  summary: z.string(),
  findings: z.array(z.object({ what: z.string(), evidence: z.string() })).default([]),
  files_touched: z.array(z.string()).default([]),
});

export type ReportBody = Omit<Report, "usage">;

/** A report a child sent over its report channel, or undefined when it is not a valid report. */
export function parseReport(value: unknown): ReportBody | undefined {
  const parsed = reportSchema.safeParse(value);
  if (!parsed.success) return undefined;
  return {
    summary: parsed.data.summary,
    findings: parsed.data.findings.map((f) => ({ what: f.what, evidence: f.evidence })),
    files_touched: [...parsed.data.files_touched],
  };
}

// Only a fence that closes the final text counts: a JSON example earlier in the prose is not a report.
const TRAILING_JSON_FENCE = /```json[ \t]*\r?\n([\s\S]*?)\r?\n```\s*$/;

/** The `prompt-json` channel: a fenced JSON block at the very end of the child's final text. */
export function extractPromptJsonReport(finalText: string): ReportBody | undefined {
  const m = TRAILING_JSON_FENCE.exec(finalText);
  if (!m) return undefined;
  try {
    return parseReport(JSON.parse(m[1]!));
  } catch {
    return undefined;
  }
}
