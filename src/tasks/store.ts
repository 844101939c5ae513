// Where task records and their output live: the TaskStore interface both stores implement, and the
// in-memory store for hosts without a data dir. The conditional replace is what keeps one writer
// per record.
import { isTerminal, type Owner, type TaskRecord, type TaskStatus } from "./types.js";
import { isPidOwnerAlive, sameOwner } from "./owner.js";

export interface ListFilter {
  status?: readonly TaskStatus[];
  limit?: number;
}

export interface ListPage {
  /** The most recent `limit` matches, oldest first. */
  records: TaskRecord[];
  /** How many records match the filter in total. */
  total: number;
}

/**
 * Where task records and output logs live. Writes are compare-and-set on the stored status and
 * owner so that only the owning host moves a record (one writer per record), while a reaper can
 * claim a dead owner's record atomically.
 */
export interface TaskStore {
  readonly kind: "memory" | "sqlite" | "redis";
  /** Where output logs live on disk, when they do. */
  readonly dataDir?: string;
  /** Records can be read but not written (a read-only data dir): writes throw `task_store_read_only`. */
  readonly readOnly: boolean;
  /** Problems met reading the store that are no one caller's error (rows set aside), newest last. */
  readonly warnings: readonly string[];
  /** Whether the host that owns a record still runs (for a data dir: whether it holds its lock). */
  isOwnerAlive(owner: Owner): boolean;
  insert(record: TaskRecord): void;
  /** Replaces a record if its stored status and owner still match; returns whether it did. */
  replace(record: TaskRecord, expect: { status: TaskStatus; owner: Owner }): boolean;
  get(id: string): TaskRecord | undefined;
  list(filter?: ListFilter): ListPage;
  /** Records in active statuses (queued, running, stopping), any owner. */
  active(): TaskRecord[];
  children(parentId: string): TaskRecord[];
  appendOutput(id: string, chunk: Buffer): void;
  outputSize(id: string): number;
  readOutput(id: string, start: number, end: number): Buffer;
  /** The path of the full output log, for stores that keep one on disk. */
  outputPath(id: string): string | undefined;
  close(): void;
}

export function clone(record: TaskRecord): TaskRecord {
  return structuredClone(record);
}

/** Logs are kept in blocks of about this size: no copy of the whole log per read or per tiny write. */
const BLOCK_BYTES = 64 * 1024;

class ChunkedLog {
  private readonly blocks: Buffer[] = [];
  /** End offset of each block. */
  private readonly ends: number[] = [];
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  size = 0;

  append(chunk: Buffer): void {
    this.pending.push(Buffer.from(chunk));
    this.pendingBytes += chunk.length;
    this.size += chunk.length;
    if (this.pendingBytes >= BLOCK_BYTES) this.seal();
  }

  read(start: number, end: number): Buffer {
    this.seal();
    const stop = Math.min(end, this.size);
    if (stop <= start) return Buffer.alloc(0);
    const out = Buffer.allocUnsafe(stop - start);
    // The first block that ends after `start`.
    let lo = 0;
    let hi = this.ends.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ends[mid]! > start) hi = mid;
      else lo = mid + 1;
    }
    let at = start;
    for (let i = lo; at < stop; i++) {
      const block = this.blocks[i]!;
      const blockStart = this.ends[i]! - block.length;
      const n = block.copy(out, at - start, at - blockStart, Math.min(block.length, stop - blockStart));
      at += n;
    }
    return out;
  }

  private seal(): void {
    if (this.pending.length === 0) return;
    this.blocks.push(this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes));
    this.ends.push(this.size);
    this.pending = [];
    this.pendingBytes = 0;
  }
}

export class MemoryTaskStore implements TaskStore {
  readonly kind = "memory" as const;
  readonly readOnly = false;
  readonly warnings: readonly string[] = [];
  private readonly records = new Map<string, TaskRecord>();
  private readonly outputs = new Map<string, ChunkedLog>();
  private closed = false;

  insert(record: TaskRecord): void {
    this.assertOpen();
    if (this.records.has(record.id)) throw new Error(`task ${record.id} already exists in the store`);
    this.records.set(record.id, clone(record));
  }

  replace(record: TaskRecord, expect: { status: TaskStatus; owner: Owner }): boolean {
    this.assertOpen();
    const current = this.records.get(record.id);
    if (!current || current.status !== expect.status || !sameOwner(current.owner, expect.owner)) return false;
    this.records.set(record.id, clone(record));
    return true;
  }

  get(id: string): TaskRecord | undefined {
    const r = this.records.get(id);
    return r && clone(r);
  }

  list(filter: ListFilter = {}): ListPage {
    const wanted = filter.status ? new Set(filter.status) : undefined;
    // Map iteration order is insertion order, and ids are monotonic ULIDs: creation order.
    const matches: TaskRecord[] = [];
    for (const r of this.records.values()) if (!wanted || wanted.has(r.status)) matches.push(r);
    const limit = filter.limit ?? matches.length;
    return { records: matches.slice(Math.max(0, matches.length - limit)).map(clone), total: matches.length };
  }

  active(): TaskRecord[] {
    return [...this.records.values()].filter((r) => !isTerminal(r.status)).map(clone);
  }

  children(parentId: string): TaskRecord[] {
    return [...this.records.values()].filter((r) => r.parentId === parentId).map(clone);
  }

  isOwnerAlive(owner: Owner): boolean {
    return isPidOwnerAlive(owner);
  }

  appendOutput(id: string, chunk: Buffer): void {
    this.assertOpen();
    let log = this.outputs.get(id);
    if (!log) this.outputs.set(id, (log = new ChunkedLog()));
    log.append(chunk);
  }

  outputSize(id: string): number {
    return this.outputs.get(id)?.size ?? 0;
  }

  readOutput(id: string, start: number, end: number): Buffer {
    return this.outputs.get(id)?.read(start, end) ?? Buffer.alloc(0);
  }

  outputPath(): undefined {
    return undefined;
  }

  close(): void {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("the task store is closed");
  }
}
