// A queue worker: takes task jobs from BullMQ and runs each through the task host's own runQueued
// (the same drivers, output log, host-counted usage and finish as a local task), under the trace
// context the job carries. BullMQ's stall detection is what says a worker is gone: a job whose
// lock expired is failed, never run again, and its task is marked lost with reason worker_lost —
// or, for an agent with `retries`, queued again as a new job (TaskHost.workerLost).
import { hostname } from "node:os";
import { Worker, type Job } from "bullmq";
import type { TaskHost } from "../host.js";
import type { TaskJob } from "../remote.js";
import { currentOwner } from "../owner.js";
import type { WorkerInfo } from "../types.js";
import { redactCredentials, type RedisTarget } from "./connection.js";
import { BULL_PREFIX, bullConnection, type BullRemoteQueue } from "./queue.js";

/** BullMQ's reason for a job whose worker stopped renewing its lock. */
const STALLED = /stalled/i;

export function workerIdentity(): WorkerInfo {
  const owner = currentOwner();
  return { id: `worker-${owner.hostId!.slice(0, 12)}`, host: hostname(), pid: process.pid };
}

export interface QueueWorkerOptions {
  host: TaskHost;
  remote: BullRemoteQueue;
  target: RedisTarget;
  /** Tasks this worker runs at once. */
  concurrency: number;
  /** Tasks running at once across all workers of the queue, when set. */
  maxRunning?: number;
  onWarning?: (message: string) => void;
}

export class QueueWorker {
  readonly info: WorkerInfo;
  private readonly worker: Worker;

  private constructor(
    private readonly options: QueueWorkerOptions,
    info: WorkerInfo,
  ) {
    this.info = info;
    const { host, target } = options;
    this.worker = new Worker(target.queue, async (job: Job<TaskJob>) => this.process(job), {
      connection: bullConnection(target),
      prefix: BULL_PREFIX,
      concurrency: options.concurrency,
      // BullMQ's worker name is how it announces itself to the queue (Queue.getWorkers()).
      name: info.id,
      autorun: false,
      lockDuration: target.lockMs,
      stalledInterval: Math.max(500, Math.floor(target.lockMs / 2)),
      // At most once: a stalled job is failed at once instead of being handed to another worker.
      maxStalledCount: 0,
    });
    this.worker.on("failed", (job, err) => {
      const id = job?.data?.id ?? job?.id;
      if (!id || !STALLED.test(err.message)) return;
      try {
        const rec = host.store.get(id);
        if (rec) host.workerLost(rec, job?.data?.attempt ?? 1);
      } catch (e) {
        options.onWarning?.(`could not mark task ${id} lost: ${(e as Error).message}`);
      }
    });
    this.worker.on("error", (err) => options.onWarning?.(`worker: ${redactCredentials(err.message)}`));
  }

  static async start(options: QueueWorkerOptions, info: WorkerInfo): Promise<QueueWorker> {
    const w = new QueueWorker(options, info);
    await options.remote.onStop((id) => {
      // Only the worker that runs the task has it live; every other worker ignores the notice.
      if (!options.host.isLive(id)) return;
      void options.remote
        .stopRequested(id)
        .catch(() => undefined)
        .then((req) => options.host.stop(id, req?.reason))
        .catch(() => undefined);
    });
    if (options.maxRunning !== undefined) await options.remote.bull().setGlobalConcurrency(options.maxRunning);
    void w.worker.run();
    await w.worker.waitUntilReady();
    return w;
  }

  private async process(job: Job<TaskJob>): Promise<string> {
    const rec = await this.options.host.runQueued(job.data.id, { attempt: job.data.attempt ?? 1, trace: job.data.trace });
    return rec?.status ?? "missing";
  }

  /** Takes no more jobs (the ones it runs go on). */
  async pause(): Promise<void> {
    await this.worker.pause(true).catch(() => undefined);
  }

  /** Lets go of the queue; the tasks it runs are stopped by closing its host first. */
  async close(): Promise<void> {
    await this.worker.close(true).catch(() => undefined);
  }
}
