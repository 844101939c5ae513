// Where the Redis backend connects and how it names its keys. A URL may carry a password: it is
// used to connect and never printed — every message names the server by `redisLabel` instead.
import type { RedisOptions } from "ioredis";

export const DEFAULT_QUEUE = "codemode-tasks";
/** How long a worker may go silent (no lock renewal, no heartbeat) before its tasks are lost. */
export const DEFAULT_LOCK_MS = 30_000;
/** How long one store call waits for Redis (across reconnects) before it fails. */
export const DEFAULT_STORE_TIMEOUT_MS = 10_000;

export interface RedisTarget {
  /** redis://[user:password@]host:port[/db] or rediss://… */
  url: string;
  /** The BullMQ queue name; also namespaces the task records (`codemode:<queue>:…`). */
  queue: string;
  lockMs: number;
  storeTimeoutMs: number;
}

/**
 * The URL names the server; `CODEMODE_REDIS_PASSWORD` (or `REDIS_PASSWORD`) supplies a password
 * the URL leaves out, so a configuration file can be shared without a secret in it.
 */
export function redisOptions(target: Pick<RedisTarget, "url">, env: NodeJS.ProcessEnv = process.env): RedisOptions {
  const u = new URL(target.url);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  const password = u.password !== "" ? decodeURIComponent(u.password) : (env.CODEMODE_REDIS_PASSWORD ?? env.REDIS_PASSWORD);
  const options: RedisOptions = {
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port === "" ? 6379 : Number(u.port),
    db,
    // Reconnect with backoff for as long as it takes; each caller bounds its own wait.
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 10), 2000),
    // BullMQ requires this for its blocking connections; store calls are bounded by their own timer.
    maxRetriesPerRequest: null,
    connectionName: "codemode",
  };
  if (u.username !== "") options.username = decodeURIComponent(u.username);
  if (password !== undefined && password !== "") options.password = password;
  if (u.protocol === "rediss:") options.tls = {};
  return options;
}

/** The server as messages show it: scheme, host and port, never the credentials. */
export function redisLabel(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.length > 1 ? u.pathname : ""}`;
  } catch {
    return "redis (unparsable URL)";
  }
}

/** Why a URL cannot name a Redis server, or undefined when it can. */
export function redisUrlProblem(url: unknown): string | undefined {
  if (typeof url !== "string" || url === "") return "must be a redis://host:port URL";
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "must be a redis://host:port URL (it does not parse as a URL)";
  }
  if (u.protocol !== "redis:" && u.protocol !== "rediss:") return `must start with redis:// or rediss://, got "${u.protocol}//"`;
  if (u.hostname === "") return "must name a host (redis://host:port)";
  if (u.pathname.length > 1 && !/^\/\d{1,2}$/.test(u.pathname)) return `may end with a database number (/0 … /15), got "${u.pathname}"`;
  return undefined;
}

export function queueNameProblem(name: unknown): string | undefined {
  if (typeof name !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(name)) return "must be 1 to 64 letters, digits, '-' or '_'";
  return undefined;
}

/** Every key of a queue's task records starts with this. */
export function keyPrefix(queue: string): string {
  return `codemode:${queue}:`;
}

/** Error messages from the client may quote the URL it was given: the credentials are cut out. */
export function redactCredentials(message: string): string {
  return message.replace(/(rediss?:\/\/)[^@\s/]*@/g, "$1***@");
}
