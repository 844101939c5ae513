// Rendering task records for people: the `codemode tasks` table, `codemode task <id>` header and
// the live progress lines of `codemode run`. Pure functions of records, so they are testable.
// Every string a record carries may come from a program, a task's text or a child (label, error,
// stop reason, report): each passes through forTerminal before it is styled, so the only escape
// sequences in what these return are their own colours.
import Table from "cli-table3";
import cliTruncate from "cli-truncate";
import stringWidth from "string-width";
import pc from "picocolors";
import type { TaskRecord, TaskStatus } from "../tasks/index.js";
import { formatBytes, formatDuration } from "../text.js";
import { forTerminal as shown } from "./io.js";
import { formatUsage, hasTokens } from "./usage-text.js";

export type Colors = ReturnType<typeof pc.createColors>;

export function colors(enabled: boolean): Colors {
  return pc.createColors(enabled);
}

export function paint(c: Colors, status: TaskStatus): string {
  switch (status) {
    case "succeeded":
      return c.green(status);
    case "failed":
    case "lost":
      return c.red(status);
    case "canceled":
    case "stopping":
      return c.yellow(status);
    case "running":
      return c.cyan(status);
    default:
      return c.dim(shown(status));
  }
}

function elapsed(record: TaskRecord, now: number): string {
  if (record.startedAt === undefined) return "—";
  return formatDuration((record.endedAt ?? now) - record.startedAt);
}

/**
 * `text` in at most `columns` terminal columns (a CJK character or an emoji takes two; colours
 * take none), cut with "…". cli-truncate can land one column over when the cut falls on a wide
 * character, so it is asked again for one less.
 */
export function truncateColumns(text: string, columns: number): string {
  let out = cliTruncate(text, columns);
  for (let room = columns - 1; stringWidth(out) > columns && room > 0; room--) out = cliTruncate(text, room);
  return out;
}

/** One line of at most `max` terminal columns, its control characters made visible. */
function cut(text: string, max: number): string {
  return truncateColumns(shown(text.replace(/\s+/g, " ").trim()), max);
}

/** The task table: one row per record, oldest first, as `ptc_task_list` details hold them. */
export function renderTaskTable(records: readonly TaskRecord[], options: { color: boolean; now?: number }): string {
  const c = colors(options.color);
  const now = options.now ?? Date.now();
  // Usage is a column only when some task counted tokens or cost: turns alone are noise.
  const usage = records.some((r) => hasTokens(r.usage));
  const table = new Table({
    head: ["id", "status", "agent", "label", "depth", "output", "time", ...(usage ? ["usage"] : []), "note"].map((h) => c.bold(h)),
    style: { head: [], border: [], compact: true, "padding-left": 0, "padding-right": 0 },
    chars: {
      top: "",
      "top-mid": "",
      "top-left": "",
      "top-right": "",
      bottom: "",
      "bottom-mid": "",
      "bottom-left": "",
      "bottom-right": "",
      left: "",
      "left-mid": "",
      mid: "",
      "mid-mid": "",
      right: "",
      "right-mid": "",
      middle: "  ",
    },
  });
  for (const r of records) {
    const note = r.lostReason ? `${r.lostReason}${r.errorMessage ? `: ${r.errorMessage}` : ""}` : (r.errorMessage ?? r.report?.summary ?? "");
    table.push([
      shown(r.id),
      paint(c, r.status),
      shown(r.agent),
      cut(r.label, 30),
      String(r.depth),
      formatBytes(r.outputBytes),
      elapsed(r, now),
      ...(usage ? [formatUsage(r.usage)] : []),
      cut(note, 60),
    ]);
  }
  return table
    .toString()
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n");
}

/** Summary lines of one task, for `codemode task <id>`. */
export function renderTaskHeader(r: TaskRecord, options: { color: boolean; now?: number }): string {
  const c = colors(options.color);
  const lines = [`task ${shown(r.id)}  ${paint(c, r.status)}  agent ${shown(r.agent)}${r.label !== r.agent ? `  label "${shown(r.label)}"` : ""}  depth ${r.depth}`];
  const facts: string[] = [`driver ${shown(r.driver)}`];
  if (r.startedAt !== undefined) facts.push(`ran ${elapsed(r, options.now ?? Date.now())}`);
  if (r.exitCode !== undefined) facts.push(`exit ${r.exitCode}`);
  if (r.parentId) facts.push(`parent ${shown(r.parentId)}`);
  if (r.readOnlyTier) facts.push(`read-only ${shown(r.readOnlyTier)}`);
  lines.push(facts.join(" · "));
  lines.push(`usage: ${formatUsage(r.usage)}`);
  if (r.errorMessage) lines.push(c.red(`error: ${shown(r.errorMessage)}`));
  if (r.lostReason) lines.push(c.red(`lost: ${shown(r.lostReason)}`));
  if (r.stopReason) lines.push(`stopped: ${shown(r.stopReason)}`);
  if (r.report) {
    lines.push(`report (${shown(String(r.reportChannel))}): ${shown(r.report.summary)}`);
    for (const f of r.report.findings) lines.push(`  - ${shown(f.what)}: ${shown(f.evidence)}`);
    if (r.report.files_touched.length) lines.push(`  files touched: ${shown(r.report.files_touched.join(", "))}`);
  } else if (r.reportChannel) {
    lines.push(`report: ${shown(r.reportChannel)}`);
  }
  return lines.join("\n");
}

/** One live progress line: status, label, bytes, time, and usage when the agent counts tokens. */
export function progressLine(r: TaskRecord, options: { color: boolean; now?: number }): string {
  const c = colors(options.color);
  const label = cut(r.label === r.agent ? r.agent : `${r.label} (${r.agent})`, 120);
  const parts = [`${"  ".repeat(r.depth > 0 ? r.depth - 1 : 0)}${paint(c, r.status)}`, label, formatBytes(r.outputBytes), elapsed(r, options.now ?? Date.now())];
  if (hasTokens(r.usage)) parts.push(formatUsage(r.usage));
  if (r.errorMessage) parts.push(c.red(cut(r.errorMessage, 80)));
  return parts.join("  ");
}
