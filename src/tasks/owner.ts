import { readFileSync } from "node:fs";
import type { Owner } from "./types.js";

/**
 * Linux exposes a process's start time (clock ticks since boot) in /proc/<pid>/stat field 22.
 * Together with the pid it identifies one process for its whole life, even after pid reuse.
 */
function procStartTime(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may contain spaces and parentheses; fields after it are plain.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = rest[19];
  return ticks === undefined ? undefined : `proc:${ticks}`;
}

function procAvailable(): boolean {
  return procStartTime(process.pid) !== undefined;
}

let selfOwner: Owner | undefined;

/** The identity of this process as a record owner. */
export function currentOwner(): Owner {
  if (selfOwner) return selfOwner;
  const proc = procStartTime(process.pid);
  // Without /proc the wall-clock start is the best stable value; it only guards pid reuse on
  // this host's own records, and aliveness falls back to signal 0.
  const startTime = proc ?? `clock:${Math.round(Date.now() - process.uptime() * 1000)}`;
  selfOwner = { pid: process.pid, startTime };
  return selfOwner;
}

/** Whether the process that owns a record still runs (and is the same process, not a reused pid). */
export function isOwnerAlive(owner: Owner): boolean {
  const self = currentOwner();
  if (owner.pid === self.pid) return owner.startTime === self.startTime;
  if (owner.startTime.startsWith("proc:") && procAvailable()) {
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
  return a.pid === b.pid && a.startTime === b.startTime;
}
