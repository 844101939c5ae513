// Host liveness on a shared data dir that does not depend on seeing a pid. Each host holds an
// exclusive SQLite lock (a POSIX record lock underneath) on its own file `<dataDir>/hosts/<hostId>.lock`
// for as long as it runs; the kernel drops the lock when the process dies, however it dies. Another
// host — in another PID namespace or container sharing the volume, where the owner's pid means
// nothing — asks for a shared lock on that file: refused means alive, granted means dead. Node has
// no flock(2) without a native addon; better-sqlite3 is already one, and its locks are exactly this.
import { existsSync, lstatSync, mkdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { openDatabase, type Database } from "./sqlite.js";

interface Held {
  db: Database.Database;
  path: string;
  refs: number;
}

/** One lock per data dir per process; stores on the same dir in one process share it. */
const held = new Map<string, Held>();

export function hostLockPath(dataDir: string, hostId: string): string {
  if (!/^[0-9a-f]{8,64}$/i.test(hostId)) throw new Error(`host id ${JSON.stringify(hostId.slice(0, 80))} is not a hex string`);
  return join(dataDir, "hosts", `${hostId}.lock`);
}

/** Takes this host's lock on a data dir; the returned function gives it back (the last holder in the process unlocks). */
export function holdHostLock(dataDir: string, hostId: string): () => void {
  const path = hostLockPath(dataDir, hostId);
  let entry = held.get(path);
  if (!entry) {
    mkdirSync(join(dataDir, "hosts"), { recursive: true });
    const db = openDatabase(path, { timeout: 0 });
    try {
      // No journal file: the lock file is all there is, and nothing is ever written to it.
      db.pragma("journal_mode = MEMORY");
      db.exec("BEGIN EXCLUSIVE");
    } catch (err) {
      db.close();
      throw err;
    }
    entry = { db, path, refs: 0 };
    held.set(path, entry);
  }
  entry.refs++;
  const mine = entry;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--mine.refs > 0) return;
    held.delete(mine.path);
    try {
      mine.db.close();
      unlinkSync(mine.path);
    } catch {
      // A read-only or vanished data dir: the kernel released the lock with the file descriptor.
    }
  };
}

/**
 * "held": the host runs. "free": the host is gone (its lock file stays until someone removes it).
 * "missing": no lock file: the host is gone and its file was removed, or it never had one.
 */
export function hostLockState(dataDir: string, hostId: string): "held" | "free" | "missing" {
  let path: string;
  try {
    path = hostLockPath(dataDir, hostId);
  } catch {
    return "missing";
  }
  if (held.has(path)) return "held";
  // A host's lock is a regular file it created; anything else there (a FIFO, whose open would
  // block this host for good, a device, a link) is no host's lock: as good as none.
  if (!lstatSync(path, { throwIfNoEntry: false })?.isFile()) return "missing";
  let db: Database.Database;
  try {
    db = openDatabase(path, { readonly: true, fileMustExist: true, timeout: 0 });
  } catch {
    return existsSync(path) ? "held" : "missing";
  }
  try {
    db.prepare("SELECT count(*) FROM sqlite_master").get();
    return "free";
  } catch {
    // Refused (SQLITE_BUSY: the owner holds it), or unreadable: never reap a host that may run.
    return "held";
  } finally {
    db.close();
  }
}

/** Removes a dead host's lock file (best effort: a read-only data dir keeps it). */
export function removeStaleLock(dataDir: string, hostId: string): void {
  try {
    unlinkSync(hostLockPath(dataDir, hostId));
  } catch {
    // Already gone, or not ours to remove.
  }
}
