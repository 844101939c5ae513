// `store()`/`load()` values per session. In memory for a library instance without a data dir;
// with one, each session is also a JSON file under `<dataDir>/sessions/`, so a session outlives the
// process (the CLI's `--session` relies on it). Values are kept as the JSON strings the guest sent.
//
// Several hosts may share a data dir (and a session). The file is the truth between runs: each
// run starts from what is on disk, and a save merges only the keys this host changed into the
// file as it is now, under a lock, replacing it atomically — so two hosts never lose each
// other's updates. The data dir is the runtime's own: its files are never followed as links.
import { createHash } from "node:crypto";
import { closeSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { checkPrivateDir, createExclusive, ensurePrivateDir, readRegularFile, removeFile, replaceFileAtomic, UnsafeFileError, writeAll } from "../safe-fs.js";
import { currentOwner, isPidOwnerAlive as isOwnerAlive } from "../tasks/owner.js";
import type { Owner } from "../tasks/types.js";

/**
 * What a session may be called, wherever a name arrives (`cm.run`'s `session`, `ptc_run_code`'s,
 * `codemode run --session`): short, and made of characters that stay readable once encoded as a
 * file name (fileOf below).
 */
export const SESSION_NAME = /^[\w.:@-]{1,200}$/;

/** A session file holds at most 1 MiB of keys and values; its JSON text is a little larger. */
const SESSION_FILE_MAX_BYTES = 4 * 1024 * 1024;
/** Longest file name kept readable; longer names (":" and "@" triple when encoded) end in a digest. */
const NAME_BYTES = 160;
const LOCK_WAIT_MS = 5000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A session's values that remembers which keys were changed since they were last saved. */
export class SessionStore extends Map<string, string> {
  /** Keys set or deleted by runs and not yet written to the session file. */
  readonly changed = new Set<string>();
  /** The file as last read or written (its identity, to skip re-reading an unchanged file). */
  seen: string | undefined;

  override set(key: string, json: string): this {
    this.changed.add(key);
    return super.set(key, json);
  }

  override delete(key: string): boolean {
    this.changed.add(key);
    return super.delete(key);
  }

  /** Replace the values that come from the file, keeping keys changed here and not saved yet. */
  refresh(saved: Map<string, string>): void {
    for (const key of [...this.keys()]) if (!this.changed.has(key) && !saved.has(key)) super.delete(key);
    for (const [key, json] of saved) if (!this.changed.has(key)) super.set(key, json);
  }
}

export class SessionStores {
  private readonly stores = new Map<string, SessionStore>();

  constructor(private readonly dir: string | undefined) {}

  /** The session's values: for a persisted session, brought up to date with its file first. */
  get(session: string): SessionStore {
    let store = this.stores.get(session);
    if (!store) {
      store = new SessionStore();
      this.stores.set(session, store);
    }
    if (this.dir) {
      const file = this.fileOf(session);
      // Checked on every use: a link planted as the sessions dir would redirect every file in it.
      // (Something else in its place holds no sessions; saving then fails with a warning.)
      const identity = sessionsDir(this.dir) ? fileIdentity(file) : undefined;
      if (identity !== store.seen) {
        store.refresh(this.read(file));
        store.seen = identity;
      }
    }
    return store;
  }

  /**
   * Writes what runs changed in a persisted session into its file: under the session's lock, the
   * file is read as it is now, the changed keys are applied to it, and it is replaced atomically.
   */
  async save(session: string): Promise<void> {
    if (!this.dir) return;
    const store = this.get(session);
    if (store.changed.size === 0) return;
    ensurePrivateDir(this.dir);
    const file = this.fileOf(session);
    const unlock = await lock(`${file}.lock`);
    try {
      const current = this.read(file);
      const changed = [...store.changed];
      for (const key of changed) {
        const json = store.get(key);
        if (json === undefined) current.delete(key);
        else current.set(key, json);
      }
      if (current.size === 0) removeFile(file);
      else replaceFileAtomic(file, render(current));
      for (const key of changed) store.changed.delete(key);
      store.refresh(current);
      store.seen = fileIdentity(file);
    } finally {
      unlock();
    }
  }

  private fileOf(session: string): string {
    // Every valid session name maps to a file name the file system accepts: a long one keeps a
    // readable head and ends in a digest of the whole name ("~" never occurs in an encoded name).
    const encoded = encodeURIComponent(session);
    const name = encoded.length <= NAME_BYTES ? encoded : `${encoded.slice(0, 96)}~${createHash("sha256").update(session).digest("hex").slice(0, 32)}`;
    return join(this.dir!, `${name}.json`);
  }

  private read(file: string): Map<string, string> {
    const values = new Map<string, string>();
    let text: Buffer | undefined;
    try {
      if (!sessionsDir(this.dir!)) return values;
      text = readRegularFile(file, { maxBytes: SESSION_FILE_MAX_BYTES });
    } catch (error) {
      throw new Error(`session file ${file} cannot be used: ${(error as Error).message}`);
    }
    if (text === undefined) return values;
    let saved: unknown;
    try {
      saved = JSON.parse(text.toString("utf8"));
    } catch (error) {
      throw new Error(`session file ${file} is not valid JSON (${(error as Error).message}); delete it to start the session afresh`);
    }
    if (saved === null || typeof saved !== "object" || Array.isArray(saved)) {
      throw new Error(`session file ${file} must hold a JSON object of stored values; delete it to start the session afresh`);
    }
    // JSON.parse makes "__proto__" an own key like any other, so Object.entries sees it.
    for (const [key, value] of Object.entries(saved)) values.set(key, JSON.stringify(value));
    return values;
  }
}

/** Whether the sessions dir is there to read from (see checkPrivateDir: a link or another user's dir throws). */
function sessionsDir(dir: string): boolean {
  try {
    return checkPrivateDir(dir);
  } catch (error) {
    if (error instanceof UnsafeFileError && error.reason === "not_directory") return false;
    throw error;
  }
}

/** The stored values as a JSON object, one key per line; each value is the guest's own JSON text. */
function render(values: Map<string, string>): string {
  const lines = [...values].map(([key, json]) => `  ${JSON.stringify(key)}: ${json}`);
  return `{\n${lines.join(",\n")}\n}\n`;
}

/** Inode, size and change time: a file replaced by rename always gets a new inode. */
function fileIdentity(file: string): string | undefined {
  try {
    const st = lstatSync(file, { bigint: true });
    return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return undefined;
  }
}

/**
 * A lock file created exclusively, holding its owner; a lock whose owner died is taken over.
 * Hosts hold it only while they read, merge and write one small file.
 */
async function lock(path: string): Promise<() => void> {
  const owner = currentOwner();
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (let wait = 2; ; wait = Math.min(wait * 2, 50)) {
    try {
      const fd = createExclusive(path);
      try {
        writeAll(fd, Buffer.from(JSON.stringify(owner)));
      } catch (error) {
        // A full disk: a lock with no owner in it would make the next save wait 5 s to take it over.
        closeSync(fd);
        removeFile(path);
        throw error;
      }
      closeSync(fd);
      return () => removeFile(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = lockOwner(path);
    // Taken over when its owner is gone, or when it never got an owner (a host died creating it).
    if (holder ? !isOwnerAlive(holder) : ageMs(path) > LOCK_WAIT_MS) {
      removeFile(path);
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`its lock ${path} has been held by process ${holder?.pid ?? "(unknown)"} for over ${LOCK_WAIT_MS / 1000} s; if no codemode host is running, delete the lock file`);
    }
    await sleep(wait);
  }
}

function ageMs(path: string): number {
  try {
    return Date.now() - lstatSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function lockOwner(path: string): Owner | undefined {
  try {
    const text = readRegularFile(path, { maxBytes: 1024 });
    const owner = text && (JSON.parse(text.toString("utf8")) as Owner);
    return owner && typeof owner.pid === "number" && typeof owner.startTime === "string" ? owner : undefined;
  } catch {
    return undefined;
  }
}
