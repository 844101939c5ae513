// The runtime's task tools — ptc_subagent, ptc_task_wait, ptc_task_list, ptc_task_output,
// ptc_task_stop — defined with defineBuiltinTool over a TaskHost: their inputs, their compact and full
// views, and the text a model reads (docs/tasks.md).
import { headChars, summaryLine, takeTail } from "../text.js";
import { z } from "zod";
import { pinnedText, ToolError, type PinnedText, type Tool, type ToolContext } from "../tools/index.js";
import { defineBuiltinTool } from "../tools/define.js";
import { isTerminal, TaskError, TaskHost, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, type TaskRecord, type TaskStatus } from "../tasks/index.js";
import { detailRecord, readOnlyTierSchema, reportChannelSchema, reportSchema, statusSchema, taskRecordSchema, toSnake, usageLine, usageSchema, type SnakeRecord } from "./records.js";

export { toSnake, usageLine, taskRecordSchema, type SnakeRecord } from "./records.js";

/** How much of a foreground child's output its model-facing text carries (the tail). */
const FOREGROUND_TEXT_BYTES = 8 * 1024;
/** How much of an output page ptc_task_output's model text carries: the newest part, within the budget. */
const OUTPUT_TEXT_BYTES = 32 * 1024;

/** How much of an error message one row of ptc_task_list carries; ptc_task_output has all of it. */
const LIST_ERROR_CHARS = 300;

/** A list row's error_message, cut so a lean list stays lean whatever a child reported. */
function listRow(row: SnakeRecord): SnakeRecord {
  const message = row.error_message;
  if (message === undefined || message.length <= LIST_ERROR_CHARS) return row;
  const head = headChars(message, LIST_ERROR_CHARS);
  return { ...row, error_message: `${head}… (${message.length - head.length} more characters: ptc_task_output({ task_id: "${row.id}" }) has the whole message)` };
}

/** The last `bytes` of `text`, never starting mid-character, marked with "…" when cut. */
function tailOf(text: string, bytes: number): string {
  const tail = takeTail(text, bytes);
  return tail === text ? text : `…${tail}`;
}

/** Task failures keep their code (task_not_found, task_depth_exceeded…) for programs to branch on. */
function rethrow(err: unknown): never {
  // The task id travels as `e.task_id` too, so a program can read a failed child's usage without parsing prose.
  if (err instanceof TaskError) throw new ToolError(err.code, err.message, err.taskId ? { fields: { task_id: err.taskId } } : undefined);
  throw err;
}

async function guarded<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    rethrow(err);
  }
}

/** How a status reads after "Task X": a state it is in, or what happened to it. */
const STATUS_PHRASE: Record<TaskStatus, string> = {
  queued: "is queued",
  running: "is running",
  stopping: "is stopping",
  succeeded: "succeeded",
  failed: "failed",
  canceled: "was canceled",
  lost: "was lost",
};

/**
 * The status line: short and bounded (no message in it), so that with the usage line after it it
 * can be pinned — the part of the text no budget cut removes.
 */
function statusLine(r: SnakeRecord): string {
  let s = `Task ${r.id} (agent ${r.agent}, depth ${r.depth}) ${STATUS_PHRASE[r.status]}`;
  if (r.exit_code !== undefined) s += `, exit code ${r.exit_code}`;
  if (r.lost_reason !== undefined) s += ` (${r.lost_reason})`;
  return s;
}

/** The status and usage lines, which survive any cut; the error message comes first after them. */
function taskText(r: SnakeRecord, usage: SnakeRecord["usage"], rest: string[]): PinnedText {
  const body = r.error_message !== undefined ? [`error: ${r.error_message}`, ...rest] : rest;
  return pinnedText(`${statusLine(r)}\n${usageLine(usage)}`, body.join("\n"));
}

function reportText(report: SnakeRecord["report"], recordUsage: SnakeRecord["usage"]): string[] {
  if (!report) return [];
  const lines = [`report: ${report.summary}`];
  // A record written before usage existed still shows the report's own host-stamped numbers.
  const stamped = (report as { usage?: SnakeRecord["usage"] }).usage;
  if (stamped && !recordUsage) lines.push(`report usage: input=${stamped.input} output=${stamped.output} cost=${stamped.cost} turns=${stamped.turns}`);
  for (const f of report.findings) lines.push(`- ${f.what} (${f.evidence})`);
  if (report.files_touched.length) lines.push(`files touched: ${report.files_touched.join(", ")}`);
  return lines;
}

/** Agents listed by name in ptc_subagent's description, and the characters of each one's line. */
const LISTED_AGENTS = 30;
const AGENT_LINE_CHARS = 100;

/**
 * The agents a model can spawn, one line each (name, driver, read-only, what it does), so it can
 * choose one without a failed call; past LISTED_AGENTS by name only.
 */
function agentList(host: TaskHost): string {
  const agents = host.agents.list();
  const broken = host.agents.problems.map((problem) => problem.name);
  if (agents.length === 0 && broken.length === 0) return "\n\nNo agents are defined.";
  const lines = agents.slice(0, LISTED_AGENTS).map((agent) => `- ${agent.name} (${agent.driver}${agent.readOnly ? ", read-only" : ""}): ${summaryLine(agent.description, AGENT_LINE_CHARS)}`);
  const rest = agents.slice(LISTED_AGENTS).map((agent) => agent.name);
  if (rest.length > 0) lines.push(`- also: ${rest.join(", ")}`);
  if (broken.length > 0) lines.push(`Not loaded (their files have errors): ${broken.join(", ")}`);
  return `\n\nAgents:\n${lines.join("\n")}`;
}

export function ptcSubagentTool(host: TaskHost): Tool {
  const compact = z.object({
    task_id: z.string().optional().describe("Only for a background spawn: wait for it with ptc_task_wait"),
    status: statusSchema.describe("Background: running or queued. Foreground: succeeded"),
    exit_code: z.number().int().optional().describe("Only for a foreground spawn"),
    report_channel: reportChannelSchema,
    read_only_tier: readOnlyTierSchema.optional(),
    report: reportSchema.optional(),
    usage: usageSchema.optional().describe("Host-measured; absent on a background handle"),
  });
  type Out = z.input<typeof compact> & { task: SnakeRecord; output_tail?: string };
  return defineBuiltinTool({
    name: "ptc_subagent",
    title: "Run a subagent",
    // A command agent is a process that may do anything its CLI does.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    description: `Spawn a subagent on a task. Foreground (default) waits and returns its result; background: true returns a task_id at once (status running or queued); wait for it with ptc_task_wait. A failed foreground child rejects with its task id.${agentList(host)}`,
    input: z.object({
      agent: z.string().min(1).describe("Agent name"),
      task: z
        .string()
        .min(1)
        .refine((text) => text.trim().length > 0, "must contain text, not only whitespace")
        .describe("What the subagent should do"),
      background: z.boolean().optional(),
      label: z.string().optional().describe("Short label for task lists"),
      model: z.string().optional(),
      cwd: z.string().optional(),
    }),
    views: { compact, full: compact.extend({ task: taskRecordSchema }) },
    execute: (input, ctx: ToolContext) =>
      guarded(async () => {
        const rec = await host.spawn(
          { ...input, background: input.background ?? false },
          { depth: ctx.depth, signal: ctx.signal, runId: ctx.runId, ...(ctx.trace ? { trace: ctx.trace } : {}), ...(ctx.taskId !== undefined ? { parentTaskId: ctx.taskId } : {}) },
        );
        return subagentRecord(host, rec);
      }),
    toModelOutput: (r: Out) => {
      if (r.task_id !== undefined) {
        return pinnedText(
          [
            `Started background task ${r.task_id} (agent ${r.task.agent}), status ${r.status}. Wait for it with ptc_task_wait({ task_ids: ["${r.task_id}"] }), then read it with ptc_task_output.`,
            usageLine(undefined),
          ].join("\n"),
        );
      }
      const rest = reportText(r.report, r.usage);
      if (r.output_tail) rest.push("", r.output_tail);
      return taskText(r.task, r.usage, rest);
    },
    toDetails: (r: Out) => ({ task: detailRecord(host, fromSnakeId(host, r.task.id)) }),
  });
}

function fromSnakeId(host: TaskHost, id: string): TaskRecord {
  return host.get(id)!;
}

function subagentRecord(host: TaskHost, rec: TaskRecord) {
  const task = toSnake(rec);
  if (rec.background) {
    return {
      task_id: rec.id,
      status: rec.status,
      report_channel: "none" as const,
      ...(rec.readOnlyTier ? { read_only_tier: rec.readOnlyTier } : {}),
      task,
    };
  }
  const page = host.output(rec.id);
  const outputTail = tailOf(page.output, FOREGROUND_TEXT_BYTES);
  return {
    status: rec.status,
    exit_code: rec.exitCode ?? 0,
    report_channel: rec.reportChannel ?? "none",
    ...(rec.readOnlyTier ? { read_only_tier: rec.readOnlyTier } : {}),
    ...(rec.report ? { report: structuredClone(rec.report) } : {}),
    ...(rec.usage ? { usage: { ...rec.usage } } : {}),
    task,
    output_tail: outputTail,
  };
}

/** One task as ptc_task_list and ptc_task_wait list it. */
const listRowSchema = z.object({
  id: z.string(),
  status: statusSchema,
  agent: z.string(),
  depth: z.number().int(),
  label: z.string(),
  output_bytes: z.number().int().optional().describe("Absent until the task wrote output"),
  error_message: z.string().optional().describe(`Present only when the task had an error; cut at ${LIST_ERROR_CHARS} characters (ptc_task_output has all of it)`),
});

/** A row of a task list's text: its status, size (and usage, where asked) and error, as the structured row has them. */
function rowText(t: SnakeRecord, withUsage = false): string {
  const usage = withUsage && t.usage ? ` ${usageLine(t.usage)}` : "";
  return `${t.id} ${t.status} ${t.agent} depth=${t.depth} "${t.label}" ${t.output_bytes ?? 0}B${usage}${t.error_message ? ` error: ${t.error_message}` : ""}`;
}

export function ptcTaskListTool(host: TaskHost): Tool {
  const compact = z.object({ tasks: z.array(listRowSchema), count: z.number().int().describe("How many tasks match (tasks holds the most recent `limit`)") });
  const full = z.object({ tasks: z.array(taskRecordSchema), count: z.number().int() });
  type Out = { tasks: SnakeRecord[]; count: number };
  return defineBuiltinTool({
    name: "ptc_task_list",
    title: "List subagent tasks",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    description: `List subagent tasks, oldest first (the most recent \`limit\`, default ${DEFAULT_LIST_LIMIT}), optionally filtered by status.`,
    input: z.object({
      status: z.array(statusSchema).optional().describe('e.g. ["running", "queued"]'),
      limit: z.number().int().min(1).max(MAX_LIST_LIMIT).optional(),
    }),
    views: { compact, full },
    execute: (input) =>
      guarded(() => {
        const page = host.list({ ...(input.status ? { status: input.status } : {}), limit: input.limit ?? DEFAULT_LIST_LIMIT });
        return { tasks: page.records.map((r) => listRow(toSnake(r))), count: page.total };
      }),
    toModelOutput: (r: Out) => {
      const head = `${r.count} task${r.count === 1 ? "" : "s"}${r.count > r.tasks.length ? ` (showing the last ${r.tasks.length})` : ""}`;
      // The count survives any cut; rows (and the messages in them) are what gets cut.
      return pinnedText(head, r.tasks.map((t) => rowText(t)).join("\n"));
    },
    toDetails: (r: Out) => ({ tasks: r.tasks.map((t) => detailRecord(host, host.get(t.id)!)), count: r.count }),
  });
}

export function ptcTaskOutputTool(host: TaskHost): Tool {
  const compact = z.object({
    task_id: z.string(),
    status: statusSchema.describe("The task's current status"),
    output: z.string().describe("Output from since_bytes, tail-truncated at 50 KB / 2,000 lines"),
    output_bytes: z.number().int().describe("Total bytes of output so far: the next since_bytes"),
    output_preview: z.string().optional().describe("Head of the output (≤ 2,048 bytes), only for small outputs"),
    output_truncated: z.boolean(),
    output_full_path: z.string().optional().describe("The full log, when output was truncated"),
    report_channel: reportChannelSchema.optional(),
    read_only_tier: readOnlyTierSchema.optional(),
    report: reportSchema.optional(),
    usage: usageSchema.optional().describe("Host-measured; present on succeeded, failed and canceled tasks"),
  });
  // output_starts_mid_line: host-only (no view shows it), so the model text can mark a cut line.
  type Out = z.input<typeof compact> & { task: SnakeRecord; output_starts_mid_line?: boolean };
  return defineBuiltinTool({
    name: "ptc_task_output",
    title: "Read a task's output",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    description: "Read a task's output (from since_bytes, a UTF-8 byte offset such as the output_bytes of the previous read), its current status, report and usage.",
    input: z.object({ task_id: z.string().min(1), since_bytes: z.number().int().min(0).optional() }),
    views: { compact, full: compact.extend({ task: taskRecordSchema }) },
    execute: (input) =>
      guarded(() => {
        const page = host.output(input.task_id, input.since_bytes === undefined ? {} : { sinceBytes: input.since_bytes });
        const r = page.record;
        return {
          task_id: r.id,
          status: r.status,
          output: page.output,
          output_bytes: page.outputBytes,
          ...(page.preview !== undefined ? { output_preview: page.preview } : {}),
          output_truncated: page.truncated,
          ...(page.fullPath !== undefined ? { output_full_path: page.fullPath } : {}),
          ...(page.startsMidLine ? { output_starts_mid_line: true } : {}),
          ...(r.reportChannel ? { report_channel: r.reportChannel } : {}),
          ...(r.readOnlyTier ? { read_only_tier: r.readOnlyTier } : {}),
          ...(r.report ? { report: structuredClone(r.report) } : {}),
          ...(r.usage ? { usage: { ...r.usage } } : {}),
          task: toSnake(r),
        };
      }),
    toModelOutput: (r: Out) => {
      const lines = reportText(r.report, r.usage);
      if (r.output_truncated) {
        const midLine = r.output_starts_mid_line === true ? ", starting mid-line" : "";
        lines.push(`[output cut to its last ${Buffer.byteLength(r.output)} bytes of ${r.output_bytes}${midLine}; full log: ${r.output_full_path}]`);
      }
      // The newest output matters most: the model text keeps the tail of the page, not its head.
      const shown = tailOf(r.output, OUTPUT_TEXT_BYTES);
      if (shown !== r.output) lines.push(`[the text below shows the last ${OUTPUT_TEXT_BYTES} bytes of this page; structuredContent.output has all of it]`);
      if (shown !== "") lines.push("", r.output_starts_mid_line === true && shown === r.output ? `…${shown}` : shown);
      return taskText(r.task, r.usage, lines);
    },
    toDetails: (r: Out) => ({ task: detailRecord(host, host.get(r.task_id)!), outputBytes: r.output_bytes, outputTruncated: r.output_truncated }),
  });
}

export function ptcTaskStopTool(host: TaskHost): Tool {
  const compact = z.object({
    task_id: z.string(),
    status: statusSchema.describe("Status after the stop (canceled)"),
    from_status: statusSchema,
    stop_reason: z.string().optional(),
  });
  type Out = z.input<typeof compact> & { task: SnakeRecord };
  return defineBuiltinTool({
    name: "ptc_task_stop",
    title: "Stop a task",
    // The task's unfinished work is lost; stopping a task that has ended changes nothing.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    description: "Stop a queued or running task (SIGTERM, then SIGKILL after a grace period); the tasks it spawned are stopped too.",
    input: z.object({ task_id: z.string().min(1), reason: z.string().optional() }),
    views: { compact, full: compact.extend({ task: taskRecordSchema }) },
    execute: (input, ctx: ToolContext) =>
      guarded(async () => {
        const { record, fromStatus } = await host.stop(input.task_id, input.reason, ctx.trace);
        return {
          task_id: record.id,
          status: record.status,
          from_status: fromStatus,
          ...(record.stopReason !== undefined ? { stop_reason: record.stopReason } : {}),
          task: toSnake(record),
        };
      }),
    toModelOutput: (r: Out) =>
      pinnedText([`Stopped task ${r.task_id} (agent ${r.task.agent}): ${r.from_status} → ${r.status}`, usageLine(r.task.usage)].join("\n"), r.stop_reason ? `stop reason: ${r.stop_reason}` : ""),
    toDetails: (r: Out) => ({ task: detailRecord(host, host.get(r.task_id)!), fromStatus: r.from_status }),
  });
}

/** A wait with no program deadline over it (a direct call) and no timeout_ms of its own ends after this long. */
export const DEFAULT_WAIT_MS = 30_000;
export const MAX_WAIT_MS = 600_000;
/**
 * A wait returns this long before the program's deadline (or halfway there, with less than twice
 * this left), so the program still has time to read and print what it waited for.
 */
export const DEADLINE_MARGIN_MS = 1_000;

/** "2 succeeded, 1 failed": how many of `rows` are in each status, in the order statuses first appear. */
function tally(rows: readonly SnakeRecord[]): string {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status}`).join(", ");
}

export function ptcTaskWaitTool(host: TaskHost): Tool {
  const compact = z.object({
    tasks: z.array(listRowSchema).describe("The tasks waited for, in the order asked, as ptc_task_list rows"),
    done: z.array(z.string()).describe("Ids that reached a terminal status (succeeded, failed, canceled, lost)"),
    pending: z.array(z.string()).describe("Ids still queued, running or stopping: pass them as task_ids to wait again"),
    timed_out: z.boolean().describe("The condition did not hold by timeout_ms, or shortly before the program's deadline"),
  });
  const full = compact.extend({ tasks: z.array(taskRecordSchema) });
  // waited_ms, ended_by: host-only (no view shows them), for the model text.
  type Out = { tasks: SnakeRecord[]; done: string[]; pending: string[]; timed_out: boolean; waited_ms: number; ended_by?: "timeout_ms" | "deadline" };
  return defineBuiltinTool({
    name: "ptc_task_wait",
    title: "Wait for tasks",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    description:
      'Wait for background tasks in one call instead of polling: returns as soon as all (until "all", the default) or any (until "any") of task_ids have ended — default: the background tasks this program spawned — or at timeout_ms, or shortly before the program\'s deadline (timed_out: true; the run does not fail). tasks are ptc_task_list rows; done and pending list ids. A waiting task holds no running slot, so the tasks it waits for can run.',
    input: z.object({
      task_ids: z.array(z.string().min(1)).min(1).max(MAX_LIST_LIMIT).optional().describe("Default: the background tasks this program spawned"),
      until: z.enum(["all", "any"]).optional().describe('"all" (default): every task has ended; "any": at least one has'),
      timeout_ms: z
        .number()
        .int()
        .min(0)
        .max(MAX_WAIT_MS)
        .optional()
        .describe(`Return by then even if the condition does not hold (default: shortly before the program's deadline; outside a program ${DEFAULT_WAIT_MS} ms)`),
    }),
    views: { compact, full },
    execute: (input, ctx: ToolContext) =>
      guarded(async () => {
        const ids = input.task_ids ?? defaultWaitIds(host, ctx);
        const started = Date.now();
        let endAt = started + (input.timeout_ms ?? (ctx.deadline === undefined ? DEFAULT_WAIT_MS : MAX_WAIT_MS));
        let endedBy: Out["ended_by"] = "timeout_ms";
        if (ctx.deadline !== undefined) {
          const cap = ctx.deadline - Math.min(DEADLINE_MARGIN_MS, Math.max(0, ctx.deadline - started) / 2);
          if (cap < endAt) [endAt, endedBy] = [cap, "deadline"];
        }
        const { records, outcome } = await host.waitFor(ids, {
          until: input.until ?? "all",
          endAt,
          signal: ctx.signal,
          ...(ctx.taskId !== undefined ? { waiterTaskId: ctx.taskId } : {}),
          // A client listening for progress hears of each task as it ends.
          ...(ctx.progress ? { onEnd: (r: TaskRecord) => ctx.progress!(`task ${r.id} (${r.agent}, "${r.label}"): ${r.status}`) } : {}),
        });
        const tasks = records.map((r) => listRow(toSnake(r)));
        const pending = tasks.filter((t) => !isTerminal(t.status)).map((t) => t.id);
        if (outcome === "aborted") {
          throw new ToolError(
            "tool_aborted",
            `ptc_task_wait was cancelled after ${Date.now() - started} ms, with ${pending.length} of ${tasks.length} tasks pending (the program ended or was stopped)`,
          );
        }
        const out: Out = { tasks, done: tasks.filter((t) => isTerminal(t.status)).map((t) => t.id), pending, timed_out: outcome === "timed_out", waited_ms: Date.now() - started };
        if (out.timed_out) out.ended_by = endedBy;
        return out;
      }),
    toModelOutput: (r: Out) => {
      const n = r.tasks.length;
      const ended = r.tasks.filter((t) => isTerminal(t.status));
      const waiting = r.tasks.filter((t) => !isTerminal(t.status));
      let head = `${ended.length} of ${n} task${n === 1 ? "" : "s"} ended${ended.length ? ` (${tally(ended)})` : ""}`;
      if (waiting.length) head += `; ${waiting.length} pending (${tally(waiting)})`;
      if (r.ended_by === "timeout_ms") head = `Timed out after ${r.waited_ms} ms: ${head}. Wait again for the pending ids, or stop them with ptc_task_stop.`;
      else if (r.ended_by === "deadline") head = `Stopped waiting after ${r.waited_ms} ms, shortly before the program's deadline: ${head}. Print what you have now.`;
      else head += ".";
      // The summary survives any cut; rows (and the messages in them) are what gets cut.
      return pinnedText(head, r.tasks.map((t) => rowText(t, true)).join("\n"));
    },
    toDetails: (r: Out) => ({ tasks: r.tasks.map((t) => detailRecord(host, host.get(t.id)!)), done: r.done, pending: r.pending, timedOut: r.timed_out }),
  });
}

/** ptc_task_wait's default: the background tasks the calling program spawned. */
function defaultWaitIds(host: TaskHost, ctx: ToolContext): string[] {
  const spawned = host.tasksOfRun(ctx.runId, ctx.taskId);
  if (spawned === undefined) {
    throw new TaskError(
      "invalid_argument",
      'ptc_task_wait needs "task_ids" here: it was not called from a program, so there are no tasks "this program spawned" to wait for; pass the task_id values ptc_subagent returned (ptc_task_list lists them)',
    );
  }
  if (spawned.length === 0) {
    throw new TaskError(
      "invalid_argument",
      'this program has spawned no background tasks, so ptc_task_wait has nothing to wait for; spawn with ptc_subagent({ …, background: true }) first, or pass "task_ids" (ptc_task_list lists the tasks of earlier programs)',
    );
  }
  return spawned;
}

/** The five task tools over one host. */
export function ptcTools(host: TaskHost): Tool[] {
  if (!(host instanceof TaskHost)) throw new TypeError(`ptcTools: "host" must be a TaskHost, received ${host === null ? "null" : typeof host}`);
  return [ptcSubagentTool(host), ptcTaskListTool(host), ptcTaskOutputTool(host), ptcTaskStopTool(host), ptcTaskWaitTool(host)];
}

export { codemodeScriptRunner, type ProgramHost, type ScriptRunnerOptions } from "./script-runner.js";
export { childToolProvider, type ChildToolOptions } from "./child-tools.js";
