// The host's side of the Redis queue, with no worker at all: tasks wait in the queue, the
// waiting cap counts the whole queue, and a waiting task is canceled without any worker.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentRegistry, TaskError, TaskHost } from "../../../src/tasks/index.js";
import { BullRemoteQueue } from "../../../src/tasks/redis/queue.js";
import { RedisTaskStore, redisTarget } from "../../../src/tasks/redis/store.js";
import { NO_REDIS, RedisServer, redisInstalled } from "../helpers/redis-server.js";

if (!redisInstalled) console.warn(`skipping the Redis queue tests: ${NO_REDIS}`);

describe.skipIf(!redisInstalled)("a host on a Redis queue with no worker", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server?.stop();
  });

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
        ...a, status: "canceled", endedAt: stopped.record.endedAt, usage: { input: 0, output: 0, cost: 0, turns: 0 }, reportChannel: "none", stopReason: "changed my mind",
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
