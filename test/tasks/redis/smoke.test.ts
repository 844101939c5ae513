import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { RedisServer, redisInstalled, NO_REDIS } from "../helpers/redis-server.js";
import { RedisTaskStore, redisTarget } from "../../../src/tasks/redis/store.js";
describe.skipIf(!redisInstalled)("smoke", () => {
  let server: RedisServer;
  beforeAll(async () => { server = await RedisServer.start(); });
  afterAll(async () => { await server?.stop(); });
  it("works", () => {
    const s = new RedisTaskStore(redisTarget({ url: server.url }));
    const rec = { id: "01HZZZZZZZZZZZZZZZZZZZZZZZ", agent: "a", driver: "script", task: "t", label: "l", depth: 1, background: true, cwd: "/", status: "queued", owner: { pid: 1, startTime: "x", hostId: "h" }, createdAt: 1, outputBytes: 0 } as const;
    s.insert({ ...rec });
    expect(s.get(rec.id)).toEqual(rec);
    expect(s.replace({ ...rec, status: "running" }, { status: "queued", owner: { pid: 2, startTime: "x", hostId: "h" } })).toBe(false);
    expect(s.replace({ ...rec, status: "running" }, { status: "queued", owner: rec.owner })).toBe(true);
    expect(s.list({ status: ["running"] })).toEqual({ records: [{ ...rec, status: "running" }], total: 1 });
    s.appendOutput(rec.id, Buffer.from("héllo"));
    expect(s.outputSize(rec.id)).toBe(6);
    expect(s.readOutput(rec.id, 1, 4).toString()).toBe("é");
    expect(s.isOwnerAlive(rec.owner)).toBe(false);
    s.close();
  });
});
