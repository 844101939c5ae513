// The legal moves between task statuses (docs/tasks.md#the-task-model), and the refusal of any
// other, naming what the task can still become.
import { TaskError } from "./errors.js";
import type { TaskStatus } from "./types.js";

const LEGAL: Record<TaskStatus, readonly TaskStatus[]> = {
  queued: ["running", "canceled", "lost"],
  // running → queued: only a task whose queue worker was lost, when its agent opted into retries.
  running: ["stopping", "succeeded", "failed", "canceled", "lost", "queued"],
  stopping: ["succeeded", "failed", "canceled", "lost"],
  succeeded: [],
  failed: [],
  canceled: [],
  lost: [],
};

export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return LEGAL[from].includes(to);
}

/** Throws a TaskError that says what the caller can do instead of the refused move. */
export function assertTransition(id: string, from: TaskStatus, to: TaskStatus): void {
  if (canTransition(from, to)) return;
  let hint: string;
  if (LEGAL[from].length === 0) {
    hint = `it has already ended (${from}); read its output with ptc_task_output or spawn a new task`;
  } else {
    hint = `from "${from}" it can only become ${LEGAL[from].map((s) => `"${s}"`).join(", ")}`;
  }
  throw new TaskError("task_illegal_transition", `task ${id} cannot go from "${from}" to "${to}": ${hint}`, id);
}
