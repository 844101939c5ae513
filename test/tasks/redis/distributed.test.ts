// Subagent tasks on a Redis queue with real parts: a redis-server of the test's own, `codemode
// worker` processes, and a host that runs programs through the ptc_* tools.
import { spawn as spawnProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli } from "../../mcp/helpers.js";
import { loadConfig } from "../../../src/cli/config.js";
import { openRuntime, type Runtime } from "../../../src/cli/runtime.js";
import type { TaskRecord } from "../../../src/tasks/index.js";
import { NO_REDIS, RedisServer, redisInstalled } from "../helpers/redis-server.js";
import { alive, eventually, queueProject, startWorker, stopWorker, type QueueProject, type WorkerProcess } from "../helpers/queue-project.js";

if (!redisInstalled) console.warn(`skipping the Redis queue tests: ${NO_REDIS}`);

/** A durable redis-server of its own, a queue, two `codemode worker` processes and a host runtime, for one describe block. */
function useQueue(tasks: Record<string, unknown> = {}) {
  const q = {} as { server: RedisServer; project: QueueProject; workers: WorkerProcess[]; host: Runtime };
  beforeAll(async () => {
    q.server = await RedisServer.start({ durable: true });
    q.project = queueProject(q.server.url, tasks);
    q.workers = await Promise.all([startWorker(q.project), startWorker(q.project)]);
    q.host = await openRuntime(loadConfig(q.project.dir, q.project.config), q.project.dir, { upstream: false });
  });
  afterAll(async () => {
    await q.host?.close();
    await Promise.all((q.workers ?? []).map((w) => stopWorker(w)));
    await q.server?.stop();
  });
  return q;
}

describe.skipIf(!redisInstalled)("tasks on a Redis queue, two worker processes", () => {
  // 4 at once per worker, 6 at once across the queue.
  const q = useQueue({ maxRunning: 6 });
  let host: Runtime;
  let workers: WorkerProcess[];
  beforeAll(() => {
    ({ host, workers } = q);
  });

  const run = async (code: string) => {
    const r = await host.cm.run(code, { timeoutMs: 120_000 });
    expect(r.isError ?? false, r.content.map((c) => c.text).join("\n")).toBe(false);
    return r.content.map((c) => c.text).join("\n");
  };
  const record = (id: string): TaskRecord => host.cm.tasks.get(id)!;

  it("40 script tasks spread over both workers, all succeed, and the aggregate is exact", async () => {
    const out = await run(`
      const ids = [];
      for (let i = 1; i <= 40; i++) ids.push((await tools.ptc_subagent({ agent: "square", task: String(i), background: true })).task_id);
      // With no task_ids: the background tasks this program spawned, wherever they run.
      const waited = await tools.ptc_task_wait({});
      if (waited.pending.length > 0 || waited.done.length !== 40) throw new Error("wait: " + JSON.stringify(waited));
      let sum = 0;
      for (const id of ids) {
        const o = await tools.ptc_task_output({ task_id: id });
        if (o.status !== "succeeded") throw new Error(id + " " + o.status);
        sum += Number(o.output.trim());
      }
      text(JSON.stringify({ sum, ids }));
    `);
    const { sum, ids } = JSON.parse(out) as { sum: number; ids: string[] };
    expect(sum).toBe((40 * 41 * 81) / 6);
    const ran = ids.map(record);
    expect(new Set(ran.map((r) => r.status))).toStrictEqual(new Set(["succeeded"]));
    // Each record names the worker that ran it; both workers ran some.
    expect(new Set(ran.map((r) => r.worker?.id))).toStrictEqual(new Set(workers.map((w) => w.id)));
    expect(ran.every((r) => r.usage !== undefined && r.startedAt! >= r.createdAt)).toBe(true);
    // From the records' own times: never more than 4 at once on a worker, nor 6 on the queue.
    const mostAtOnce = (rs: TaskRecord[]) => Math.max(...rs.map((r) => rs.filter((o) => o.startedAt! <= r.startedAt! && o.endedAt! > r.startedAt!).length));
    expect(workers.map((w) => mostAtOnce(ran.filter((r) => r.worker!.id === w.id)) <= 4)).toStrictEqual([true, true]);
    expect(mostAtOnce(ran)).toBeLessThanOrEqual(6);
  });

  it("a stop from the host ends a task running on a worker, its own child process too", async () => {
    const id = (await host.cm.tasks.spawn({ agent: "sleeper", task: "wait", background: true })).id;
    const pids = await eventually(() => /pids (\d+) (\d+)/.exec(host.cm.tasks.output(id).output)?.slice(1).map(Number), "the sleeper to start");
    expect(pids.every(alive)).toBe(true);
    const out = await run(`text(JSON.stringify(await tools.ptc_task_stop({ task_id: ${JSON.stringify(id)}, reason: "enough" })));`);
    expect(JSON.parse(out)).toMatchObject({ task_id: id, status: "canceled", from_status: "running" });
    expect(record(id)).toMatchObject({ status: "canceled", stopReason: "enough" });
    await eventually(() => (pids.some(alive) ? undefined : true), "the task's processes to be gone");
  });

  it("past the queue's running cap a task waits, and is canceled there without reaching a worker", async () => {
    // Room for 8 on the two workers, but 6 at once on the queue: the seventh sleeper waits.
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await host.cm.tasks.spawn({ agent: "sleeper", task: `s${i}`, background: true })).id);
    await eventually(() => (ids.filter((id) => record(id).status === "running").length === 6 ? true : undefined), "six sleepers to run");
    // A moment for a worker to (wrongly) take the seventh; the cap holds it back.
    await new Promise((r) => setTimeout(r, 1000));
    expect(ids.filter((id) => record(id).status === "running").length).toBe(6);
    const waiting = ids.find((id) => record(id).status === "queued")!;
    const stopped = await host.cm.tasks.stop(waiting, "not needed");
    expect(stopped.fromStatus).toBe("queued");
    expect(Object.hasOwn(record(waiting), "worker")).toBe(false);
    expect(record(waiting)).toMatchObject({ status: "canceled", stopReason: "not needed" });
    await Promise.all(ids.filter((id) => id !== waiting).map((id) => host.cm.tasks.stop(id)));
    expect(ids.map((id) => record(id).status)).toStrictEqual(ids.map(() => "canceled"));
  });
});

describe.skipIf(!redisInstalled)("tasks on a Redis queue when parts fail", () => {
  const q = useQueue();
  let host: Runtime;
  let server: RedisServer;
  let project: QueueProject;
  beforeAll(() => {
    ({ host, server, project } = q);
  });
  const record = (id: string): TaskRecord => host.cm.tasks.get(id)!;
  const spawn = async (agent: string, task: string) => (await host.cm.tasks.spawn({ agent, task, background: true })).id;

  it("a stop cascades from a task on one worker to the child it queued", async () => {
    const parent = await spawn("parent", "go");
    const child = await eventually(() => host.cm.tasks.store.children(parent)[0]?.id, "the parent to spawn its child");
    await eventually(() => (record(child).status === "running" ? true : undefined), "the child to run");
    expect(record(child).parentId).toBe(parent);
    await host.cm.tasks.stop(parent, "cascade");
    await eventually(() => (record(child).status === "canceled" ? true : undefined), "the child to be canceled");
    expect(record(parent).status).toBe("canceled");
    expect(record(child).stopReason).toBe(`parent task ${parent} was stopped`);
  });

  it("a worker killed with SIGKILL mid-task: its task becomes lost (worker_lost), never run again; the rest finish", async () => {
    const id = await spawn("sleeper", "doomed");
    const running = await eventually(() => (record(id).status === "running" ? record(id) : undefined), "the sleeper to run");
    const pids = await eventually(() => /pids (\d+) (\d+)/.exec(host.cm.tasks.output(id).output)?.slice(1).map(Number), "the sleeper's pids");
    const victim = q.workers.find((w) => w.id === running.worker!.id)!;
    const survivor = q.workers.find((w) => w !== victim)!;
    await stopWorker(victim, "SIGKILL");
    const others = await Promise.all([spawn("nap", "a"), spawn("nap", "b"), spawn("square", "3")]);
    try {
      const lost = await host.cm.tasks.wait(id);
      expect(lost).toMatchObject({ status: "lost", lostReason: "worker_lost", worker: running.worker });
      expect(lost.errorMessage).toContain(`the worker ${victim.id} on `);
      expect(lost.errorMessage).toContain("is not run again");
      expect(Object.hasOwn(lost, "usage")).toBe(false);
      // The processes the dead worker left behind on this machine were stopped with it.
      await eventually(() => (pids.some(alive) ? undefined : true), "the lost task's processes to be gone");
      const finished = await Promise.all(others.map((o) => host.cm.tasks.wait(o)));
      expect(finished.map((r) => [r.status, r.worker?.id])).toStrictEqual(others.map(() => ["succeeded", survivor.id]));
      expect(host.cm.tasks.output(others[2]!).output.trim()).toBe("9");
      // Still lost: the stalled job was failed, not handed to the survivor.
      expect(record(id).status).toBe("lost");
    } finally {
      // The next tests need two workers again, whatever this one asserts.
      q.workers = [survivor, await startWorker(project)];
    }
  });

  it("an agent with retries: 1 — its task on a worker killed with SIGKILL runs again on the other worker and succeeds, the lost attempt on the record", async () => {
    const id = await spawn("flaky", "twice if need be");
    const pids = await eventually(() => /pids (\d+) (\d+)/.exec(host.cm.tasks.output(id).output)?.slice(1).map(Number), "the first attempt to start");
    const first = record(id);
    const victim = q.workers.find((w) => w.id === first.worker!.id)!;
    const survivor = q.workers.find((w) => w !== victim)!;
    await stopWorker(victim, "SIGKILL");
    try {
      const done = await host.cm.tasks.wait(id);
      const firstOutput = `pids ${pids[0]} ${pids[1]}\n`;
      expect(done).toMatchObject({ status: "succeeded", exitCode: 0, worker: { id: survivor.id }, usage: { input: 0, output: 0, cost: 0, turns: 0 } });
      expect(done.lostAttempts).toStrictEqual([{ worker: first.worker, startedAt: first.startedAt, lostAt: done.lostAttempts![0]!.lostAt, outputBytes: firstOutput.length }]);
      expect(done.startedAt!).toBeGreaterThanOrEqual(done.lostAttempts![0]!.lostAt);
      // One log: the lost attempt's output, the host's line saying where the next begins, the next one's.
      expect(host.cm.tasks.output(id).output).toBe(
        `${firstOutput}\n[codemode: attempt 1 was lost with worker ${victim.id} on ${first.worker!.host} (it exited or lost Redis); attempt 2 of at most 2 starts here]\nsecond attempt\n`,
      );
      // The lost attempt's processes were stopped before it ran again.
      await eventually(() => (pids.some(alive) ? undefined : true), "the lost attempt's processes to be gone");
      const full = JSON.parse(
        await (async () => {
          const r = await host.cm.run(`text(JSON.stringify(await tools.ptc_task_output({ task_id: ${JSON.stringify(id)}, result_view: "full" })))`, { timeoutMs: 60_000 });
          return r.content.map((c) => c.text).join("");
        })(),
      ) as { task: { lost_attempts: unknown } };
      expect(full.task.lost_attempts).toStrictEqual([
        { worker: first.worker, started_at: new Date(first.startedAt!).toISOString(), lost_at: new Date(done.lostAttempts![0]!.lostAt).toISOString(), output_bytes: firstOutput.length },
      ]);
    } finally {
      q.workers = [survivor, await startWorker(project)];
    }
  });

  it("a worker stopped with SIGTERM cancels the task it runs (its processes too) and exits 0", async () => {
    const id = await spawn("sleeper", "interrupted");
    const pids = await eventually(() => /pids (\d+) (\d+)/.exec(host.cm.tasks.output(id).output)?.slice(1).map(Number), "the sleeper to start");
    const w = q.workers.find((x) => x.id === record(id).worker!.id)!;
    const code = await stopWorker(w, "SIGTERM");
    // The next tests need two workers again, whatever this one asserts.
    q.workers = [...q.workers.filter((x) => x !== w), await startWorker(project)];
    expect(code).toBe(0);
    expect(record(id)).toMatchObject({ status: "canceled", stopReason: "host closed", worker: { id: w.id } });
    await eventually(() => (pids.some(alive) ? undefined : true), "the canceled task's processes to be gone");
    expect(w.stderr()).toContain(`codemode worker ${w.id}: stopping (its running tasks are canceled)\n`);
  });

  it("a host killed mid-run: its tasks run on to the end on the workers, and codemode tasks / task read them from Redis", async () => {
    const program = join(project.dir, "fan.js");
    writeFileSync(program, `for (const t of ["one", "two"]) await tools.ptc_subagent({ agent: "nap", task: t, background: true, label: "nap " + t }); text("spawned"); await sleep(100000);`);
    const child = spawnProcess(process.execPath, [CLI, "run", program, "--config", project.config, "--timeout", "120s"], { cwd: project.dir, stdio: "ignore" });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const naps = await eventually(() => {
      const rows = host.cm.tasks.list({ limit: 10_000 }).records.filter((r) => r.label.startsWith("nap ") && r.status === "running");
      return rows.length === 2 ? rows.map((r) => r.id) : undefined;
    }, "the killed host's two naps to run");
    child.kill("SIGKILL");
    await exited;
    // Followed from another process while it runs on a worker: its output as it arrives, until it ends.
    const followed = await runCli(["task", naps[1]!, "--follow", "--config", project.config], { cwd: project.dir });
    expect([followed.code, followed.stdout]).toStrictEqual([0, "done\n"]);
    const ended = await Promise.all(naps.map((id) => host.cm.tasks.wait(id)));
    expect(ended.map((r) => r.status)).toStrictEqual(["succeeded", "succeeded"]);
    const list = await runCli(["tasks", "--json", "--status", "succeeded", "--config", project.config], { cwd: project.dir });
    expect(list.code, list.stderr).toBe(0);
    const listed = (JSON.parse(list.stdout) as { tasks: TaskRecord[] }).tasks.filter((r) => naps.includes(r.id));
    expect(listed.map((r) => [r.label, r.status])).toStrictEqual([
      ["nap one", "succeeded"],
      ["nap two", "succeeded"],
    ]);
    const one = await runCli(["task", naps[0]!, "--config", project.config], { cwd: project.dir });
    expect([one.code, one.stdout]).toStrictEqual([0, "done\n"]);
  });

  it("Redis restarted mid-run: nothing acknowledged is lost, and the queue runs on", async () => {
    const before = await Promise.all(Array.from({ length: 6 }, (_, i) => spawn("square", String(i + 1))));
    const done = await Promise.all(before.map((id) => host.cm.tasks.wait(id)));
    expect(done.map((r) => r.status)).toStrictEqual(before.map(() => "succeeded"));
    const naps = await Promise.all([spawn("nap", "x"), spawn("nap", "y")]);
    await eventually(() => (naps.every((id) => record(id).status === "running") ? true : undefined), "the naps to run");
    await server.restart();
    const after = await Promise.all(Array.from({ length: 6 }, (_, i) => spawn("square", String(i + 7))));
    const all = await Promise.all([...before, ...naps, ...after].map((id) => host.cm.tasks.wait(id)));
    expect(all.map((r) => r.status)).toStrictEqual(all.map(() => "succeeded"));
    const squares = [...before, ...after].map((id) => Number(host.cm.tasks.output(id).output.trim()));
    expect(squares).toStrictEqual(Array.from({ length: 12 }, (_, i) => (i + 1) ** 2));
    expect(host.cm.tasks.list({ limit: 10_000 }).total).toBeGreaterThanOrEqual(14);
    // The workers said so: the connection was lost, retried, and came back.
    for (const w of q.workers) {
      expect(w.stderr()).toMatch(/codemode worker: lost the connection to Redis at redis:\/\/127\.0\.0\.1:\d+; reconnecting with backoff\n/);
      expect(w.stderr()).toMatch(/codemode worker: connected to Redis at redis:\/\/127\.0\.0\.1:\d+ again\n/);
    }
  });
});
