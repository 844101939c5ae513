import { isTerminal, type Owner, type TaskRecord, type TaskStatus } from "./types.js";
import { sameOwner } from "./owner.js";

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
  readonly kind: "memory" | "sqlite";
  /** Where output logs live on disk, when they do. */
  readonly dataDir?: string;
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

export class MemoryTaskStore implements TaskStore {
  readonly kind = "memory" as const;
  private readonly records = new Map<string, TaskRecord>();
  private readonly outputs = new Map<string, Buffer[]>();
  private readonly sizes = new Map<string, number>();
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

  appendOutput(id: string, chunk: Buffer): void {
    this.assertOpen();
    let chunks = this.outputs.get(id);
    if (!chunks) this.outputs.set(id, (chunks = []));
    chunks.push(Buffer.from(chunk));
    this.sizes.set(id, (this.sizes.get(id) ?? 0) + chunk.length);
  }

  outputSize(id: string): number {
    return this.sizes.get(id) ?? 0;
  }

  readOutput(id: string, start: number, end: number): Buffer {
    const chunks = this.outputs.get(id);
    if (!chunks) return Buffer.alloc(0);
    if (chunks.length > 1) {
      // Coalesce once so repeated reads of a growing log stay cheap.
      const all = Buffer.concat(chunks);
      chunks.length = 0;
      chunks.push(all);
    }
    return Buffer.from(chunks[0]!.subarray(start, end));
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
