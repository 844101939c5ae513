// The host's side of the Redis queue, with no worker at all: tasks wait in the queue, the
// waiting cap counts the whole queue, and a waiting task is canceled without any worker; a lost
// attempt of an agent with retries is queued again (and the last one stays lost); and, with one
// worker in this process, the trace context a job carries from the spawning span.
import { hostname } from "node:os";
import { ROOT_CONTEXT, trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentRegistry, TaskError, TaskHost, type TaskRecord } from "../../../src/tasks/index.js";
import { BullRemoteQueue, jobId } from "../../../src/tasks/redis/queue.js";
import { RedisTaskStore, redisTarget } from "../../../src/tasks/redis/store.js";
import { QueueWorker } from "../../../src/tasks/redis/worker.js";
import { eventually } from "../helpers/queue-project.js";
import { NO_REDIS, RedisServer, redisInstalled } from "../helpers/redis-server.js";

if (!redisInstalled) console.warn(`skipping the Redis queue tests: ${NO_REDIS}`);

// One server for the file: each test has a queue (a key prefix) of its own.
let server: RedisServer;
beforeAll(async () => {
  if (redisInstalled) server = await RedisServer.start();
});
afterAll(async () => {
  await server?.stop();
});

describe.skipIf(!redisInstalled)("a host on a Redis queue with no worker", () => {
  it("queues script, command and openai tasks; past maxQueued waiting in the queue, task_queue_full; a stop cancels one there", async () => {
    const target = redisTarget({ url: server.url, queue: "idle" });
    const store = new RedisTaskStore(target);
    const agents = new AgentRegistry({ dirs: [], agents: [{ name: "cmd", description: "d", driver: "command", command: ["true"] }] });
    const host = new TaskHost({ store, agents, remote: new BullRemoteQueue(target), maxQueued: 2, maxRunning: 5 });
    try {
      const a = await host.spawn({ agent: "cmd", task: "a", background: true });
      const b = await host.spawn({ agent: "cmd", task: "b", background: true });
      expect([a.status, b.status]).toStrictEqual(["queued", "queued"]);
      let full: unknown;
      await host.spawn({ agent: "cmd", task: "c", background: true }).catch((e) => (full = e));
      expect(full).toBeInstanceOf(TaskError);
      expect([(full as TaskError).code, (full as TaskError).message]).toStrictEqual([
        "task_queue_full",
        'cannot spawn agent "cmd": 2 tasks are already waiting for one of 5 slots (the host\'s limit is 2 waiting); wait for some to finish (poll ptc_task_list) or stop ones you no longer need (ptc_task_stop), then spawn again',
      ]);
      const stopped = await host.stop(a.id, "changed my mind");
      expect(stopped.fromStatus).toBe("queued");
      expect(stopped.record).toStrictEqual({
        ...a,
        status: "canceled",
        endedAt: stopped.record.endedAt,
        usage: { input: 0, output: 0, cost: 0, turns: 0 },
        reportChannel: "none",
        stopReason: "changed my mind",
      });
      expect(store.get(a.id)).toStrictEqual(stopped.record);
      // The job is gone from the queue: no worker will ever run it.
      const probe = new BullRemoteQueue(target);
      expect(await probe.bull().getJob(a.id)).toBeUndefined();
      await probe.close();
      expect((await host.spawn({ agent: "cmd", task: "c", background: true })).status).toBe("queued");
    } finally {
      await host.close();
      store.close();
    }
    // Closing the host canceled what it had queued.
    const left = new RedisTaskStore(target);
    expect(left.list().records.map((r) => r.status)).toStrictEqual(["canceled", "canceled", "canceled"]);
    left.close();
  });
});

describe.skipIf(!redisInstalled)("retries and trace context on a Redis queue", () => {
  const worker = { id: "worker-gone", host: "elsewhere", pid: 4242 };
  const gone = { pid: 4242, startTime: "Mon Jan  1 00:00:00 2024", hostId: "0".repeat(32) };
  /** What a worker's claim does to the record (the worker itself is gone by the time anyone looks). */
  const claim = (store: RedisTaskStore, r: TaskRecord): TaskRecord => {
    const running: TaskRecord = { ...r, status: "running", owner: gone, worker, startedAt: r.createdAt + 1 };
    expect(store.replace(running, { status: "queued", owner: r.owner })).toBe(true);
    return running;
  };

  it("an agent with retries: a lost attempt is queued again as a new job, the attempt kept; when none remain, lost with worker_lost", async () => {
    const target = redisTarget({ url: server.url, queue: "retries" });
    const store = new RedisTaskStore(target);
    const agents = new AgentRegistry({
      dirs: [],
      agents: [
        { name: "again", description: "d", driver: "command", command: ["true"], retries: 1 },
        { name: "once", description: "d", driver: "command", command: ["true"] },
      ],
    });
    const remote = new BullRemoteQueue(target);
    const host = new TaskHost({ store, agents, remote });
    try {
      const spawned = await host.spawn({ agent: "again", task: "a", background: true });
      const first = claim(store, spawned);
      store.appendOutput(first.id, Buffer.from("partial\n"));
      const queued = host.workerLost(first)!;
      expect(queued).toStrictEqual({ ...spawned, outputBytes: 8, lostAttempts: [{ worker, startedAt: first.startedAt, lostAt: queued.lostAttempts![0]!.lostAt, outputBytes: 8 }] });
      expect(store.get(first.id)).toStrictEqual(queued);
      expect(host.output(first.id).output).toBe(`partial\n\n[codemode: attempt 1 was lost with worker worker-gone on elsewhere (it exited or lost Redis); attempt 2 of at most 2 starts here]\n`);
      const job = await eventually(async () => (await remote.bull().getJob(jobId(first.id, 2)))?.data, "the second attempt's job");
      expect(job).toStrictEqual({ id: first.id, attempt: 2 });
      // A stalled job of the first attempt, noticed late, no longer moves the record.
      expect(host.workerLost({ ...first }, 1)).toBeUndefined();
      expect(store.get(first.id)!.status).toBe("queued");

      const second = claim(store, queued);
      const lost = host.workerLost(second)!;
      expect(lost).toMatchObject({ status: "lost", lostReason: "worker_lost", worker, lostAttempts: queued.lostAttempts });
      expect(lost.errorMessage).toBe(
        `the worker worker-gone on elsewhere (pid 4242) stopped answering while the task was running (it exited or lost Redis); that was attempt 2 of 2 (the agent's "retries: 1"), so the task is not run again — the output of every attempt is kept: read it with ptc_task_output, or spawn the task again`,
      );
      expect(store.get(first.id)).toStrictEqual(lost);

      // Without the opt-in: lost at the first loss, no job added.
      const plain = claim(store, await host.spawn({ agent: "once", task: "b", background: true }));
      expect(host.workerLost(plain)).toMatchObject({ status: "lost", lostReason: "worker_lost" });
      expect(await remote.bull().getJob(jobId(plain.id, 2))).toBeUndefined();

      // A retry waiting in the queue is canceled there, its own job with it.
      const third = await host.spawn({ agent: "again", task: "c", background: true });
      const requeued = host.workerLost(claim(store, third))!;
      await eventually(async () => (await remote.bull().getJob(jobId(third.id, 2))) ?? undefined, "the retry's job");
      const stopped = await host.stop(third.id, "no longer needed");
      expect(stopped.record).toMatchObject({ status: "canceled", stopReason: "no longer needed", lostAttempts: requeued.lostAttempts });
      expect(await remote.bull().getJob(jobId(third.id, 2))).toBeUndefined();
    } finally {
      await host.close();
      store.close();
    }
  });

  it("a job carries the spawning span's trace context: the worker's task span is its child, and a command agent's TRACEPARENT is the task's run span", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = provider.getTracer("test");
    const target = redisTarget({ url: server.url, queue: "traced" });
    const agents = new AgentRegistry({
      dirs: [],
      agents: [{ name: "tp", description: "prints its trace context", driver: "command", report: false, command: [process.execPath, "-e", "console.log(process.env.TRACEPARENT)"] }],
    });
    const hostStore = new RedisTaskStore(target);
    const host = new TaskHost({ store: hostStore, agents, remote: new BullRemoteQueue(target) });
    // The worker: its own store, queue connection and host, as in a `codemode worker` process.
    const workerStore = new RedisTaskStore(target);
    const workerRemote = new BullRemoteQueue(target);
    const info = { id: "worker-traced", host: hostname(), pid: process.pid };
    const workerHost = new TaskHost({ store: workerStore, agents, remote: workerRemote, worker: info, tracer });
    const queueWorker = await QueueWorker.start({ host: workerHost, remote: workerRemote, target, concurrency: 1 }, info);
    try {
      const spawning = tracer.startSpan("spawning");
      const r = await host.spawn({ agent: "tp", task: "go", background: true }, { trace: { tracer, context: trace.setSpan(ROOT_CONTEXT, spawning) } });
      const done = await host.wait(r.id);
      spawning.end();
      expect(done).toMatchObject({ status: "succeeded", worker: info });
      const spans = exporter.getFinishedSpans();
      const task = spans.find((s) => s.name === "codemode.task")!;
      const run = spans.find((s) => s.name === "codemode.task.run")!;
      const { traceId, spanId } = spawning.spanContext();
      expect([task.spanContext().traceId, task.parentSpanContext?.spanId, task.parentSpanContext?.isRemote]).toStrictEqual([traceId, spanId, true]);
      expect([run.spanContext().traceId, run.parentSpanContext?.spanId]).toStrictEqual([traceId, task.spanContext().spanId]);
      expect(task.attributes).toMatchObject({ "codemode.task.id": r.id, "codemode.task.agent": "tp", "codemode.task.status": "succeeded" });
      expect(host.output(r.id).output).toBe(`00-${traceId}-${run.spanContext().spanId}-01\n`);
    } finally {
      await queueWorker.pause();
      await workerHost.close();
      await queueWorker.close();
      await host.close();
      hostStore.close();
      workerStore.close();
    }
  });
});
