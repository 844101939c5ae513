// A project whose tasks go to a Redis queue, and its worker processes (`codemode worker`, the
// built CLI, as a user starts them).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI } from "../../mcp/helpers.js";

let queues = 0;

export interface QueueProject {
  dir: string;
  config: string;
  queue: string;
}

/**
 * Agents: `square` (a script: prints task²), `nap` (a command: sleeps 1.5 s, prints done),
 * `sleeper` (a command that never ends on its own, with a child of its own), `flaky` (`retries: 1`:
 * a sleeper on its first attempt, done on the next), `parent` (spawns a sleeper and waits).
 */
export function queueProject(redisUrl: string, tasks: Record<string, unknown> = {}): QueueProject {
  const dir = mkdtempSync(join(tmpdir(), "codemode-queue-"));
  const queue = `q${process.pid}-${++queues}`;
  mkdirSync(join(dir, "agents"));
  writeFileSync(join(dir, "agents", "square.md"), "---\nname: square\ndescription: squares the number in its task\ndriver: script\nscript: square.js\nreport: false\n---\n");
  // A little work per task, so that both workers get a share of the fan-out.
  writeFileSync(join(dir, "agents", "square.js"), "const n = Number(task); let x = 0; for (let i = 0; i < 200000; i++) x += i % 7; text(String(n * n));\n");
  writeFileSync(
    join(dir, "agents", "nap.md"),
    `---\nname: nap\ndescription: sleeps a moment\ndriver: command\nreport: false\ncommand: [${JSON.stringify(process.execPath)}, "-e", "setTimeout(() => console.log('done'), 1500)"]\n---\n`,
  );
  // Prints its own pid and its child's, then waits until it is stopped.
  const sleeper = "const c = require('child_process').spawn('sleep', ['600'], { stdio: 'ignore' }); console.log('pids ' + process.pid + ' ' + c.pid); setInterval(() => {}, 1000);";
  writeFileSync(
    join(dir, "agents", "sleeper.md"),
    `---\nname: sleeper\ndescription: waits until stopped\ndriver: command\nreport: false\ncommand: [${JSON.stringify(process.execPath)}, "-e", ${JSON.stringify(sleeper)}]\n---\n`,
  );
  // Opted into one retry: its first attempt marks the project and then waits like a sleeper (until
  // its worker is killed); an attempt that finds the mark prints "second attempt" and ends.
  const mark = join(dir, "flaky-ran");
  const flaky = `const fs = require('fs'); if (fs.existsSync(${JSON.stringify(mark)})) { console.log('second attempt'); } else { fs.writeFileSync(${JSON.stringify(mark)}, ''); ${sleeper} }`;
  writeFileSync(
    join(dir, "agents", "flaky.md"),
    `---\nname: flaky\ndescription: safe to run again\ndriver: command\nreport: false\nretries: 1\ncommand: [${JSON.stringify(process.execPath)}, "-e", ${JSON.stringify(flaky)}]\n---\n`,
  );
  // A script that spawns a sleeper in the background and then waits: a stop of it cascades.
  writeFileSync(join(dir, "agents", "parent.md"), "---\nname: parent\ndescription: spawns a sleeper and waits\ndriver: script\nscript: parent.js\nreport: false\ntools: [ptc_subagent]\n---\n");
  writeFileSync(
    join(dir, "agents", "parent.js"),
    "const c = await tools.ptc_subagent({ agent: 'sleeper', task: 'child', background: true }); text('child ' + c.task_id + '\\n'); await sleep(100000);\n",
  );
  const config = join(dir, "codemode.json");
  writeFileSync(config, JSON.stringify({ agentsDir: "agents", limits: { timeoutMs: 120_000 }, tasks: { redis: redisUrl, queue, lockMs: 2000, ...tasks } }));
  return { dir, config, queue };
}

export interface WorkerProcess {
  child: ChildProcess;
  id: string;
  stderr: () => string;
  /** Resolves with the exit code once it exited. */
  exited: Promise<number | null>;
}

export async function startWorker(project: QueueProject, concurrency = 4): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [CLI, "worker", "--config", project.config, "--concurrency", String(concurrency)], { cwd: project.dir, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const id = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the worker did not start within 30 s:\n${err}`)), 30_000);
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      const m = /codemode worker (worker-[0-9a-f]+) on .*running tasks of queue/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the worker exited (${code}) before it started:\n${err}`));
    });
  });
  return { child, id, stderr: () => err, exited };
}

export async function stopWorker(w: WorkerProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
  if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill(signal);
  return w.exited;
}

/** Polls until `check` returns a value (not undefined), for at most `ms`. */
export async function eventually<T>(check: () => T | undefined | Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`gave up after ${ms / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
