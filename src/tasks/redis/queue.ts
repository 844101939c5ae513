// The task queue on Redis: BullMQ carries the jobs (one per task, its id the task id) and does
// the distributed parts — fair hand-out to workers, per-worker and global concurrency, lock
// renewal and stall detection. The task records themselves live in RedisTaskStore. Stops and
// "task ended" notices travel on Redis pub/sub, each backed by a key or a poll so a notice lost
// to a reconnect is never a stop or an end missed.
import { Queue, type ConnectionOptions } from "bullmq";
import { Redis } from "ioredis";
import type { TraceCarrier } from "../../tracing.js";
import { attemptOf, type RemoteQueue, type TaskJob } from "../remote.js";
import type { TaskRecord } from "../types.js";
import { keyPrefix, redactCredentials, redisLabel, redisOptions, type RedisTarget } from "./connection.js";

/** BullMQ's own keys: `codemode:<queue>:…` beside the records' `codemode:<queue>:rec:…`. */
export const BULL_PREFIX = "codemode";
/** How often a waiter re-reads a record when no notice came (a notice can be lost to a reconnect). */
const POLL_MS = 1000;
/** How long a stop request waits for a worker to claim the task it names. */
const STOP_KEY_SECONDS = 24 * 60 * 60;

export class BullRemoteQueue implements RemoteQueue {
  private queue: Queue | undefined;
  private commands: Redis | undefined;
  private subscriber: Redis | undefined;
  private readonly waiters = new Map<string, Set<() => void>>();
  private stopHandler: ((id: string) => void) | undefined;
  private readonly prefix: string;
  private closed = false;

  private readonly onWarning: (message: string) => void;

  constructor(
    readonly target: RedisTarget,
    /** Connection trouble, for the operator (never carries credentials); a repeat of the last one is not said again. */
    onWarning: (message: string) => void = () => undefined,
  ) {
    this.prefix = keyPrefix(target.queue);
    let last: string | undefined;
    this.onWarning = (message) => {
      if (message === last) return;
      last = message;
      onWarning(message);
    };
  }

  /** The BullMQ queue, opened on first use (reading tasks never needs it). */
  bull(): Queue {
    if (!this.queue) {
      this.queue = new Queue(this.target.queue, { connection: bullConnection(this.target), prefix: BULL_PREFIX });
      this.queue.on("error", (err) => this.onWarning(`task queue: ${redactCredentials(err.message)}`));
    }
    return this.queue;
  }

  async enqueue(record: TaskRecord, trace?: TraceCarrier): Promise<void> {
    const attempt = attemptOf(record);
    const data: TaskJob = { id: record.id };
    if (attempt > 1) {
      data.attempt = attempt;
      // A retry carries the trace context of the spawn, as the first attempt's job did.
      trace ??= ((await this.bull().getJob(jobId(record.id, 1)))?.data as TaskJob | undefined)?.trace;
    }
    if (trace) data.trace = trace;
    // At most once per job: BullMQ never retries a job by itself (attempts: 1), and a worker that
    // stalls fails its job instead of letting it run again (see worker.ts). A retry the agent
    // opted into is a new job, put here by the host that found the attempt lost.
    await this.bull().add(record.agent, data, { jobId: jobId(record.id, attempt), attempts: 1, removeOnComplete: true, removeOnFail: { age: 3600 } });
  }

  async cancelQueued(record: TaskRecord): Promise<boolean> {
    const job = await this.bull().getJob(jobId(record.id, attemptOf(record)));
    // No job: it was never queued (the enqueue failed) or it is gone with a Redis that lost its data.
    if (!job) return true;
    try {
      // Refused while a worker holds the job's lock: then the worker has it.
      await job.remove();
      return true;
    } catch {
      return false;
    }
  }

  async requestStop(id: string, reason: string | undefined): Promise<void> {
    const redis = this.redis();
    await redis.set(`${this.prefix}stop:${id}`, reason ?? "", "EX", STOP_KEY_SECONDS);
    await redis.publish(`${this.prefix}stops`, id);
  }

  async stopRequested(id: string): Promise<{ reason?: string } | undefined> {
    const v = await this.redis().get(`${this.prefix}stop:${id}`);
    if (v === null) return undefined;
    return v === "" ? {} : { reason: v };
  }

  /** A worker hears stop requests for the tasks it runs. */
  async onStop(handler: (id: string) => void): Promise<void> {
    this.stopHandler = handler;
    await this.subscribe();
  }

  changed(id: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    void this.subscribe().catch(() => undefined);
    return new Promise((resolve) => {
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      const done = (): void => {
        clearTimeout(timer);
        set!.delete(done);
        if (set!.size === 0 && this.waiters.get(id) === set) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, POLL_MS);
      set.add(done);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const set of this.waiters.values()) for (const done of [...set]) done();
    this.subscriber?.disconnect();
    this.commands?.disconnect();
    await this.queue?.close().catch(() => undefined);
  }

  private redis(): Redis {
    if (!this.commands) this.commands = this.watched(new Redis(redisOptions(this.target)));
    return this.commands;
  }

  /** A connection whose loss and return are said (once each), and whose errors are said without credentials. */
  private watched(client: Redis): Redis {
    let lost = false;
    client.on("error", (err: Error) => this.onWarning(`task queue: ${redactCredentials(err.message)}`));
    client.on("close", () => {
      if (lost || this.closed) return;
      lost = true;
      this.onWarning(`lost the connection to Redis at ${redisLabel(this.target.url)}; reconnecting with backoff`);
    });
    client.on("ready", () => {
      if (!lost) return;
      lost = false;
      this.onWarning(`connected to Redis at ${redisLabel(this.target.url)} again`);
    });
    return client;
  }

  private subscribing: Promise<void> | undefined;

  private subscribe(): Promise<void> {
    if (this.subscribing) return this.subscribing;
    const sub = this.watched(new Redis(redisOptions(this.target)));
    this.subscriber = sub;
    sub.on("message", (channel: string, id: string) => {
      if (channel === `${this.prefix}ended`) {
        const set = this.waiters.get(id);
        if (set) for (const done of [...set]) done();
      } else if (channel === `${this.prefix}stops`) {
        this.stopHandler?.(id);
      }
    });
    // ioredis subscribes again by itself after a reconnect.
    this.subscribing = sub.subscribe(`${this.prefix}ended`, `${this.prefix}stops`).then(() => undefined);
    return this.subscribing;
  }
}

/** A task's job id: the task id for its first attempt, `<id>-<n>` for a later one (one job per attempt). */
export function jobId(id: string, attempt: number): string {
  return attempt === 1 ? id : `${id}-${attempt}`;
}

/** BullMQ's connection options are ioredis options, typed by BullMQ for every backend it has. */
export function bullConnection(target: RedisTarget): ConnectionOptions {
  return redisOptions(target) as ConnectionOptions;
}
