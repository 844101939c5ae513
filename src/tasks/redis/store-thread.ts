// The Redis side of RedisTaskStore, in a worker thread: the store's interface is synchronous (the
// task host was built on an embedded database), so each call is posted here and the calling
// thread waits on it (synckit: Atomics.wait). Compare-and-set writes are Lua scripts: Redis runs
// each one atomically, which is what keeps one writer per record across hosts and workers.
import { Redis } from "ioredis";
import { runAsWorker } from "synckit";
import { keyPrefix, redactCredentials, redisLabel, redisOptions } from "./connection.js";

const STATUSES = ["queued", "running", "stopping", "succeeded", "failed", "canceled", "lost"];
const ACTIVE = ["queued", "running", "stopping"];

// KEYS: rec, statusSetOfNew, kidsOfParent (or "")   ARGV: json, id
const INSERT = `
if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("SET", KEYS[1], ARGV[1])
redis.call("ZADD", KEYS[2], 0, ARGV[2])
if KEYS[3] ~= "" then redis.call("SADD", KEYS[3], ARGV[2]) end
return 1`;

// KEYS: rec   ARGV: json, newStatus, expectStatus, expectPid, expectStart, expectHostId, statusPrefix, id, endedChannel
const REPLACE = `
local cur = redis.call("GET", KEYS[1])
if not cur then return 0 end
local r = cjson.decode(cur)
if r.status ~= ARGV[3] then return 0 end
local o = r.owner
if tostring(o.pid) ~= ARGV[4] or o.startTime ~= ARGV[5] then return 0 end
local host = o.hostId
if host == nil or host == cjson.null then host = "" end
if host ~= ARGV[6] then return 0 end
redis.call("SET", KEYS[1], ARGV[1])
if ARGV[2] ~= ARGV[3] then
  redis.call("ZREM", ARGV[7] .. ARGV[3], ARGV[8])
  redis.call("ZADD", ARGV[7] .. ARGV[2], 0, ARGV[8])
end
local s = ARGV[2]
if s == "succeeded" or s == "failed" or s == "canceled" or s == "lost" then redis.call("PUBLISH", ARGV[9], ARGV[8]) end
return 1`;

interface Handle {
  redis: Redis;
  prefix: string;
  label: string;
  timeoutMs: number;
  heartbeat?: ReturnType<typeof setInterval>;
  lastError?: string;
}

const handles = new Map<number, Handle>();
let nextHandle = 1;

function h(id: number): Handle {
  const handle = handles.get(id);
  if (!handle) throw new Error("the Redis task store is closed");
  return handle;
}

/** A call that waits for Redis across reconnects, but not forever: the caller is told why. */
async function bounded<T>(handle: Handle, what: string, run: () => Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const last = handle.lastError ? ` (last error: ${handle.lastError})` : "";
      const err = new Error(`Redis at ${handle.label} did not answer ${what} within ${handle.timeoutMs / 1000} s${last}; it is retried with backoff`);
      (err as Error & { code?: string }).code = "task_store_unavailable";
      reject(err);
    }, handle.timeoutMs);
  });
  try {
    return await Promise.race([run(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

type Op =
  | ["open", string, string, string, number, number]
  | ["insert", number, string, string, string, string]
  | ["replace", number, string, string, string, string, number, string, string]
  | ["get", number, string]
  | ["list", number, string[], number]
  | ["active", number]
  | ["children", number, string]
  | ["append", number, string, Uint8Array]
  | ["size", number, string]
  | ["read", number, string, number, number]
  | ["alive", number, string]
  | ["close", number, string];

async function run(...op: Op): Promise<unknown> {
  switch (op[0]) {
    case "open": {
      const [, url, queue, hostId, lockMs, timeoutMs] = op;
      const redis = new Redis({ ...redisOptions({ url }), lazyConnect: false });
      const handle: Handle = { redis, prefix: keyPrefix(queue), label: redisLabel(url), timeoutMs };
      redis.on("error", (err: Error) => (handle.lastError = redactCredentials(err.message)));
      redis.on("ready", () => (handle.lastError = undefined));
      redis.defineCommand("cmInsert", { numberOfKeys: 3, lua: INSERT });
      redis.defineCommand("cmReplace", { numberOfKeys: 1, lua: REPLACE });
      const id = nextHandle++;
      handles.set(id, handle);
      // This process's liveness: a record's owner is alive while its key exists.
      const beat = (): void => {
        redis.set(`${handle.prefix}alive:${hostId}`, String(Date.now()), "PX", lockMs).catch(() => undefined);
      };
      await bounded(handle, "the first heartbeat", () => redis.set(`${handle.prefix}alive:${hostId}`, String(Date.now()), "PX", lockMs));
      handle.heartbeat = setInterval(beat, Math.max(100, Math.floor(lockMs / 3)));
      return id;
    }
    case "insert": {
      const [, hid, id, json, status, parentId] = op;
      const handle = h(hid);
      const p = handle.prefix;
      const r = await bounded(handle, "an insert", () =>
        (handle.redis as unknown as { cmInsert(...a: string[]): Promise<number> }).cmInsert(`${p}rec:${id}`, `${p}st:${status}`, parentId ? `${p}kids:${parentId}` : "", json, id),
      );
      return r === 1;
    }
    case "replace": {
      const [, hid, id, json, status, expectStatus, pid, start, hostId] = op;
      const handle = h(hid);
      const p = handle.prefix;
      const r = await bounded(handle, "a record write", () =>
        (handle.redis as unknown as { cmReplace(...a: string[]): Promise<number> }).cmReplace(`${p}rec:${id}`, json, status, expectStatus, String(pid), start, hostId, `${p}st:`, id, `${p}ended`),
      );
      return r === 1;
    }
    case "get": {
      const handle = h(op[1]);
      return bounded(handle, "a record read", () => handle.redis.get(`${handle.prefix}rec:${op[2]}`));
    }
    case "list": {
      const [, hid, statuses, limit] = op;
      const handle = h(hid);
      const p = handle.prefix;
      return bounded(handle, "a task list", async () => {
        const pipe = handle.redis.pipeline();
        for (const s of statuses) {
          pipe.zcard(`${p}st:${s}`);
          pipe.zrevrangebylex(`${p}st:${s}`, "+", "-", "LIMIT", 0, Math.max(1, limit));
        }
        const replies = (await pipe.exec()) ?? [];
        let total = 0;
        const ids: string[] = [];
        for (let i = 0; i < replies.length; i += 2) {
          total += Number(replies[i]![1]);
          ids.push(...(replies[i + 1]![1] as string[]));
        }
        // Newest `limit` across the statuses (ids are ULIDs: lexical order is creation order), oldest first.
        ids.sort();
        const page = limit > 0 ? ids.slice(Math.max(0, ids.length - limit)) : [];
        const jsons = page.length && limit > 0 ? await handle.redis.mget(page.map((id) => `${p}rec:${id}`)) : [];
        return { jsons, total };
      });
    }
    case "active": {
      const handle = h(op[1]);
      const p = handle.prefix;
      return bounded(handle, "the active tasks", async () => {
        const ids = (await Promise.all(ACTIVE.map((s) => handle.redis.zrange(`${p}st:${s}`, "0", "-1")))).flat().sort();
        return ids.length ? handle.redis.mget(ids.map((id) => `${p}rec:${id}`)) : [];
      });
    }
    case "children": {
      const handle = h(op[1]);
      const p = handle.prefix;
      return bounded(handle, "a task's children", async () => {
        const ids = (await handle.redis.smembers(`${p}kids:${op[2]}`)).sort();
        return ids.length ? handle.redis.mget(ids.map((id) => `${p}rec:${id}`)) : [];
      });
    }
    case "append": {
      const handle = h(op[1]);
      return bounded(handle, "an output write", () => handle.redis.append(`${handle.prefix}log:${op[2]}`, Buffer.from(op[3].buffer, op[3].byteOffset, op[3].byteLength)));
    }
    case "size": {
      const handle = h(op[1]);
      return bounded(handle, "an output size", () => handle.redis.strlen(`${handle.prefix}log:${op[2]}`));
    }
    case "read": {
      const [, hid, id, start, end] = op;
      const handle = h(hid);
      if (end <= start) return new Uint8Array(0);
      const buf = await bounded(handle, "an output read", () => handle.redis.getrangeBuffer(`${handle.prefix}log:${id}`, start, end - 1));
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    case "alive": {
      const handle = h(op[1]);
      return (await bounded(handle, "a liveness check", () => handle.redis.exists(`${handle.prefix}alive:${op[2]}`))) === 1;
    }
    case "close": {
      const handle = handles.get(op[1]);
      if (!handle) return true;
      handles.delete(op[1]);
      if (handle.heartbeat) clearInterval(handle.heartbeat);
      // A host that closed has no live records: saying so at once spares others the wait for the key to expire.
      await Promise.race([handle.redis.del(`${handle.prefix}alive:${op[2]}`), new Promise((r) => setTimeout(r, 500))]).catch(() => undefined);
      handle.redis.disconnect();
      return true;
    }
  }
}

export type StoreThreadCall = typeof run;
export { STATUSES };

runAsWorker(run);
