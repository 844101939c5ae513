// The fault-injection suite's tools: real faults where this machine allows them (a tiny tmpfs for
// ENOSPC, a read-only bind mount, SIGKILL, PID namespaces via unshare), detected once, so each
// test can say in its name when it has to fall back to an injected fault instead.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { closeSync, fstatSync, ftruncateSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { compileTasksForChild } from "../tasks/helpers/compile.js";

export const isRoot = process.getuid?.() === 0;

function works(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: "ignore" }).status === 0;
}

/** `unshare --pid --fork --kill-child --mount-proc` runs here (killing unshare then kills the namespace) (root, util-linux present, namespaces allowed). */
export const canUnsharePid = isRoot && works("unshare", ["--pid", "--fork", "--kill-child", "--mount-proc", "true"]);

const cleanups: Array<() => void> = [];

/** Undo every mount and temp dir made by these helpers (call from afterAll). */
export function cleanUp(): void {
  for (const step of cleanups.splice(0).reverse()) {
    try {
      step();
    } catch {
      // Best effort: a busy mount is detached lazily below.
    }
  }
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed: ${result.stderr}`);
}

/** A fresh tmpfs of `size` (e.g. "3m") mounted on a new temp dir: writes past it fail with ENOSPC. */
export function smallTmpfs(size: string): string {
  const dir = tempDir("fault-tmpfs-");
  run("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]);
  cleanups.push(() => run("umount", ["-l", dir]));
  return dir;
}

/** Fills the disk under `dir` with one file, then gives `roomBytes` back; returns the undo. */
export function fillDisk(dir: string, roomBytes: number): () => void {
  const fd = openSync(join(dir, "ballast"), "w");
  const block = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, block);
  } catch {
    // ENOSPC: full.
  }
  ftruncateSync(fd, Math.max(0, fstatSync(fd).size - roomBytes));
  return () => {
    ftruncateSync(fd, 0);
    closeSync(fd);
  };
}

/** Makes `dir` read-only where it is (a read-only bind mount over itself); returns the undo. */
export function mountReadOnly(dir: string): () => void {
  run("mount", ["--bind", dir, dir]);
  run("mount", ["-o", "remount,ro,bind", dir]);
  let undone = false;
  const undo = (): void => {
    if (undone) return;
    undone = true;
    run("umount", ["-l", dir]);
  };
  cleanups.push(undo);
  return undo;
}

/** A zombie is dead: it only waits to be reaped. */
export function processAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

export async function until(condition: () => boolean, what: string, tries = 600): Promise<void> {
  // Generous: the machine is shared. This bounds a wait; it does not time anything.
  for (let i = 0; i < tries; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export interface HostProcess {
  child: ChildProcess;
  /** The JSON line the host script printed once its tasks were started. */
  ready: Record<string, unknown>;
  exited: Promise<number | null>;
}

/**
 * Starts a real host in another process (optionally in a new PID namespace) running `body`, a
 * module body with `host` (a TaskHost on `dataDir`) and `agents` in scope; it must print one
 * JSON line when ready. Node 20 cannot load .ts: the child runs the build (`npm test` builds).
 */
export async function startHost(dataDir: string, agents: unknown[], body: string, options: { pidNamespace?: boolean } = {}): Promise<HostProcess> {
  const build = compileTasksForChild();
  cleanups.push(() => rmSync(build, { recursive: true, force: true }));
  const script = join(build, "host.mjs");
  writeFileSync(
    script,
    `import { TaskHost, AgentRegistry, sqliteTaskStore } from "./tasks/index.js";
const agents = new AgentRegistry({ dirs: [], agents: ${JSON.stringify(agents)} });
const host = new TaskHost({ store: sqliteTaskStore(${JSON.stringify(dataDir)}), agents, maxRunning: 8, killGraceMs: 200 });
${body}
setInterval(() => {}, 1000);
`,
  );
  const argv = options.pidNamespace ? ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", process.execPath, script] : [process.execPath, script];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk));
  cleanups.push(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    void exited.then((code) => reject(new Error(`the host process exited early (${code}): ${stderr}`)));
  });
  return { child, ready: JSON.parse(line) as Record<string, unknown>, exited };
}
