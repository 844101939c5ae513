// The persistent task store: records in SQLite (docs/decisions/0005-wal-sqlite-for-task-records.md)
// and output logs as files under the data dir, both refusing symlinks; read-only when the data
// dir cannot be written.
import { accessSync, closeSync, constants as fsConstants, copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appendPrivate, ensurePrivateDir, openRegular, readAt, refuseNotRegular, regularFileSize } from "../safe-fs.js";
import type { ListFilter, ListPage, TaskStore } from "./store.js";
import type { Owner, TaskRecord, TaskStatus } from "./types.js";
import { ACTIVE_STATUSES } from "./types.js";
import { invalidArgument, TaskError } from "./errors.js";
import { holdHostLock, hostLockState, removeStaleLock } from "./host-lock.js";
import { currentOwner, isPidOwnerAlive } from "./owner.js";
import { parseRecord } from "./record-schema.js";
import { openDatabase, type Database } from "./sqlite.js";
import { messageOf } from "../text.js";

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    owner_pid INTEGER NOT NULL,
    owner_start TEXT NOT NULL,
    parent_id TEXT,
    record TEXT NOT NULL,
    owner_host TEXT
  );
  CREATE INDEX IF NOT EXISTS tasks_status ON tasks(status);
  CREATE INDEX IF NOT EXISTS tasks_parent ON tasks(parent_id);
  CREATE TABLE IF NOT EXISTS quarantine (
    row_id INTEGER,
    id TEXT,
    record TEXT,
    reason TEXT NOT NULL,
    quarantined_at INTEGER NOT NULL
  );
`;
/** Warnings kept by a store; older ones are dropped. */
const MAX_WARNINGS = 100;

interface Row {
  rowid: number;
  id: unknown;
  status: unknown;
  record: unknown;
}

const ROW = "SELECT rowid, id, status, record FROM tasks";

function isReadOnlyError(err: unknown): boolean {
  const code = (err as { code?: string }).code ?? "";
  return ["EROFS", "EACCES", "EPERM", "SQLITE_READONLY", "SQLITE_CANTOPEN"].includes(code) || code.startsWith("SQLITE_READONLY");
}

function isFullError(err: unknown): boolean {
  const code = (err as { code?: string }).code ?? "";
  // A full disk shows as SQLITE_IOERR_* when even the -shm file cannot be made or grown.
  return code === "SQLITE_FULL" || code === "ENOSPC" || code === "EDQUOT" || code.startsWith("SQLITE_IOERR");
}

/** Why a directory cannot be written, or undefined when it can. */
function unwritable(dir: string): string | undefined {
  try {
    accessSync(dir, fsConstants.W_OK);
    return undefined;
  } catch (err) {
    return messageOf(err);
  }
}

/**
 * Records live in `<dataDir>/tasks.db` (SQLite, WAL so several hosts can share one data dir);
 * output goes to append-only logs `<dataDir>/tasks/<id>.log`, written synchronously so whatever a
 * child printed before its host died is still readable afterwards. A data dir that cannot be
 * written (read-only mount, full disk at start) is opened read-only: tasks can be listed and read.
 * Rows that are not valid records are moved to a `quarantine` table with a warning naming them.
 */
export class SqliteTaskStore implements TaskStore {
  readonly kind = "sqlite" as const;
  readonly dataDir: string;
  /** The database file, as messages name it. */
  readonly file: string;
  private readonly db: Database.Database;
  private readonly logDir: string;
  private writable: boolean;
  private readonly ownWarnings: string[] = [];
  /** Rows already reported as bad (by rowid), with their status column, so totals can leave them out. */
  private readonly badRows = new Map<number, unknown>();
  private releaseLock: (() => void) | undefined;
  private snapshotDir: string | undefined;
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
    this.file = join(dataDir, "tasks.db");
    const opened = this.open();
    this.db = opened.db;
    this.writable = opened.writable;
    this.stmts = {
      insert: this.db.prepare("INSERT INTO tasks (id, status, owner_pid, owner_start, owner_host, parent_id, record) VALUES (?, ?, ?, ?, ?, ?, ?)"),
      replace: this.db.prepare("UPDATE tasks SET status = ?, record = ? WHERE id = ? AND status = ? AND owner_pid = ? AND owner_start = ? AND owner_host IS ?"),
      get: this.db.prepare(`${ROW} WHERE id = ?`),
      children: this.db.prepare(`${ROW} WHERE parent_id = ? ORDER BY id`),
    };
    if (this.writable) {
      // The lock that tells other hosts this one runs; without it, this host must not own records.
      try {
        this.releaseLock = holdHostLock(dataDir, currentOwner().hostId!);
      } catch (err) {
        this.writable = false;
        this.warn(`${dataDir}: could not take this host's lock (${messageOf(err)}); tasks can be listed and read here, not started`);
      }
    }
  }

  get readOnly(): boolean {
    return !this.writable;
  }

  get warnings(): readonly string[] {
    return this.ownWarnings;
  }

  isOwnerAlive(owner: Owner): boolean {
    if (owner.hostId === undefined) return isPidOwnerAlive(owner);
    const state = hostLockState(this.dataDir, owner.hostId);
    if (state === "held") return true;
    if (state === "free" && this.writable) removeStaleLock(this.dataDir, owner.hostId);
    return false;
  }

  insert(record: TaskRecord): void {
    this.assertWritable();
    this.guard(() => this.stmts.insert.run(record.id, record.status, record.owner.pid, record.owner.startTime, record.owner.hostId ?? null, record.parentId ?? null, JSON.stringify(record)));
  }

  replace(record: TaskRecord, expect: { status: TaskStatus; owner: Owner }): boolean {
    this.assertWritable();
    const info = this.guard(() => this.stmts.replace.run(record.status, JSON.stringify(record), record.id, expect.status, expect.owner.pid, expect.owner.startTime, expect.owner.hostId ?? null));
    return info.changes === 1;
  }

  get(id: string): TaskRecord | undefined {
    const row = this.guard(() => this.stmts.get.get(id) as Row | undefined);
    return row && this.read(row);
  }

  list(filter: ListFilter = {}): ListPage {
    const statuses = filter.status ? [...filter.status] : undefined;
    const inStatus = statuses ? `status IN (${statuses.map(() => "?").join(", ")})` : "";
    const count = (): number => {
      const n = (this.guard(() => this.db.prepare(`SELECT COUNT(*) AS n FROM tasks ${inStatus ? `WHERE ${inStatus}` : ""}`).get(...(statuses ?? []))) as { n: number }).n;
      // Bad rows that could not be moved away (a read-only data dir) are not tasks.
      let skipped = 0;
      for (const status of this.badRows.values()) if (!statuses || statuses.includes(status as TaskStatus)) skipped++;
      return Math.max(0, n - skipped);
    };
    const limit = filter.limit ?? count();
    const records: TaskRecord[] = [];
    // Page through the newest rows until `limit` valid records are found: bad rows do not shorten a page.
    let before: unknown;
    while (records.length < limit) {
      const where = [inStatus, before === undefined ? "" : "id < ?"].filter(Boolean).join(" AND ");
      const params = [...(statuses ?? []), ...(before === undefined ? [] : [before]), limit - records.length];
      const rows = this.guard(() => this.db.prepare(`${ROW} ${where ? `WHERE ${where}` : ""} ORDER BY id DESC LIMIT ?`).all(...params) as Row[]);
      if (rows.length === 0) break;
      for (const row of rows) {
        const record = this.read(row);
        if (record) records.push(record);
      }
      before = rows.at(-1)!.id;
    }
    return { records: records.reverse(), total: count() };
  }

  active(): TaskRecord[] {
    return this.list({ status: ACTIVE_STATUSES }).records;
  }

  children(parentId: string): TaskRecord[] {
    const rows = this.guard(() => this.stmts.children.all(parentId) as Row[]);
    return rows.map((row) => this.read(row)).filter((r): r is TaskRecord => r !== undefined);
  }

  appendOutput(id: string, chunk: Buffer): void {
    appendPrivate(this.logPath(id), chunk);
  }

  outputSize(id: string): number {
    // A log that is a link (or anything but a regular file) holds nothing of the task's.
    return regularFileSize(this.logPath(id));
  }

  readOutput(id: string, start: number, end: number): Buffer {
    const opened = openRegular(this.logPath(id));
    if (!opened) return Buffer.alloc(0);
    try {
      const stop = Math.min(end, opened.stat.size);
      return stop <= start ? Buffer.alloc(0) : readAt(opened.fd, start, stop - start);
    } finally {
      closeSync(opened.fd);
    }
  }

  outputPath(id: string): string {
    return this.logPath(id);
  }

  close(): void {
    if (this.db.open) this.db.close();
    this.releaseLock?.();
    this.releaseLock = undefined;
    if (this.snapshotDir) rmSync(this.snapshotDir, { recursive: true, force: true });
    this.snapshotDir = undefined;
  }

  /** A row as a record, or undefined (quarantined, with a warning) when it is not one. */
  private read(row: Row): TaskRecord | undefined {
    if (this.badRows.has(row.rowid)) return undefined;
    let problem: string | undefined;
    if (typeof row.record !== "string") problem = "its record column is not text";
    else {
      const parsed = parseRecord(row.record);
      if ("problem" in parsed) problem = parsed.problem;
      else if (parsed.record.id !== row.id) problem = `its record's id ${JSON.stringify(parsed.record.id)} is not the row's id`;
      else if (parsed.record.status !== row.status) problem = `its record's status "${parsed.record.status}" is not the row's status ${JSON.stringify(row.status)}`;
      else return parsed.record;
    }
    this.quarantine(row, problem);
    return undefined;
  }

  private quarantine(row: Row, problem: string): void {
    this.badRows.set(row.rowid, row.status);
    const id = typeof row.id === "string" ? JSON.stringify(row.id.slice(0, 40)) : "(none)";
    let moved = false;
    if (this.writable) {
      try {
        this.db.transaction(() => {
          this.db
            .prepare("INSERT INTO quarantine (row_id, id, record, reason, quarantined_at) VALUES (?, ?, ?, ?, ?)")
            .run(row.rowid, typeof row.id === "string" ? row.id : null, typeof row.record === "string" ? row.record : null, problem, Date.now());
          this.db.prepare("DELETE FROM tasks WHERE rowid = ?").run(row.rowid);
        })();
        moved = true;
        this.badRows.delete(row.rowid);
      } catch {
        // A full disk or a busy database: the row is skipped in this process only.
      }
    }
    this.warn(
      `task database ${this.file}: row ${row.rowid} (id ${id}) is not a valid task record — ${problem}; ${moved ? 'it was moved to the table "quarantine" of that file and is no longer listed' : "it is skipped"}`,
    );
  }

  private warn(message: string): void {
    this.ownWarnings.push(message);
    if (this.ownWarnings.length > MAX_WARNINGS) this.ownWarnings.shift();
  }

  private assertWritable(): void {
    if (!this.writable) {
      throw new TaskError(
        "task_store_read_only",
        `the task data dir ${this.dataDir} cannot be written here (read-only, or it could not be opened for writing): tasks can be listed and read, not started; give the host a writable dataDir`,
      );
    }
  }

  /** Runs a database call; an SQLite failure is rethrown naming the file and what to do. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw databaseError(this.file, err);
    }
  }

  private open(): { db: Database.Database; writable: boolean } {
    // The runtime's own directories (0700, this user's, not links); logs are never followed as
    // links. A directory that cannot be made or narrowed (a read-only mount) is read as it is.
    let notWritable: string | undefined;
    try {
      ensurePrivateDir(this.dataDir);
      notWritable = unwritable(this.dataDir);
    } catch (err) {
      if (!isReadOnlyError(err) && (err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      notWritable = messageOf(err);
    }
    // SQLite follows links when it opens the database and its -wal/-shm/-journal files, and
    // blocks forever opening a FIFO: each one that is there must be a regular file.
    for (const file of [this.file, `${this.file}-wal`, `${this.file}-shm`, `${this.file}-journal`]) {
      refuseNotRegular(file, `the task database and its -wal, -shm and -journal files must be regular files: move it aside (mv "${file}" "${file}.bad")`);
    }
    if (notWritable !== undefined) this.warn(`${this.dataDir}: cannot be written (${notWritable}); tasks can be listed and read, not started`);
    else {
      let db: Database.Database | undefined;
      try {
        ensurePrivateDir(this.logDir);
        db = openDatabase(this.file);
        db.pragma("journal_mode = WAL");
        // In WAL mode NORMAL still survives a killed process (the case that matters for a host);
        // only an OS crash can drop the last commits, and it saves an fsync per task transition.
        db.pragma("synchronous = NORMAL");
        // Another host may hold the write lock for a moment; wait rather than fail.
        db.pragma("busy_timeout = 5000");
        db.exec(SCHEMA);
        const columns = (db.pragma("table_info(tasks)") as Array<{ name: string }>).map((c) => c.name);
        if (!columns.includes("owner_host")) db.exec("ALTER TABLE tasks ADD COLUMN owner_host TEXT");
        return { db, writable: true };
      } catch (err) {
        db?.close();
        if (!isReadOnlyError(err) && !isFullError(err)) throw databaseError(this.file, err);
        this.warn(`${this.dataDir}: cannot be written (${messageOf(err)}); tasks can be listed and read, not started`);
      }
    }
    return { db: this.openReadOnly(), writable: false };
  }

  private openReadOnly(): Database.Database {
    if (!existsSync(this.file)) {
      // Nothing recorded here yet: an empty, private table answers every read.
      const empty = openDatabase(":memory:");
      empty.exec(SCHEMA);
      return empty;
    }
    try {
      const db = openDatabase(this.file, { readonly: true, fileMustExist: true });
      db.pragma("busy_timeout = 5000");
      db.prepare("SELECT COUNT(*) FROM tasks").get();
      return db;
    } catch (err) {
      if ((err as { code?: string }).code !== "SQLITE_CANTOPEN" && !isFullError(err)) throw databaseError(this.file, err);
    }
    // A WAL database whose host closed it cleanly has no -shm file, and a reader cannot make one
    // in a read-only directory or on a full disk: read a private copy instead (a snapshot).
    this.snapshotDir = mkdtempSync(join(tmpdir(), "codemode-tasks-"));
    const copy = join(this.snapshotDir, "tasks.db");
    try {
      copyFileSync(this.file, copy);
      if (existsSync(`${this.file}-wal`)) copyFileSync(`${this.file}-wal`, `${copy}-wal`);
      const db = openDatabase(copy);
      db.prepare("SELECT COUNT(*) FROM tasks").get();
      this.warn(`tasks are read from a copy of ${this.file} taken now`);
      return db;
    } catch (err) {
      rmSync(this.snapshotDir, { recursive: true, force: true });
      this.snapshotDir = undefined;
      throw databaseError(this.file, err);
    }
  }

  private logPath(id: string): string {
    // Ids are generated by the host, but a record read back from a shared file must not be able
    // to point a log path outside the log directory.
    if (!/^[0-9A-HJKMNP-TV-Z]{26}$/.test(id)) throw invalidArgument("task_id", "a 26-character ULID", id);
    return join(this.logDir, `${id}.log`);
  }
}

/** An SQLite failure as a message that names the file and the fix. */
function databaseError(file: string, err: unknown): Error {
  if (err instanceof TaskError) return err;
  const code = (err as { code?: string }).code ?? "";
  const message = messageOf(err);
  let advice = "";
  if (code === "SQLITE_NOTADB" || code.startsWith("SQLITE_CORRUPT")) {
    advice = `; the file is damaged or is not a task database: move it aside (mv "${file}" "${file}.bad") to start a new one, or restore it from a backup`;
  } else if (isFullError(err)) {
    advice = "; the disk is full: free space on it";
  } else if (code === "SQLITE_BUSY") {
    advice = "; another host holds it locked: try again";
  }
  const wrapped = new TaskError("task_store_failed", `the task database ${file} failed: ${message}${advice}`);
  (wrapped as { cause?: unknown }).cause = err;
  return wrapped;
}
