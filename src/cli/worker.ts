// `codemode worker`: runs the subagent tasks other hosts put on the configuration's Redis queue,
// with this machine's agent definitions and drivers, until SIGTERM or SIGINT. See docs/distributed.md.
import { parseArgs } from "node:util";
import { redisLabel } from "../tasks/redis/connection.js";
import { BullRemoteQueue } from "../tasks/redis/queue.js";
import { redisTarget } from "../tasks/redis/store.js";
import { QueueWorker, workerIdentity } from "../tasks/redis/worker.js";
import { UsageError } from "./args.js";
import { ConfigError, loadConfig } from "./config.js";
import { EXIT_OK, write, type Io } from "./io.js";
import { openRuntime } from "./runtime.js";

export const WORKER_HELP = `Usage: codemode worker [--config <file>] [--concurrency <n>]

Runs queued subagent tasks (script, command and openai agents) from the Redis queue the
configuration names ("tasks": { "redis": "redis://host:6379", "queue"?: "name" }), on this
machine, with its agent definitions, until SIGTERM or SIGINT. Output streams into each task's log
as it arrives; usage is counted here; every host on the queue reads the records.

  --concurrency <n>   tasks this worker runs at once (default 8); "tasks.maxRunning" in the
                      configuration caps the whole queue
  --config <file>     the configuration to use instead of ./codemode.json

A worker that is stopped cancels the tasks it runs ("host closed"); one that dies or loses Redis
for longer than "tasks.lockMs" (default 30 s) has its tasks marked lost (worker_lost), never run
again. The Redis password comes from the URL or CODEMODE_REDIS_PASSWORD and is never printed.
`;

const DEFAULT_CONCURRENCY = 8;

export async function workerCommand(argv: readonly string[], io: Io): Promise<number> {
  let values: { config?: string; concurrency?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { config: { type: "string" }, concurrency: { type: "string" }, help: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(`codemode worker: ${(error as Error).message}`);
  }
  if (values.help) {
    await write(io.stdout, WORKER_HELP);
    return EXIT_OK;
  }
  const concurrency = values.concurrency === undefined ? DEFAULT_CONCURRENCY : Number(values.concurrency);
  if (!Number.isSafeInteger(concurrency) || concurrency < 1 || concurrency > 1024) {
    throw new UsageError(`codemode worker: --concurrency must be a whole number from 1 to 1024, got "${values.concurrency}"`);
  }
  const config = loadConfig(io.cwd, values.config);
  const { redis, queue, lockMs, maxRunning } = config.tasks;
  if (redis === undefined) {
    throw new ConfigError(`${config.file ?? "codemode.json"}: a worker needs a queue: add "tasks": { "redis": "redis://host:6379" } (the same as the hosts that spawn the tasks)`);
  }
  const target = redisTarget({ url: redis, ...(queue !== undefined ? { queue } : {}), ...(lockMs !== undefined ? { lockMs } : {}) });
  const info = workerIdentity();
  const warn = (message: string): void => void write(io.stderr, `codemode worker: ${message}\n`);
  const runtime = await openRuntime(config, io.cwd, { worker: info });
  const remote = new BullRemoteQueue(target, warn);
  let worker: QueueWorker | undefined;
  try {
    worker = await QueueWorker.start({ host: runtime.cm.tasks, remote, target, concurrency, ...(maxRunning !== undefined ? { maxRunning } : {}), onWarning: warn }, info);
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
