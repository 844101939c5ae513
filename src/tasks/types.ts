// The task record and its parts (statuses, usage, report, owner), as the host keeps them
// (camelCase); src/ptc/records.ts is their snake_case projection for programs.
export const TASK_STATUSES = ["queued", "running", "stopping", "succeeded", "failed", "canceled", "lost"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(["succeeded", "failed", "canceled", "lost"]);
export const ACTIVE_STATUSES: readonly TaskStatus[] = ["queued", "running", "stopping"];

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}

// Each closed set of values is listed once, here; its type is derived from the list, and the zod
// schemas that check stored records (record-schema.ts) and programs' views (ptc/records.ts) are
// built from the same list, so the three can never disagree.
export const REPORT_CHANNELS = ["tool", "prompt-json", "none", "opted-out"] as const;
export type ReportChannel = (typeof REPORT_CHANNELS)[number];
export const READ_ONLY_TIERS = ["enforced", "advisory"] as const;
export type ReadOnlyTier = (typeof READ_ONLY_TIERS)[number];
export const LOST_REASONS = ["host_exited_while_running", "lost_on_restart", "worker_lost"] as const;
/** `worker_lost`: the queue worker running the task died or lost Redis (its lock expired). */
export type LostReason = (typeof LOST_REASONS)[number];

/** The queue worker that ran a task (Redis backend only). */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
}

/**
 * An earlier run of a task that its queue worker lost, kept on the record when the agent opted
 * into `retries` and the task was queued again (Redis backend only; docs/distributed.md).
 */
export interface LostAttempt {
  worker: WorkerInfo;
  startedAt?: number;
  lostAt: number;
  /** The size of the task's log when the attempt was lost: the next attempt's output follows. */
  outputBytes: number;
}
/** `workflow`: not an agent but a workflow's graph, run in-process by the host (see SpawnRequest.workflow). */
export const DRIVER_KINDS = ["script", "command", "openai", "function", "workflow"] as const;
export type DriverKind = (typeof DRIVER_KINDS)[number];

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
 * Which process owns a record. The start time disambiguates a reused pid; `hostId` names the
 * owner's lock file on a data dir, which is how another host (possibly in another PID namespace,
 * where the pid means nothing) tells whether the owner still runs.
 */
export interface Owner {
  pid: number;
  startTime: string;
  /** Absent on records written before host locks existed: their liveness is judged by pid. */
  hostId?: string;
}

/** What a later host needs to stop a command task's processes (see processes.ts). */
export interface TaskProcessGroup {
  pgid: number;
  startTime: string;
  pidNamespace?: string;
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
  /** Bytes the child printed past the host's output cap that the log does not hold. */
  outputCutBytes?: number;
  /** A command task's process group, recorded when it started. */
  processes?: TaskProcessGroup;
  /** The queue worker that took the task (Redis backend): where its processes run. */
  worker?: WorkerInfo;
  /** Earlier attempts lost with their worker, oldest first (agents with `retries` only); the record is the current one. */
  lostAttempts?: LostAttempt[];
}

export function zeroUsage(): Usage {
  return { input: 0, output: 0, cost: 0, turns: 0 };
}
