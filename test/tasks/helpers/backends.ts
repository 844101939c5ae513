// The task backends the contract tests run against: the embedded store (in memory, as a host
// without a data dir has it) and Redis with its queue (a redis-server of the test file's own, a
// queue per test, and a real BullMQ worker in this process for the agents that go to the queue).
import { afterAll, afterEach, beforeAll } from "vitest";
import { AgentRegistry, TaskHost, memoryTaskStore, type AgentInput, type TaskHostOptions, type TaskStore } from "../../../src/tasks/index.js";
import { BullRemoteQueue } from "../../../src/tasks/redis/queue.js";
import { RedisTaskStore, redisTarget } from "../../../src/tasks/redis/store.js";
import { QueueWorker, workerIdentity } from "../../../src/tasks/redis/worker.js";
import { RedisServer, redisInstalled } from "./redis-server.js";

export interface Backend {
  name: "embedded" | "redis";
  /** False when the backend cannot run here (then its tests are skipped, saying why). */
  available: boolean;
  /** A fresh, empty store (Redis: a queue of its own). */
  store(): TaskStore;
  /** What a host on this store needs besides it (Redis: the queue, and a worker that runs its jobs). */
  hostOptions(store: TaskStore, agents: AgentInput[], options?: Partial<TaskHostOptions>): Partial<TaskHostOptions>;
}

const embedded: Backend = {
  name: "embedded",
  available: true,
  store: () => memoryTaskStore(),
  hostOptions: () => ({}),
};

let server: RedisServer | undefined;
let queues = 0;
const cleanups: Array<() => Promise<void>> = [];

const redis: Backend = {
  name: "redis",
  available: redisInstalled,
  store() {
    const s = new RedisTaskStore(redisTarget({ url: server!.url, queue: `contract${process.pid}-${++queues}`, lockMs: 5000 }));
    cleanups.push(async () => s.close());
    return s;
  },
  hostOptions(store, agents, options = {}) {
    const target = (store as RedisTaskStore).target;
    const workerStore = new RedisTaskStore(target);
    const workerRemote = new BullRemoteQueue(target);
    const workerHost = new TaskHost({ store: workerStore, agents: new AgentRegistry({ agents, dirs: [] }), remote: workerRemote, worker: workerIdentity(), ...options });
    const started = QueueWorker.start({ host: workerHost, remote: workerRemote, target, concurrency: 8 }, workerIdentity());
    cleanups.push(async () => {
      const w = await started;
      await w.pause();
      await workerHost.close();
      await w.close();
      workerStore.close();
    });
    return { remote: new BullRemoteQueue(target) };
  },
};

/** Hooks that start the Redis server for this file (when it is installed) and clean up each test's queues. */
export function useBackends(): Backend[] {
  beforeAll(async () => {
    if (redisInstalled) server = await RedisServer.start();
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(async () => {
    await server?.stop();
  });
  return [embedded, redis];
}
