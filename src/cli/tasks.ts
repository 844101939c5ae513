// `codemode tasks` and `codemode task <id>`: the subagent tasks a data dir holds, read through the
// runtime's own ptc_task_list / ptc_task_output tools (the table is rendered from their details).
import { closeSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { openRegular, readAt } from "../safe-fs.js";
import { TASK_STATUSES, type TaskRecord } from "../tasks/index.js";
import { commandHelp, CONFIG_FLAG, HELP_FLAG, parseArgs, parseDuration, usageFlags, UsageError, type FlagTable } from "./args.js";
import { loadConfig } from "./config.js";
import { EXIT_FAILED, EXIT_OK, useColor, write, writeOutput, writeStyled, type Io } from "./io.js";
import { frameColumns, frameRows, type TerminalStream } from "./progress-mode.js";
import { openRuntime, type Runtime } from "./runtime.js";

const TASKS_FLAGS = {
  status: { type: "string", value: "<s,…>", list: true, description: `only these statuses: ${TASK_STATUSES.join(", ")}` },
  limit: { type: "string", value: "<n>", short: "n", description: "the most recent n tasks (default 100)" },
  watch: { type: "boolean", short: "w", description: "redraw in place every --interval (default 1s) until no task is queued or running" },
  interval: { type: "string", value: "<duration>", description: "how often --watch redraws: 500ms, 2s" },
  json: { type: "boolean", short: "j", description: "the task records as JSON (the tool's details)" },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const TASKS_HELP = commandHelp({
  usage: `codemode tasks ${usageFlags(TASKS_FLAGS)}`,
  about: `Lists the subagent tasks in the data dir (oldest first): id, status, agent, label, depth, output
bytes, time, host-counted usage (for agents that count tokens) and the error or report summary.
Tasks whose host died while they ran are shown as lost.`,
  flags: TASKS_FLAGS,
});

const TASK_FLAGS = {
  follow: { type: "boolean", short: "f", description: "keep printing output as it arrives until the task ends" },
  json: { type: "boolean", short: "j", description: "the task record, output and report as JSON" },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const TASK_HELP = commandHelp({
  usage: `codemode task <id> ${usageFlags(TASK_FLAGS)}`,
  about: "Prints a task's output on stdout and its status, usage and report on stderr.",
  flags: TASK_FLAGS,
  notes: `Exit code: 0 when the task succeeded or is still going, 1 when it failed, was canceled or lost,
or the id is unknown.`,
});

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
  const { flags, positionals } = parseArgs("codemode tasks", argv, TASKS_FLAGS);
  if (flags.help) {
    await write(io.stdout, TASKS_HELP);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`codemode tasks: takes no arguments, got ${positionals.join(" ")}; to read one task use codemode task <id>`);
  const status = (flags.status as string[] | undefined) ?? undefined;
  for (const s of status ?? []) {
    if (!(TASK_STATUSES as readonly string[]).includes(s))
      throw new UsageError(`codemode tasks: --status "${s}" is not a task status; use one or more of ${TASK_STATUSES.join(", ")} (comma-separated)`);
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
    const color = useColor(io.stdout, io.env);
    // The table's libraries load with the command that draws it, not with every CLI start.
    const { renderTaskTable } = await import("./task-view.js");
    const render = (list: ListDetails, rows = Infinity): string => {
      if (list.tasks.length === 0) return status ? `No ${status.join(" or ")} tasks.\n` : "No tasks yet. Programs start them with tools.ptc_subagent({ agent, task, background: true }).\n";
      const more = list.count > list.tasks.length ? `\n(${list.count} tasks match; showing the last ${list.tasks.length}: --limit shows more)` : "";
      // A terminal shows the newest rows that fit under the header, and says how many it left out.
      const room = rows - 1 - (more ? 1 : 0);
      if (list.tasks.length <= room) return `${renderTaskTable(list.tasks, { color })}${more}\n`;
      const shown = list.tasks.slice(list.tasks.length - Math.max(1, room - 1));
      const hidden = list.tasks.length - shown.length;
      return `${renderTaskTable(shown, { color })}\n(… ${hidden} earlier task${hidden === 1 ? "" : "s"} above, not shown: the terminal has ${rows + 1} rows; --status narrows the list)${more}\n`;
    };

    let list = await read();
    if (flags.json) {
      await write(io.stdout, JSON.stringify({ tasks: list.tasks, count: list.count }, null, 2) + "\n");
      return EXIT_OK;
    }
    if (!flags.watch) {
      await writeStyled(io.stdout, render(list));
      return EXIT_OK;
    }
    // --watch: a terminal is redrawn in place by log-update, never taller than it is (so no
    // frame is pushed into the scrollback) and cut to its width; a pipe gets a new table
    // whenever something changed.
    if (io.stdout.isTTY) {
      const stream = io.stdout as TerminalStream;
      const [{ createLogUpdate }, { fitWidth }] = await Promise.all([import("log-update"), import("./progress.js")]);
      const draw = createLogUpdate(stream, { showCursor: true });
      try {
        for (;;) {
          draw(fitWidth(render(list, frameRows(stream)).trimEnd().split("\n"), frameColumns(stream)).join("\n"));
          if (!list.tasks.some((t) => ACTIVE.has(t.status))) return EXIT_OK;
          await sleep(interval);
          list = await read();
        }
      } finally {
        draw.done();
      }
    }
    let last = "";
    for (;;) {
      const fingerprint = JSON.stringify(list.tasks.map((t) => [t.id, t.status, t.outputBytes]));
      if (fingerprint !== last) await writeStyled(io.stdout, (last === "" ? "" : "\n") + render(list));
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
  const { flags, positionals } = parseArgs("codemode task", argv, TASK_FLAGS);
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
    if (flags.json) {
      const { outputPreview: _preview, ...record } = page.record as TaskRecord & { outputPreview?: string };
      // The same text as JSON.stringify({ task, output }, null, 2), with the output streamed in:
      // a log past V8's longest string (~512 MB) cannot be one value.
      const json = (text: string) => write(io.stdout, JSON.stringify(text).slice(1, -1));
      await write(io.stdout, `{\n  "task": ${JSON.stringify(record, null, 2).replace(/\n/g, "\n  ")},\n  "output": "`);
      if (page.out.output_truncated && page.out.output_full_path) await eachLogChunk(page.out.output_full_path, 0, page.out.output_bytes, json);
      else await json(page.out.output);
      await write(io.stdout, `"\n}\n`);
      return ["failed", "canceled", "lost"].includes(page.out.status) ? EXIT_FAILED : EXIT_OK;
    }
    let last = await printPage(io, page.out, 0);
    if (flags.follow) {
      while (ACTIVE.has(page.out.status)) {
        await sleep(200);
        const since = page.out.output_bytes;
        const next = await read(since);
        if ("error" in next) {
          await write(io.stderr, `codemode task: ${next.error}\n`);
          return EXIT_FAILED;
        }
        page = next;
        last = (await printPage(io, page.out, since)) || last;
      }
    }
    if (io.stdout.isTTY && page.out.output_bytes > 0 && last !== "\n") await writeOutput(io.stdout, "\n");
    const color = useColor(io.stderr, io.env);
    const none = page.out.output_bytes > 0 ? "" : "(no output)\n";
    const { renderTaskHeader } = await import("./task-view.js");
    await writeStyled(io.stderr, `${none}${renderTaskHeader(page.record, { color })}\n`);
    return ["failed", "canceled", "lost"].includes(page.out.status) ? EXIT_FAILED : EXIT_OK;
  });
}

const LOG_CHUNK_BYTES = 1024 * 1024;

/**
 * Prints one page of a task's output read from `since`: the page itself, or — when it was cut to
 * its tail — the bytes from `since` in the full log, streamed in chunks (never the whole log in
 * memory). Returns the last character printed ("" when none).
 */
async function printPage(io: Io, out: OutputResult, since: number): Promise<string> {
  if (!(out.output_truncated && out.output_full_path)) {
    await writeOutput(io.stdout, out.output);
    return out.output.slice(-1);
  }
  let last = "";
  await eachLogChunk(out.output_full_path, since, out.output_bytes, async (text) => {
    await writeOutput(io.stdout, text);
    if (text !== "") last = text.slice(-1);
  });
  return last;
}

/** Decodes bytes `from`..`to` of a task log chunk by chunk; the log is opened without following links. */
async function eachLogChunk(path: string, from: number, to: number, each: (text: string) => unknown): Promise<void> {
  const opened = openRegular(path);
  if (!opened) return;
  const decoder = new StringDecoder("utf8");
  try {
    for (let at = from; at < to; at += LOG_CHUNK_BYTES) await each(decoder.write(readAt(opened.fd, at, Math.min(LOG_CHUNK_BYTES, to - at))));
    await each(decoder.end());
  } finally {
    closeSync(opened.fd);
  }
}
