// What the task host needs from a distributed queue (the Redis backend implements it with
// BullMQ): tasks it spawns run on queue workers, and stops reach the worker that runs them.
import type { TraceCarrier } from "../tracing.js";
import type { TaskRecord, WorkerInfo } from "./types.js";

/** What a queue job carries: the task, its attempt (1 + its lost attempts), the spawning span's trace context. */
export interface TaskJob {
  id: string;
  attempt?: number;
  trace?: TraceCarrier;
}

/** The attempt a record is on: 1, plus one per attempt lost with its worker and queued again. */
export function attemptOf(record: TaskRecord): number {
  return (record.lostAttempts?.length ?? 0) + 1;
}

export interface RemoteQueue {
  /**
   * Hands a stored, queued record to the queue; a worker claims it from the store. A record on a
   * later attempt (queued again after its worker was lost) gets a job of its own, carrying the
   * first job's trace context when `trace` is not given.
   */
  enqueue(record: TaskRecord, trace?: TraceCarrier): Promise<void>;
  /**
   * Takes a queued task off the queue before any worker has it. True: no worker will ever run it
   * (the caller cancels the record); false: a worker has it already (ask it to stop).
   */
  cancelQueued(record: TaskRecord): Promise<boolean>;
  /** Asks whichever worker runs the task to stop it, now or as soon as it claims it. */
  requestStop(id: string, reason: string | undefined): Promise<void>;
  /** Whether a stop was requested for the task (checked by a worker once it claimed it). */
  stopRequested(id: string): Promise<{ reason?: string } | undefined>;
  /** Resolves when the task's record may have reached its end (a notification, or a poll tick). */
  changed(id: string): Promise<void>;
  close(): Promise<void>;
}

/** A host that is a queue worker: the tasks it claims carry its identity. */
export interface WorkerIdentity extends WorkerInfo {}
