// `codemode tasks` and `codemode task <id>`: the subagent tasks a data dir holds, read through the
// runtime's own ptc_task_list / ptc_task_output tools (the table is rendered from their details).
import { createReadStream } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { TASK_STATUSES, type TaskRecord } from "../tasks/index.js";
import { parseArgs, parseDuration, UsageError } from "./args.js";
import { loadConfig } from "./config.js";
import { EXIT_FAILED, EXIT_OK, write, type Io } from "./io.js";
import { openRuntime, type Runtime } from "./runtime.js";
import { renderTaskHeader, renderTaskTable } from "./task-view.js";

export const TASKS_HELP = `Usage: codemode tasks [--status <s,…>] [--limit <n>] [--watch] [--interval <duration>] [--json] [--config <file>]

Lists the subagent tasks in the data dir (oldest first): id, status, agent, label, depth, output
bytes, time, host-counted usage and the error or report summary. Tasks whose host died while they
ran are shown as lost.

  --status <s,…>        only these statuses: ${TASK_STATUSES.join(", ")}
  --limit <n>           the most recent n tasks (default 100)
  --watch               redraw every --interval (default 1s) until no task is queued or running
  --json                the task records as JSON (the tool's details)
`;

export const TASK_HELP = `Usage: codemode task <id> [--follow] [--json] [--config <file>]

Prints a task's output on stdout and its status, usage and report on stderr.

  --follow   keep printing output as it arrives until the task ends
  --json     the task record, output and report as JSON

Exit code: 0 when the task succeeded or is still going, 1 when it failed, was canceled or lost,
or the id is unknown.
`;

const ACTIVE = new Set(["queued", "running", "stopping"]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ListDetails {
  tasks: TaskRecord[];
  count: number;
}

async function withRuntime<T>(io: Io, configFile: string | undefined, fn: (runtime: Runtime) => Promise<T>): Promise<T> {
  const config = loadConfig(io.cwd, configFile);
  const runtime = await openRuntime(config, io.cwd, { upstream: false, warm: false });
  try {
    // Rows set aside, a read-only data dir: said once, and the rest is still listed.
    for (const warning of runtime.cm.tasks.warnings) await write(io.stderr, `codemode: warning: ${warning}\n`);
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

function failure(result: { content: Array<{ text: string }> }): Error {
  return new Error(result.content.map((block) => block.text).join("\n"));
}

export async function tasksCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode tasks", argv, {
    status: { type: "string", value: "<s,…>", repeat: true },
    limit: { type: "string", value: "<n>" },
    watch: { type: "boolean" },
    interval: { type: "string", value: "<duration>" },
    json: { type: "boolean" },
    config: { type: "string", value: "<file>" },
    help: { type: "boolean" },
  });
  if (flags.help) {
    await write(io.stdout, TASKS_HELP);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`codemode tasks: takes no arguments, got ${positionals.join(" ")}; to read one task use codemode task <id>`);
  const status = (flags.status as string[] | undefined) ?? undefined;
  for (const s of status ?? []) {
    if (!(TASK_STATUSES as readonly string[]).includes(s)) throw new UsageError(`codemode tasks: --status "${s}" is not a task status; use one or more of ${TASK_STATUSES.join(", ")} (comma-separated)`);
  }
  let limit: number | undefined;
  if (flags.limit !== undefined) {
    limit = Number(flags.limit);
    if (!/^\d+$/.test(String(flags.limit)) || limit < 1 || limit > 10_000) throw new UsageError(`codemode tasks: --limit must be a whole number from 1 to 10000, got "${flags.limit}"`);
  }
  const interval = flags.interval === undefined ? 1000 : parseDuration("codemode tasks", "interval", flags.interval as string);
  if (flags.interval !== undefined && !flags.watch) throw new UsageError("codemode tasks: --interval only applies with --watch");
  if (flags.watch && flags.json) throw new UsageError("codemode tasks: give --watch or --json, not both");

  return withRuntime(io, flags.config as string | undefined, async ({ cm }) => {
    const input = { ...(status ? { status } : {}), ...(limit ? { limit } : {}) };
    const read = async (): Promise<ListDetails> => {
      const result = await cm.callTool("ptc_task_list", input);
      if (result.isError) throw failure(result);
      return result.details as ListDetails;
    };
    const color = io.stdout.isTTY === true && !io.env.NO_COLOR;
    const render = (list: ListDetails): string => {
      if (list.tasks.length === 0) return status ? `No ${status.join(" or ")} tasks.\n` : "No tasks yet. Programs start them with tools.ptc_subagent({ agent, task, background: true }).\n";
      const more = list.count > list.tasks.length ? `\n(${list.count} tasks match; showing the last ${list.tasks.length}: --limit shows more)` : "";
      return `${renderTaskTable(list.tasks, { color })}${more}\n`;
    };

    let list = await read();
    if (flags.json) {
      await write(io.stdout, JSON.stringify({ tasks: list.tasks, count: list.count }, null, 2) + "\n");
      return EXIT_OK;
    }
    if (!flags.watch) {
      await write(io.stdout, render(list));
      return EXIT_OK;
    }
    // --watch: a TTY is redrawn in place; a pipe gets a new table whenever something changed.
    let last = "";
    for (;;) {
      const text = render(list);
      const fingerprint = JSON.stringify(list.tasks.map((t) => [t.id, t.status, t.outputBytes]));
      if (io.stdout.isTTY) await write(io.stdout, `\x1b[H\x1b[2J${text}`);
      else if (fingerprint !== last) await write(io.stdout, (last === "" ? "" : "\n") + text);
      last = fingerprint;
      if (!list.tasks.some((t) => ACTIVE.has(t.status))) return EXIT_OK;
      await sleep(interval);
      list = await read();
    }
  });
}

interface OutputResult {
  task_id: string;
  status: string;
  output: string;
  output_bytes: number;
  output_truncated: boolean;
  output_full_path?: string;
}

export async function taskCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode task", argv, {
    follow: { type: "boolean" },
    json: { type: "boolean" },
    config: { type: "string", value: "<file>" },
    help: { type: "boolean" },
  });
  if (flags.help) {
    await write(io.stdout, TASK_HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(`codemode task: give one task id (list them with codemode tasks), got ${positionals.length === 0 ? "none" : positionals.join(" ")}`);
  if (flags.follow && flags.json) throw new UsageError("codemode task: give --follow or --json, not both");
  const id = positionals[0]!;

  return withRuntime(io, flags.config as string | undefined, async ({ cm }) => {
    const read = async (since?: number) => {
      const result = await cm.callTool("ptc_task_output", { task_id: id, ...(since === undefined ? {} : { since_bytes: since }) });
      if (result.isError) {
        const code = (result.structuredContent as { error?: { code?: string } } | undefined)?.error?.code;
        const text = result.content.map((block) => block.text).join("\n");
        return { error: code === "task_not_found" ? `${text} (from the command line: codemode tasks)` : text };
      }
      return { out: result.structuredContent as unknown as OutputResult, record: (result.details as { task: TaskRecord }).task };
    };
    let page = await read();
    if ("error" in page) {
      await write(io.stderr, `codemode task: ${page.error}\n`);
      return EXIT_FAILED;
    }
    let last = "";
    if (flags.json) {
      const { outputPreview: _preview, ...record } = page.record as TaskRecord & { outputPreview?: string };
      // The same text as JSON.stringify({ task, output }, null, 2), with the output streamed in.
      await write(io.stdout, `{\n  "task": ${JSON.stringify(record, null, 2).replace(/\n/g, "\n  ")},\n  "output": "`);
      await streamOutput(io, page.out, (text) => JSON.stringify(text).slice(1, -1));
      await write(io.stdout, `"\n}\n`);
    } else if (!flags.follow) {
      last = await streamOutput(io, page.out);
    } else {
      let since = 0;
      last = await streamOutput(io, page.out);
      since = page.out.output_bytes;
      while (ACTIVE.has(page.out.status)) {
        await sleep(200);
        const next = await read(since);
        if ("error" in next) {
          await write(io.stderr, `codemode task: ${next.error}\n`);
          return EXIT_FAILED;
        }
        page = next;
        await write(io.stdout, page.out.output);
        if (page.out.output !== "") last = page.out.output.slice(-1);
        since = page.out.output_bytes;
      }
    }
    if (!flags.json) {
      if (io.stdout.isTTY && page.out.output_bytes > 0 && last !== "\n") await write(io.stdout, "\n");
      const color = io.stderr.isTTY === true && !io.env.NO_COLOR;
      const output = page.out.output_bytes > 0 ? "" : "(no output)\n";
      await write(io.stderr, `${output}${renderTaskHeader(page.record, { color })}\n`);
    }
    return ["failed", "canceled", "lost"].includes(page.out.status) ? EXIT_FAILED : EXIT_OK;
  });
}

/**
 * A task's whole output on stdout: the page itself when it is whole, else the log file streamed
 * in pieces up to the page's `output_bytes` (a 600 MB log never becomes one string). Returns the
 * last character written.
 */
async function streamOutput(io: Io, out: OutputResult, transform: (text: string) => string = (text) => text): Promise<string> {
  if (!out.output_truncated || !out.output_full_path || out.output_bytes === 0) {
    await write(io.stdout, transform(out.output));
    return out.output.slice(-1);
  }
  const decoder = new StringDecoder("utf8");
  let last = "";
  const emit = async (text: string): Promise<void> => {
    if (text === "") return;
    await write(io.stdout, transform(text));
    last = text.slice(-1);
  };
  for await (const chunk of createReadStream(out.output_full_path, { start: 0, end: out.output_bytes - 1, highWaterMark: 1 << 20 })) {
    await emit(decoder.write(chunk as Buffer));
  }
  await emit(decoder.end());
  return last;
}
