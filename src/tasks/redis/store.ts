// Task records and output logs in Redis, behind the same synchronous TaskStore interface as the
// embedded SQLite store, so the task host, the ptc_* tools and the CLI read any host's or any
// worker's tasks unchanged. Each call is one round trip, made in a worker thread (store-thread.ts).
import { createSyncFn } from "synckit";
import { compiledEntry } from "../../package-files.js";
import { TaskError } from "../errors.js";
import { parseRecord } from "../record-schema.js";
import type { ListFilter, ListPage, TaskStore } from "../store.js";
import { TASK_STATUSES, type Owner, type TaskRecord, type TaskStatus } from "../types.js";
import { currentOwner } from "../owner.js";
import { messageOf } from "../../text.js";
import { DEFAULT_LOCK_MS, DEFAULT_QUEUE, DEFAULT_STORE_TIMEOUT_MS, redactCredentials, redisLabel, type RedisTarget } from "./connection.js";
import type { StoreThreadCall } from "./store-thread.js";

const MAX_WARNINGS = 100;

let call: ((...args: Parameters<StoreThreadCall>) => unknown) | undefined;

function thread(timeoutMs: number): (...args: Parameters<StoreThreadCall>) => unknown {
  // One thread per process serves every Redis store of that process; its own timer bounds each
  // call, this one only guards against a thread that stopped answering at all.
  call ??= createSyncFn<StoreThreadCall>(compiledEntry("tasks/redis/store-thread"), { timeout: timeoutMs + 5000 }) as (...args: Parameters<StoreThreadCall>) => unknown;
  return call;
}

export function redisTarget(options: { url: string; queue?: string; lockMs?: number; storeTimeoutMs?: number }): RedisTarget {
  return {
    url: options.url,
    queue: options.queue ?? DEFAULT_QUEUE,
    lockMs: options.lockMs ?? DEFAULT_LOCK_MS,
    storeTimeoutMs: options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS,
  };
}

export class RedisTaskStore implements TaskStore {
  readonly kind = "redis" as const;
  readonly readOnly = false;
  readonly target: RedisTarget;
  readonly label: string;
  private readonly ownWarnings: string[] = [];
  private readonly handle: number;
  private readonly call: (...args: Parameters<StoreThreadCall>) => unknown;
  private closed = false;

  constructor(target: RedisTarget) {
    this.target = target;
    this.label = `${redisLabel(target.url)} (queue "${target.queue}")`;
    this.call = thread(target.storeTimeoutMs);
    this.handle = this.invoke(() => this.call("open", target.url, target.queue, currentOwner().hostId!, target.lockMs, target.storeTimeoutMs)) as number;
  }

  get warnings(): readonly string[] {
    return this.ownWarnings;
  }

  isOwnerAlive(owner: Owner): boolean {
    const self = currentOwner();
    if (owner.hostId === self.hostId) return true;
    // Owners of records in Redis always have a host id: its heartbeat key says whether it runs.
    if (owner.hostId === undefined) return false;
    return this.invoke(() => this.call("alive", this.handle, owner.hostId!)) as boolean;
  }

  insert(record: TaskRecord): void {
    this.assertOpen();
    const ok = this.invoke(() => this.call("insert", this.handle, record.id, JSON.stringify(record), record.status, record.parentId ?? ""));
    if (!ok) throw new Error(`task ${record.id} already exists in the store`);
  }

  replace(record: TaskRecord, expect: { status: TaskStatus; owner: Owner }): boolean {
    this.assertOpen();
    return this.invoke(() =>
      this.call("replace", this.handle, record.id, JSON.stringify(record), record.status, expect.status, expect.owner.pid, expect.owner.startTime, expect.owner.hostId ?? ""),
    ) as boolean;
  }

  get(id: string): TaskRecord | undefined {
    const json = this.invoke(() => this.call("get", this.handle, id)) as string | null;
    return json === null ? undefined : this.parse(json, id);
  }

  list(filter: ListFilter = {}): ListPage {
    const statuses = filter.status ? [...new Set(filter.status)] : [...TASK_STATUSES];
    const limit = filter.limit ?? 1_000_000;
    const page = this.invoke(() => this.call("list", this.handle, statuses, limit)) as { jsons: (string | null)[]; total: number };
    return { records: this.parseAll(page.jsons), total: page.total };
  }

  active(): TaskRecord[] {
    return this.parseAll(this.invoke(() => this.call("active", this.handle)) as (string | null)[]);
  }

  children(parentId: string): TaskRecord[] {
    return this.parseAll(this.invoke(() => this.call("children", this.handle, parentId)) as (string | null)[]);
  }

  appendOutput(id: string, chunk: Buffer): void {
    this.assertOpen();
    if (chunk.length === 0) return;
    this.invoke(() => this.call("append", this.handle, id, new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)));
  }

  outputSize(id: string): number {
    return this.invoke(() => this.call("size", this.handle, id)) as number;
  }

  readOutput(id: string, start: number, end: number): Buffer {
    const bytes = this.invoke(() => this.call("read", this.handle, id, start, end)) as Uint8Array;
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  outputPath(): undefined {
    return undefined;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.call("close", this.handle, currentOwner().hostId!);
    } catch {
      // Closing an unreachable connection: nothing is left to release.
    }
  }

  private parse(json: string, id: string): TaskRecord | undefined {
    const parsed = parseRecord(json);
    if ("record" in parsed) return parsed.record;
    this.warn(`task ${id} in Redis is not a valid record (${parsed.problem}); it is not shown`);
    return undefined;
  }

  private parseAll(jsons: readonly (string | null)[]): TaskRecord[] {
    const out: TaskRecord[] = [];
    for (const json of jsons) {
      if (json === null) continue;
      const r = this.parse(json, "?");
      if (r) out.push(r);
    }
    return out;
  }

  /** A Redis failure becomes a task_store_failed error that names the server, never its credentials. */
  private invoke(run: () => unknown): unknown {
    try {
      return run();
    } catch (err) {
      const message = redactCredentials(messageOf(err));
      this.warn(message);
      throw new TaskError("task_store_failed", `the task store in Redis (${this.label}) failed: ${message}`);
    }
  }

  /** A problem for whoever reads this store's warnings (the task host shows them with its own). */
  warn(message: string): void {
    this.ownWarnings.push(message);
    if (this.ownWarnings.length > MAX_WARNINGS) this.ownWarnings.shift();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("the task store is closed");
  }
}
