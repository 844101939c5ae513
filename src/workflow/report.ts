// How validation problems read as text (docs/workflows.md#validation): two lines per problem (`error: <code>`, then
// the message), and where it is when the definition was text.
import type { WorkflowProblem } from "./definition.js";

export function formatProblem(problem: WorkflowProblem, severity: "error" | "warning", file?: string): string {
  const lines = [`${severity}: ${problem.code}`, problem.message];
  if (problem.line !== undefined) lines.push(`  at ${file === undefined ? "line " : `${file}:`}${problem.line}`);
  return lines.join("\n");
}

export function formatProblems(errors: readonly WorkflowProblem[], warnings: readonly WorkflowProblem[], file?: string): string {
  return [...errors.map((p) => formatProblem(p, "error", file)), ...warnings.map((p) => formatProblem(p, "warning", file))].join("\n\n");
}
