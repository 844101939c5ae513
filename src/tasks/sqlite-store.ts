import type Database from "better-sqlite3";
import { createRequire } from "node:module";
import { appendFileSync, closeSync, fstatSync, mkdirSync, openSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import type { ListFilter, ListPage, TaskStore } from "./store.js";
import type { Owner, TaskRecord, TaskStatus } from "./types.js";
import { ACTIVE_STATUSES } from "./types.js";
import { invalidArgument } from "./errors.js";

// The native module loads with the first persistent store: a host without a data dir never needs it.
let sqlite: typeof Database | undefined;
function openDatabase(file: string): Database.Database {
  sqlite ??= createRequire(import.meta.url)("better-sqlite3") as typeof Database;
  return new sqlite(file);
}

/**
 * Records live in `<dataDir>/tasks.db` (SQLite, WAL so several hosts can share one data dir);
 * output goes to append-only logs `<dataDir>/tasks/<id>.log`, written synchronously so whatever a
 * child printed before its host died is still readable afterwards.
 */
export class SqliteTaskStore implements TaskStore {
  readonly kind = "sqlite" as const;
  readonly dataDir: string;
  private readonly db: Database.Database;
  private readonly logDir: string;
  private readonly stmts: {
    insert: Database.Statement;
    replace: Database.Statement;
    get: Database.Statement;
    children: Database.Statement;
  };

  constructor(dataDir: string) {
    if (typeof dataDir !== "string" || dataDir.length === 0) throw invalidArgument("dataDir", "a non-empty directory path", dataDir);
    this.dataDir = dataDir;
    this.logDir = join(dataDir, "tasks");
    mkdirSync(this.logDir, { recursive: true });
    this.db = openDatabase(join(dataDir, "tasks.db"));
    this.db.pragma("journal_mode = WAL");
    // In WAL mode NORMAL still survives a killed process (the case that matters for a host);
    // only an OS crash can drop the last commits, and it saves an fsync per task transition.
    this.db.pragma("synchronous = NORMAL");
    // Another host may hold the write lock for a moment; wait rather than fail.
    this.db.pragma("busy_timeout = 5000");
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS tasks (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        owner_pid INTEGER NOT NULL,
        owner_start TEXT NOT NULL,
        parent_id TEXT,
        record TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status);
      CREATE INDEX IF NOT EXISTS tasks_parent ON tasks(parent_id);
    `);
    this.stmts = {
      insert: this.db.prepare(
        "INSERT INTO tasks (id, status, owner_pid, owner_start, parent_id, record) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      replace: this.db.prepare(
        "UPDATE tasks SET status = ?, record = ? WHERE id = ? AND status = ? AND owner_pid = ? AND owner_start = ?",
      ),
      get: this.db.prepare("SELECT record FROM tasks WHERE id = ?"),
      children: this.db.prepare("SELECT record FROM tasks WHERE parent_id = ? ORDER BY id"),
    };
  }

  insert(record: TaskRecord): void {
    this.stmts.insert.run(
      record.id,
      record.status,
      record.owner.pid,
      record.owner.startTime,
      record.parentId ?? null,
      JSON.stringify(record),
    );
  }

  replace(record: TaskRecord, expect: { status: TaskStatus; owner: Owner }): boolean {
    const info = this.stmts.replace.run(
      record.status,
      JSON.stringify(record),
      record.id,
      expect.status,
      expect.owner.pid,
      expect.owner.startTime,
    );
    return info.changes === 1;
  }

  get(id: string): TaskRecord | undefined {
    const row = this.stmts.get.get(id) as { record: string } | undefined;
    return row && (JSON.parse(row.record) as TaskRecord);
  }

  list(filter: ListFilter = {}): ListPage {
    const where = filter.status ? `WHERE status IN (${filter.status.map(() => "?").join(", ")})` : "";
    const params = filter.status ? [...filter.status] : [];
    const total = (this.db.prepare(`SELECT COUNT(*) AS n FROM tasks ${where}`).get(...params) as { n: number }).n;
    const limit = filter.limit ?? total;
    const rows = this.db
      .prepare(`SELECT record FROM tasks ${where} ORDER BY id DESC LIMIT ?`)
      .all(...params, limit) as { record: string }[];
    return { records: rows.reverse().map((r) => JSON.parse(r.record) as TaskRecord), total };
  }

  active(): TaskRecord[] {
    return this.list({ status: ACTIVE_STATUSES }).records;
  }

  children(parentId: string): TaskRecord[] {
    return (this.stmts.children.all(parentId) as { record: string }[]).map((r) => JSON.parse(r.record) as TaskRecord);
  }

  appendOutput(id: string, chunk: Buffer): void {
    appendFileSync(this.logPath(id), chunk);
  }

  outputSize(id: string): number {
    const path = this.logPath(id);
    try {
      return statSync(path).size;
    } catch {
      return 0;
    }
  }

  readOutput(id: string, start: number, end: number): Buffer {
    const path = this.logPath(id);
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch {
      return Buffer.alloc(0);
    }
    try {
      const size = fstatSync(fd).size;
      const stop = Math.min(end, size);
      if (stop <= start) return Buffer.alloc(0);
      const buf = Buffer.alloc(stop - start);
      let read = 0;
      while (read < buf.length) {
        const n = readSync(fd, buf, read, buf.length - read, start + read);
        if (n === 0) break;
        read += n;
      }
      return buf.subarray(0, read);
    } finally {
      closeSync(fd);
    }
  }

  outputPath(id: string): string {
    return this.logPath(id);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  private logPath(id: string): string {
    // Ids are generated by the host, but a record read back from a shared file must not be able
    // to point a log path outside the log directory.
    if (!/^[0-9A-HJKMNP-TV-Z]{26}$/.test(id)) throw invalidArgument("task_id", "a 26-character ULID", id);
    return join(this.logDir, `${id}.log`);
  }
}
