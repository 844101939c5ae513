// `codemode worker`: runs the subagent tasks other hosts put on the configuration's Redis queue,
// with this machine's agent definitions and drivers, until SIGTERM or SIGINT. See docs/distributed.md.
import { redisLabel } from "../tasks/redis/connection.js";
import type { QueueWorker } from "../tasks/redis/worker.js";
import { commandHelp, CONFIG_FLAG, HELP_FLAG, parseArgs, usageFlags, UsageError, type FlagTable } from "./args.js";
import { ConfigError, loadConfig } from "./config.js";
import { EXIT_OK, write, type Io } from "./io.js";
import { openRuntime } from "./runtime.js";

const DEFAULT_CONCURRENCY = 8;

const WORKER_FLAGS = {
  concurrency: {
    type: "string",
    value: "<n>",
    short: "n",
    description: `tasks this worker runs at once (default ${DEFAULT_CONCURRENCY}); "tasks.maxRunning" in the configuration caps the whole queue`,
  },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const WORKER_HELP = commandHelp({
  usage: `codemode worker ${usageFlags(WORKER_FLAGS)}`,
  about: `Runs queued subagent tasks (script, command and openai agents) from the Redis queue the
configuration names ("tasks": { "redis": "redis://host:6379", "queue"?: "name" }), on this
machine, with its agent definitions, until SIGTERM or SIGINT. Output streams into each task's log
as it arrives; usage is counted here; every host on the queue reads the records.`,
  flags: WORKER_FLAGS,
  notes: `A worker that is stopped cancels the tasks it runs ("host closed"); one that dies or loses Redis
for longer than "tasks.lockMs" (default 30 s) has its tasks marked lost (worker_lost), never run
again — unless their agent says "retries: N": then such a task is queued again, up to N times.
The Redis password comes from the URL or CODEMODE_REDIS_PASSWORD and is never printed.
See docs/distributed.md.`,
});

export async function workerCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode worker", argv, WORKER_FLAGS);
  if (flags.help) {
    await write(io.stdout, WORKER_HELP);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`codemode worker: takes no arguments, got ${positionals.join(" ")}`);
  const values = { concurrency: flags.concurrency as string | undefined, config: flags.config as string | undefined };
  const concurrency = values.concurrency === undefined ? DEFAULT_CONCURRENCY : Number(values.concurrency);
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > 1024) {
    throw new UsageError(`codemode worker: --concurrency must be a whole number from 1 to 1024, got "${values.concurrency}"`);
  }
  const config = loadConfig(io.cwd, values.config);
  const { redis, queue, lockMs, maxRunning } = config.tasks;
  if (redis === undefined) {
    throw new ConfigError(`${config.file ?? "codemode.json"}: a worker needs a queue: add "tasks": { "redis": "redis://host:6379" } (the same as the hosts that spawn the tasks)`);
  }
  // Loaded here, not at the CLI's start: no other command needs BullMQ.
  const [{ BullRemoteQueue }, { redisTarget }, { QueueWorker: Worker, workerIdentity }] = await Promise.all([
    import("../tasks/redis/queue.js"),
    import("../tasks/redis/store.js"),
    import("../tasks/redis/worker.js"),
  ]);
  const target = redisTarget({ url: redis, ...(queue !== undefined ? { queue } : {}), ...(lockMs !== undefined ? { lockMs } : {}) });
  const info = workerIdentity();
  const warn = (message: string): void => void write(io.stderr, `codemode worker: ${message}\n`);
  const runtime = await openRuntime(config, io.cwd, { worker: info });
  const remote = new BullRemoteQueue(target, warn);
  let worker: QueueWorker | undefined;
  try {
    worker = await Worker.start({ host: runtime.cm.tasks, remote, target, concurrency, ...(maxRunning !== undefined ? { maxRunning } : {}), onWarning: warn }, info);
    await write(io.stderr, `codemode worker ${info.id} on ${info.host} (pid ${info.pid}): running tasks of queue "${target.queue}" at ${redisLabel(redis)}, ${concurrency} at once\n`);
    await new Promise<void>((resolve) => {
      process.once("SIGTERM", resolve);
      process.once("SIGINT", resolve);
    });
    await write(io.stderr, `codemode worker ${info.id}: stopping (its running tasks are canceled)\n`);
  } finally {
    // Stop taking jobs first, then stop the tasks it runs, then let go of the queue.
    await worker?.pause();
    await runtime.close();
    await worker?.close();
    await remote.close();
  }
  return EXIT_OK;
}
