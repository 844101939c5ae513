// RedisTaskStore against a real redis-server: compare-and-set records (one writer per record),
// listing and its order, children, byte-exact logs, owner liveness, and failures that name the
// server but never its password.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { TaskError, type TaskRecord } from "../../../src/tasks/index.js";
import { currentOwner } from "../../../src/tasks/owner.js";
import { keyPrefix } from "../../../src/tasks/redis/connection.js";
import { RedisTaskStore, redisTarget } from "../../../src/tasks/redis/store.js";
import { loadConfig } from "../../../src/cli/config.js";
import { tempProject } from "../../mcp/helpers.js";
import { NO_REDIS, RedisServer, redisInstalled } from "../helpers/redis-server.js";

if (!redisInstalled) console.warn(`skipping the Redis store tests: ${NO_REDIS}`);

const ID = (n: number) => `01J0000000000000000000000${String.fromCharCode(65 + n)}`;
const other = { pid: 4242, startTime: "proc:9", hostId: "feedfacefeedfacefeedface" };
const rec = (n: number, extra: Partial<TaskRecord> = {}): TaskRecord => ({
  id: ID(n),
  agent: "a",
  driver: "script",
  task: `t${n}`,
  label: `l${n}`,
  depth: 1,
  background: true,
  cwd: "/",
  status: "queued",
  owner: other,
  createdAt: n,
  outputBytes: 0,
  ...extra,
});

describe.skipIf(!redisInstalled)("RedisTaskStore", () => {
  let server: RedisServer;
  let n = 0;
  const fresh = () => new RedisTaskStore(redisTarget({ url: server.url, queue: `store${++n}`, lockMs: 2000, storeTimeoutMs: 1000 }));
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("moves a record only from the status and owner it still has, and keeps the status index with it", () => {
    const s = fresh();
    s.insert(rec(0));
    expect(() => s.insert(rec(0))).toThrow(`task ${ID(0)} already exists in the store`);
    const running = { ...rec(0), status: "running" as const, owner: currentOwner(), startedAt: 5 };
    // A stale owner or a stale status: refused, nothing written.
    expect(s.replace(running, { status: "queued", owner: currentOwner() })).toBe(false);
    expect(s.replace(running, { status: "running", owner: other })).toBe(false);
    expect(s.get(ID(0))).toStrictEqual(rec(0));
    expect(s.replace(running, { status: "queued", owner: other })).toBe(true);
    expect(s.replace({ ...running, status: "lost" }, { status: "queued", owner: other })).toBe(false);
    expect(s.get(ID(0))).toStrictEqual(running);
    expect([s.list({ status: ["queued"] }).total, s.list({ status: ["running"] }).total, s.active().map((r) => r.id)]).toStrictEqual([0, 1, [ID(0)]]);
    s.close();
  });

  it("lists the newest matches oldest first with the total, and a parent's children", () => {
    const s = fresh();
    for (let i = 0; i < 5; i++) s.insert(rec(i, i % 2 ? { status: "succeeded", parentId: ID(0) } : {}));
    expect(s.list({ limit: 3 })).toStrictEqual({ records: [rec(2), rec(3, { status: "succeeded", parentId: ID(0) }), rec(4)], total: 5 });
    expect(s.list({ status: ["succeeded"], limit: 1 }).records.map((r) => r.id)).toStrictEqual([ID(3)]);
    expect(s.list({ status: ["queued", "succeeded"] }).records.map((r) => r.id)).toStrictEqual([0, 1, 2, 3, 4].map(ID));
    expect(s.children(ID(0)).map((r) => r.id)).toStrictEqual([ID(1), ID(3)]);
    expect(s.children(ID(4))).toStrictEqual([]);
    s.close();
  });

  it("keeps output byte-exact, read by ranges", () => {
    const s = fresh();
    const bytes = Buffer.from([0, 255, 0xe2, 0x82, 0xac, 10, 13, 1]);
    s.appendOutput(ID(0), bytes.subarray(0, 3));
    s.appendOutput(ID(0), bytes.subarray(3));
    expect([s.outputSize(ID(0)), s.outputSize(ID(9))]).toStrictEqual([8, 0]);
    expect(s.readOutput(ID(0), 0, 8)).toStrictEqual(bytes);
    expect(s.readOutput(ID(0), 2, 5).toString()).toBe("€");
    expect([s.readOutput(ID(0), 6, 100), s.readOutput(ID(0), 4, 4), s.readOutput(ID(9), 0, 10)]).toStrictEqual([bytes.subarray(6), Buffer.alloc(0), Buffer.alloc(0)]);
    s.close();
  });

  it("an owner is alive while its heartbeat key lives; a record it cannot read is set aside with a warning", async () => {
    const s = fresh();
    const client = new Redis(server.url);
    try {
      const prefix = keyPrefix(s.target.queue);
      expect([s.isOwnerAlive(currentOwner()), s.isOwnerAlive(other), s.isOwnerAlive({ pid: 1, startTime: "x" })]).toStrictEqual([true, false, false]);
      await client.set(`${prefix}alive:${other.hostId}`, "1", "PX", 5000);
      expect(s.isOwnerAlive(other)).toBe(true);
      // This process's own key, written by the store's heartbeat.
      expect(await client.exists(`${prefix}alive:${currentOwner().hostId}`)).toBe(1);
      await client.set(`${prefix}rec:${ID(7)}`, '{"id":"nope"}');
      expect(s.get(ID(7))).toBeUndefined();
      expect(s.warnings.at(-1)).toMatch(new RegExp(`^task ${ID(7)} in Redis is not a valid record \\(field "id" must be a 26-character ULID\\)`));
    } finally {
      client.disconnect();
      s.close();
    }
  });

  it("an unreachable server fails a call within its bound, naming the server, never the password", async () => {
    const dead = await RedisServer.start({ password: "s3cret-pw" });
    const port = dead.port;
    const s = new RedisTaskStore(redisTarget({ url: `redis://default:s3cret-pw@127.0.0.1:${port}`, queue: "gone", storeTimeoutMs: 500 }));
    s.insert(rec(0));
    expect(s.get(ID(0))).toStrictEqual(rec(0));
    await dead.stop();
    let err: unknown;
    try {
      s.get(ID(0));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TaskError);
    expect((err as TaskError).code).toBe("task_store_failed");
    expect((err as TaskError).message).toMatch(
      new RegExp(`^the task store in Redis \\(redis://127\\.0\\.0\\.1:${port} \\(queue "gone"\\)\\) failed: Redis at redis://127\\.0\\.0\\.1:${port} did not answer a record read within 0\\.5 s`),
    );
    expect(JSON.stringify([(err as Error).message, s.warnings])).not.toContain("s3cret");
    s.close();
  });

  it("a configuration's Redis URL is checked, and its password never quoted", () => {
    const bad = tempProject({ tasks: { redis: "http://user:s3cret@example.com" } });
    expect(() => loadConfig(bad)).toThrow(/^codemode\.json:3:14: tasks\.redis must start with redis:\/\/ or rediss:\/\/, got "http:\/\/"$/);
    try {
      loadConfig(bad);
    } catch (e) {
      expect((e as Error).message).not.toContain("s3cret");
    }
    const orphan = tempProject({ tasks: { queue: "q" } });
    expect(() => loadConfig(orphan)).toThrow(/^codemode\.json:3:14: tasks\.queue names a Redis queue: set tasks\.redis too, or remove it$/);
    const ok = tempProject({ tasks: { redis: "redis://:pw@127.0.0.1:6390/2", queue: "jobs", maxRunning: 3, lockMs: 5000 } });
    expect(loadConfig(ok).tasks).toStrictEqual({ redis: "redis://:pw@127.0.0.1:6390/2", queue: "jobs", maxRunning: 3, lockMs: 5000 });
  });
});
