// Who owns a task record: this process's identity (pid, start time, a random host id) and whether
// an owner on this machine is still alive. Only the owner moves a record; see host-lock.ts for
// liveness across PID namespaces.
import { randomBytes } from "node:crypto";
import type { Owner } from "./types.js";
import { procStartTime } from "./processes.js";

let selfOwner: Owner | undefined;

/**
 * The identity of this process as a record owner. `hostId` is random per process: unlike a pid it
 * means the same thing in every PID namespace, and it names this host's lock file on a data dir.
 */
export function currentOwner(): Owner {
  if (selfOwner) return selfOwner;
  const proc = procStartTime(process.pid);
  // Without /proc the wall-clock start is the best stable value; it only guards pid reuse on
  // this host's own records, and aliveness falls back to signal 0.
  const startTime = proc ?? `clock:${Math.round(Date.now() - process.uptime() * 1000)}`;
  selfOwner = { pid: process.pid, startTime, hostId: randomBytes(12).toString("hex") };
  return selfOwner;
}

/**
 * Whether a process with this pid and start time runs, as far as this process can see it. Only
 * for owners without a host lock (records written before host locks, in-memory stores): a host
 * in another PID namespace cannot see the owner's pid, which is why data dirs use locks.
 */
export function isPidOwnerAlive(owner: Owner): boolean {
  const self = currentOwner();
  if (owner.pid === self.pid && owner.startTime === self.startTime) return true;
  if (owner.startTime.startsWith("proc:") && procStartTime(process.pid) !== undefined) {
    return procStartTime(owner.pid) === owner.startTime;
  }
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function sameOwner(a: Owner, b: Owner): boolean {
  return a.pid === b.pid && a.startTime === b.startTime && (a.hostId ?? null) === (b.hostId ?? null);
}
