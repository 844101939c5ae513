export const TASK_STATUSES = ["queued", "running", "stopping", "succeeded", "failed", "canceled", "lost"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(["succeeded", "failed", "canceled", "lost"]);
export const ACTIVE_STATUSES: readonly TaskStatus[] = ["queued", "running", "stopping"];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

export type ReportChannel = "tool" | "prompt-json" | "none" | "opted-out";
export type ReadOnlyTier = "enforced" | "advisory";
export type LostReason = "host_exited_while_running" | "lost_on_restart";
/** `workflow`: not an agent but a workflow's graph, run in-process by the host (see SpawnRequest.workflow). */
export type DriverKind = "script" | "command" | "openai" | "function" | "workflow";

/** The host's own measurement of what a child cost. Never taken from the child's claims. */
export interface Usage {
  input: number;
  output: number;
  cost: number;
  turns: number;
}

export interface Finding {
  what: string;
  evidence: string;
}

export interface Report {
  summary: string;
  findings: Finding[];
  files_touched: string[];
  /** Stamped by the host from its own count when the report is stored. */
  usage: Usage;
}

/**
 * Which process owns a record. The start time disambiguates a reused pid, so a host never
 * mistakes a dead owner whose pid was recycled for a live one.
 */
export interface Owner {
  pid: number;
  startTime: string;
}

/** The task record as the host keeps it (camelCase); the snake_case view is built by the tools. */
export interface TaskRecord {
  id: string;
  agent: string;
  driver: DriverKind;
  task: string;
  label: string;
  depth: number;
  parentId?: string;
  background: boolean;
  model?: string;
  cwd: string;
  status: TaskStatus;
  owner: Owner;
  createdAt: number;
  startedAt?: number;
  endedAt?: number;
  exitCode?: number;
  errorMessage?: string;
  lostReason?: LostReason;
  stopReason?: string;
  /** Present only on succeeded/failed/canceled records. */
  usage?: Usage;
  reportChannel?: ReportChannel;
  readOnlyTier?: ReadOnlyTier;
  /** Stored only when the task succeeded. */
  report?: Report;
  outputBytes: number;
}

export function zeroUsage(): Usage {
  return { input: 0, output: 0, cost: 0, turns: 0 };
}
