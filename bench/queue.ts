// `npm run bench:queue`: the Redis task queue, 1,000 script tasks drained by 1 and then by 2
// local `codemode worker` processes (4 tasks at once each): throughput, and the latency from
// enqueue to start (startedAt − createdAt of each record). Ratios against 1 worker in the same
// run; on a machine with few cores the second worker competes with the first for them.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Table from "cli-table3";
import { createCodemode, type Codemode } from "../src/index.js";
import { RedisServer, redisInstalled, NO_REDIS } from "./redis-server.js";

const TASKS = Number(process.env.QUEUE_BENCH_TASKS ?? 1000);
const CONCURRENCY = 4;
const CLI = resolve(fileURLToPath(import.meta.url), "../../../bin/codemode.js");

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

async function startWorker(config: string, cwd: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [CLI, "worker", "--config", config, "--concurrency", String(CONCURRENCY)], { cwd, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  await new Promise<void>((resolveReady, reject) => {
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      if (err.includes("running tasks of queue")) resolveReady();
    });
    child.once("exit", (code) => reject(new Error(`worker exited (${code}):\n${err}`)));
  });
  return child;
}

interface Result {
  /** 0: no queue, one host running them itself (the embedded store, 4 at once). */
  workers: number;
  ms: number;
  p50: number;
  p95: number;
  /** Enqueue→start of one task at a time on an idle queue (the median of IDLE_SAMPLES). */
  idle?: number;
}

const IDLE_SAMPLES = 20;

async function drainLocally(dir: string): Promise<Result> {
  const cm = await createCodemode({ agentDirs: [join(dir, "agents")], cwd: dir, tasks: { maxRunning: CONCURRENCY, maxQueued: TASKS } });
  try {
    return await timeTasks(cm, 0);
  } finally {
    await cm.close();
  }
}

/** Spawns the tasks in the background as fast as the host takes them, then waits for every one. */
async function timeTasks(cm: Codemode, workers: number): Promise<Result> {
  const start = performance.now();
  const ids: string[] = [];
  for (let i = 0; i < TASKS; i++) ids.push((await cm.tasks.spawn({ agent: "tick", task: String(i), background: true })).id);
  const records = [];
  for (const id of ids) records.push(await cm.tasks.wait(id));
  const result = summary(workers, performance.now() - start, records);
  const idle: number[] = [];
  for (let i = 0; i < IDLE_SAMPLES; i++) {
    const r = await cm.tasks.wait((await cm.tasks.spawn({ agent: "tick", task: "idle", background: true })).id);
    idle.push(r.startedAt! - r.createdAt);
  }
  return { ...result, idle: percentile(idle, 50) };
}

function summary(workers: number, ms: number, records: Array<{ status: string; errorMessage?: string; startedAt?: number; createdAt: number }>): Result {
  const failed = records.filter((r) => r.status !== "succeeded");
  if (failed.length) throw new Error(`${failed.length} tasks did not succeed, e.g. ${failed[0]!.status}: ${failed[0]!.errorMessage}`);
  const latency = records.map((r) => r.startedAt! - r.createdAt);
  return { workers, ms, p50: percentile(latency, 50), p95: percentile(latency, 95) };
}

async function drain(server: RedisServer, dir: string, workers: number): Promise<Result> {
  const queue = `bench-${workers}-${process.pid}`;
  const config = join(dir, `codemode-${workers}.json`);
  writeFileSync(config, JSON.stringify({ agentsDir: "agents", tasks: { redis: server.url, queue } }));
  const children = await Promise.all(Array.from({ length: workers }, () => startWorker(config, dir)));
  const cm = await createCodemode({ agentDirs: [join(dir, "agents")], cwd: dir, tasks: { redis: server.url, queue, maxQueued: TASKS } });
  try {
    return await timeTasks(cm, workers);
  } finally {
    await cm.close();
    await Promise.all(
      children.map(
        (c) =>
          new Promise((r) => {
            c.once("exit", r);
            c.kill("SIGTERM");
          }),
      ),
    );
  }
}

export async function benchQueue(): Promise<Result[] | undefined> {
  if (!redisInstalled) {
    console.log(`queue benchmark skipped: ${NO_REDIS}`);
    return undefined;
  }
  const server = await RedisServer.start();
  const dir = mkdtempSync(join(tmpdir(), "codemode-bench-queue-"));
  try {
    mkdirSync(join(dir, "agents"));
    writeFileSync(join(dir, "agents", "tick.md"), "---\nname: tick\ndescription: prints its task\ndriver: script\nscript: tick.js\nreport: false\n---\n");
    writeFileSync(join(dir, "agents", "tick.js"), "text(task);\n");
    const results = [await drainLocally(dir), await drain(server, dir, 1), await drain(server, dir, 2)];
    const base = results[1]!;
    const table = new Table({ head: ["", `${TASKS} script tasks`, "tasks/s", "vs 1 worker", "enqueue→start p50", "p95", "one at a time, p50"] });
    for (const r of results) {
      table.push([
        r.workers === 0 ? "one host, no queue" : `${r.workers} worker${r.workers === 1 ? "" : "s"}`,
        `${(r.ms / 1000).toFixed(2)} s`,
        (TASKS / (r.ms / 1000)).toFixed(0),
        `${(base.ms / r.ms).toFixed(2)}×`,
        `${r.p50} ms`,
        `${r.p95} ms`,
        `${r.idle} ms`,
      ]);
    }
    console.log(`\nThe Redis task queue (BullMQ), ${CONCURRENCY} tasks at once per worker, spawned as fast as the host can:`);
    console.log(table.toString());
    return results;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await benchQueue();
}
