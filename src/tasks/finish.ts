// How a task's run ends, decided from what the host saw — pure: no store, no clock, no I/O. The
// task host (host.ts) gathers the facts when a driver returns and writes the record it is told;
// docs/tasks.md#the-task-model states the rules ("succeeded" needs exit 0 and final output, a
// child that exits 0 after reporting an error failed, a report is stored only on success).
import { extractPromptJsonReport, type ReportBody } from "./report.js";
import type { ReportChannel } from "./types.js";

export interface FinishFacts {
  /** Why the host itself failed the task (its output could not be written). */
  hostFailure?: string;
  /** A stop was asked for (or forced): the task is canceled whatever the driver says. */
  canceled: boolean;
  exitCode: number;
  /** The driver's own account of a failure. */
  driverError?: string;
  /** The last error the child reported. */
  lastError?: string;
  /** Whether this attempt's output holds anything but whitespace; asked only when it matters. */
  hasFinalOutput: () => boolean;
}

export interface FinishOutcome {
  status: "succeeded" | "failed" | "canceled";
  error?: string;
}

export function finishOutcome(f: FinishFacts): FinishOutcome {
  if (f.hostFailure !== undefined) return { status: "failed", error: f.hostFailure };
  if (f.canceled) return { status: "canceled" };
  // What the child said went wrong beats a bare exit status.
  if (f.exitCode !== 0) return { status: "failed", error: f.lastError ?? f.driverError ?? `exited with code ${f.exitCode}` };
  if (f.lastError !== undefined) return { status: "failed", error: `exited 0 after reporting an error: ${f.lastError}` };
  if (!f.hasFinalOutput()) return { status: "failed", error: "exited 0 without any final output" };
  return { status: "succeeded" };
}

export interface ReportFacts {
  status: FinishOutcome["status"];
  /** The agent's `report` setting (false = opted out). */
  wantsReport: boolean;
  /** A report the child sent as an event. */
  toolReport?: ReportBody;
  /** The end of this attempt's output, where a prompt-json report would sit; read only when needed. */
  outputTail: () => string;
}

/**
 * What is stored as the task's report, and the channel that says so. Reports are stored only on
 * success: a failed child's trailing JSON block or report event is not a report, so its channel
 * is "none" (or "opted-out" for an agent that never reports).
 */
export function chooseReport(f: ReportFacts): { channel: ReportChannel; report?: ReportBody } {
  if (!f.wantsReport) return { channel: "opted-out" };
  if (f.status !== "succeeded") return { channel: "none" };
  if (f.toolReport) return { channel: "tool", report: f.toolReport };
  const tail = f.outputTail();
  const report = tail === "" ? undefined : extractPromptJsonReport(tail);
  return report ? { channel: "prompt-json", report } : { channel: "none" };
}
