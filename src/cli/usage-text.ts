// A task's usage as one line of text, apart from task-view.ts: workflow runs print it without
// loading the table and terminal libraries task-view draws with.
import type { Usage } from "../tasks/index.js";
import { forTerminal as shown } from "./io.js";

/** Whether a record's usage has anything besides turns: agents that count no tokens (scripts, commands) show none. */
export function hasTokens(usage: Usage | undefined): boolean {
  return usage !== undefined && (usage.input > 0 || usage.output > 0 || usage.cost > 0);
}

/** `in 1200 · out 340 · $0.0084 · 3 turns` (tokens and cost only where some were counted), or "—" where the host recorded no usage (yet). */
export function formatUsage(usage: Usage | undefined): string {
  if (!usage) return "—";
  const parts: string[] = [];
  if (usage.input > 0 || usage.output > 0) parts.push(`in ${usage.input} · out ${usage.output}`);
  if (usage.cost > 0) parts.push(`$${usage.cost.toFixed(4)}`);
  parts.push(`${usage.turns} turn${usage.turns === 1 ? "" : "s"}`);
  return shown(parts.join(" · "));
}
