// TaskError: how every refusal and failure of the task host reaches a caller, with a stable code.
import { describeReceived } from "../text.js";

/**
 * Every task failure carries a stable `code` so tools and programs can branch on it, and a message
 * that tells the caller what to do next (the model reading it is expected to act on it).
 */
export type TaskErrorCode =
  | "invalid_argument"
  | "task_not_found"
  | "task_illegal_transition"
  | "task_depth_exceeded"
  | "task_queue_full"
  | "task_spawn_failed"
  | "task_failed"
  | "task_not_owner"
  | "task_output_range"
  | "task_host_closed"
  | "task_store_read_only"
  | "task_store_failed"
  | "agent_unknown"
  | "agent_invalid";

export class TaskError extends Error {
  override readonly name = "TaskError";
  readonly code: TaskErrorCode;
  /**
   * The task the error is about, when there is one (a failed foreground child keeps its id).
   * Declared, not initialised: absent means no own property, never one holding undefined.
   */
  declare readonly taskId?: string;

  constructor(code: TaskErrorCode, message: string, taskId?: string) {
    super(message);
    this.code = code;
    if (taskId !== undefined) this.taskId = taskId;
  }
}

export function invalidArgument(field: string, expected: string, got: unknown): TaskError {
  return new TaskError("invalid_argument", `"${field}" must be ${expected}, got ${describeReceived(got)}`);
}
