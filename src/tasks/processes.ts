// Finding and stopping every process of a command task, from the host that started it or from a
// later host after that one died. A task's processes are its process group (the command runs as a
// group leader) plus anything that left the group (`setsid`, double fork) but still carries the
// task's id in its environment (CODEMODE_TASK_ID, inherited by every descendant).
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import type { TaskProcessGroup } from "./types.js";

interface ProcStat {
  state: string;
  pgrp: number;
  startTicks: number;
}

function readStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) may contain spaces and parentheses; fields after it are plain.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const startTicks = Number(rest[19]);
  const pgrp = Number(rest[2]);
  if (!Number.isFinite(startTicks) || !Number.isFinite(pgrp)) return undefined;
  return { state: rest[0] ?? "", pgrp, startTicks };
}

/**
 * Linux exposes a process's start time (clock ticks since boot) in /proc/<pid>/stat field 22.
 * Together with the pid it identifies one process for its whole life, even after pid reuse.
 */
export function procStartTime(pid: number): string | undefined {
  const stat = readStat(pid);
  return stat ? `proc:${stat.startTicks}` : undefined;
}

let ownNamespace: string | null | undefined;

/** This process's PID namespace (`pid:[4026531836]`), or undefined where /proc does not say. */
export function pidNamespace(): string | undefined {
  if (ownNamespace === undefined) {
    try {
      ownNamespace = readlinkSync("/proc/self/ns/pid");
    } catch {
      ownNamespace = null;
    }
  }
  return ownNamespace ?? undefined;
}

function ticksOf(startTime: string): number | undefined {
  const m = /^proc:(\d+)$/.exec(startTime);
  return m ? Number(m[1]) : undefined;
}

function carriesTask(pid: number, taskId: string): boolean {
  let environ: string;
  try {
    environ = readFileSync(`/proc/${pid}/environ`, "latin1");
  } catch {
    return false;
  }
  // NUL-separated KEY=value pairs; the id is a ULID, so a substring test is exact.
  const entry = `CODEMODE_TASK_ID=${taskId}\0`;
  return environ.startsWith(entry) || environ.includes(`\0${entry}`);
}

/**
 * Whether the recorded group still means the task's group. A pid in use as a group id is never
 * handed out again, so while the leader lives (same start time) or right after the host saw it
 * exit, the group is the task's; a later host that finds the leader gone cannot rule out that the
 * number was reused once the group emptied, and trusts only the environment tag.
 */
function groupTrusted(group: TaskProcessGroup, justExited: boolean): boolean {
  if (group.pidNamespace !== undefined && group.pidNamespace !== pidNamespace()) return false;
  return justExited || procStartTime(group.pgid) === group.startTime;
}

export interface FindOptions {
  /** The caller has just seen the group's leader exit (the host that ran it). */
  leaderJustExited?: boolean;
}

/**
 * The live processes of a task: members of its group (when the group can be trusted, see
 * groupTrusted) and any process whose environment carries its id. Zombies are already dead and
 * are left out. Empty where /proc is not available or the pids belong to another PID namespace.
 */
export function findTaskProcesses(taskId: string, group: TaskProcessGroup | undefined, options: FindOptions = {}): number[] {
  if (group?.pidNamespace !== undefined && group.pidNamespace !== pidNamespace()) return [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const trusted = group !== undefined && groupTrusted(group, options.leaderJustExited === true);
  const since = group ? ticksOf(group.startTime) : undefined;
  const found: number[] = [];
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isSafeInteger(pid) || pid <= 1 || pid === process.pid) continue;
    const stat = readStat(pid);
    if (!stat || stat.state === "Z" || stat.state === "X") continue;
    const inGroup = trusted && stat.pgrp === group!.pgid && (since === undefined || stat.startTicks >= since);
    if (inGroup || carriesTask(pid, taskId)) found.push(pid);
  }
  return found;
}

/** Sends `signal` to the task's group (when trusted) and to every process found for it; returns how many there were. */
export function signalTaskProcesses(taskId: string, group: TaskProcessGroup | undefined, signal: NodeJS.Signals, options: FindOptions = {}): number {
  // Found first: once signalled, the group's members are zombies and no longer count.
  const pids = findTaskProcesses(taskId, group, options);
  if (group && groupTrusted(group, options.leaderJustExited === true)) {
    try {
      process.kill(-group.pgid, signal);
    } catch {
      // The group is empty.
    }
  }
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone meanwhile.
    }
  }
  return pids.length;
}
