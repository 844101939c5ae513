// The script driver's runner: runs a script agent's program in the codemode runtime with only the
// tools its definition allows, streaming its text() output into the task's log in batches.
import type { ScriptRunner } from "../tasks/index.js";
import type { Tool } from "../tools/index.js";
import type { TraceScope } from "../tracing.js";
import { WORKSPACE_READ_ONLY_TOOLS } from "../workspace/index.js";
import { toolListed } from "./child-tools.js";

/** What a program run takes from its caller: a script agent's run, ptc_run_code's run. */
export interface ProgramRunOptions {
  signal?: AbortSignal;
  session?: string;
  depth?: number;
  taskId?: string;
  globals?: Record<string, unknown>;
  allowTools?: (path: string, tool: Tool) => boolean;
  ephemeralSession?: boolean;
  onOutput?: (chunks: readonly string[]) => void;
  trace?: TraceScope;
}

/** What a caller reads of a program run's result. */
export interface ProgramResult {
  content: Array<{ type: "text"; text: string }>;
  structuredContent: { status: "ok" | "error" | "interrupted"; error?: { kind: string; message: string; line?: number; column?: number; hint?: string } };
  details: { warnings: string[] };
}

/**
 * The narrow view of the runtime that runs programs for others (Codemode.runInternal matches it):
 * a script runner takes it, and so does ptc_run_code (with the options and result it needs), so
 * neither depends on the whole runtime.
 */
export interface ProgramHost<O extends ProgramRunOptions = ProgramRunOptions, R extends ProgramResult = ProgramResult> {
  runInternal(code: string, options: O): Promise<R>;
}

export interface ScriptRunnerOptions {
  /**
   * Full paths (or ids) of the tools that never change anything; a read-only agent reaches only
   * these (and task reads). Default: the workspace's read-only tools.
   */
  readOnlyTools?: readonly string[];
}

/** Tools every script child may use to look at (and wait for) tasks and at the tools there are. */
const TASK_READ_TOOLS = ["ptc_task_list", "ptc_task_output", "ptc_task_wait", "tool_info", "tool_search"];
/** Spawning and stopping change the world; a read-only child could escape its tier through a writable subagent. */
const TASK_WRITE_TOOLS = ["ptc_subagent", "ptc_task_stop"];

/**
 * A script's text() output reaches its task log in batches: what the engine flushed (before each
 * tool call, whenever the program waits) is held for up to this long, or this many bytes, so a
 * program printing between thousands of fast calls costs the log a write per batch, not per call.
 */
const LOG_BATCH_MS = 100;
const LOG_BATCH_CHARS = 64 * 1024;

/**
 * The script driver's runner over a codemode runtime: the agent's program runs in a sandbox run of
 * its own, with the global `task` and a store that starts empty and ends with the run (an
 * ephemeral session named after the task). It sees the runtime's task-reading tools, the task
 * writers unless it is read-only, and of the other tools only those its definition lists — for a
 * read-only agent, only read-only ones. That is what makes the script tier `enforced`. The
 * agent's list names full tool paths (or ids): an agent allowed `read_file` does not get an
 * upstream server's `fs.read_file`, and an upstream tool is read-only only when declared so.
 */
export function codemodeScriptRunner(host: ProgramHost, options: ScriptRunnerOptions = {}): ScriptRunner {
  if (host === null || typeof host !== "object" || typeof host.runInternal !== "function") {
    throw new TypeError(`codemodeScriptRunner: "host" must be a Codemode instance (with runInternal), received ${host === null ? "null" : typeof host}`);
  }
  const readOnly = new Set(options.readOnlyTools ?? WORKSPACE_READ_ONLY_TOOLS);
  return async (code, o) => {
    const allowed = new Set(o.agent.tools ?? []);
    const allowTools = (path: string, tool: Tool): boolean => {
      // The runtime's own tools have no namespace: an upstream tool of the same name is not one.
      if (tool.namespace === undefined && TASK_READ_TOOLS.includes(tool.name)) return true;
      if (tool.namespace === undefined && TASK_WRITE_TOOLS.includes(tool.name)) return !o.readOnly;
      if (!allowed.has(path) && !allowed.has(tool.id)) return false;
      return !o.readOnly || toolListed(readOnly, tool);
    };
    // The program's text() output streams into the log as it is flushed; pieces are joined by
    // newlines, as in the run's own content.
    let pending = "";
    let pieces = 0;
    let timer: NodeJS.Timeout | undefined;
    const drain = (): void => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (pending !== "") o.onText?.(pending);
      pending = "";
    };
    const onOutput = o.onText
      ? (chunks: readonly string[]): void => {
          for (const chunk of chunks) pending += pieces++ === 0 ? chunk : `\n${chunk}`;
          if (pending.length >= LOG_BATCH_CHARS) drain();
          else if (timer === undefined && pending !== "") timer = setTimeout(drain, LOG_BATCH_MS).unref();
        }
      : undefined;
    let run: Awaited<ReturnType<ProgramHost["runInternal"]>>;
    try {
      run = await host.runInternal(code, {
        signal: o.signal,
        session: `task-${o.taskId}`,
        // One run per task: its store is its own and ends with it (no file per task on the data dir).
        ephemeralSession: true,
        depth: o.depth,
        taskId: o.taskId,
        globals: { task: o.task },
        allowTools,
        ...(onOutput ? { onOutput } : {}),
        ...(o.trace ? { trace: o.trace } : {}),
      });
    } finally {
      drain();
    }
    const e = run.structuredContent.error;
    const ok = run.structuredContent.status === "ok";
    // Nothing printed: the run's own content is the output (a rendered return value, a failure
    // with its receipt). Otherwise the log has the text already, and gets the failure and the
    // warnings after it.
    let output: string;
    if (pieces === 0) output = run.content.map((c) => c.text).join("\n");
    else {
      const after: string[] = [];
      if (e) after.push(`Script failed (${e.kind}): ${e.message}${e.line !== undefined ? ` (line ${e.line}, column ${e.column ?? 1})` : ""}${e.hint ? `\n${e.hint}` : ""}`);
      if (run.details.warnings.length > 0) after.push(`Warnings:\n${run.details.warnings.map((w) => `- ${w}`).join("\n")}`);
      output = after.length > 0 ? `\n\n${after.join("\n\n")}` : "";
    }
    if (ok) return { output, ok: true };
    return { output, ok: false, error: e ? `${e.kind}: ${e.message}` : "the program failed" };
  };
}
