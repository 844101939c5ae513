// The `script` driver: the agent is a codemode program, run by the ScriptRunner the runtime plugs in.
import type { AgentDefinition } from "../agents.js";
import type { Driver } from "./types.js";
import type { TraceScope } from "../../tracing.js";
import { formatBytes, formatBytesOver, messageOf } from "../../text.js";
import { readRegularFile, UnsafeFileError } from "../../safe-fs.js";

/** The largest program a script agent's `script:` file may hold (docs/limits.md). */
export const SCRIPT_MAX_BYTES = 4 * 1024 * 1024;

/**
 * A script agent's program: a regular file (a link is followed to one) of at most
 * SCRIPT_MAX_BYTES, read without ever waiting on a FIFO or reading a device; why not, in words.
 */
function readScript(path: string): string {
  let bytes: Buffer | undefined;
  try {
    bytes = readRegularFile(path, { maxBytes: SCRIPT_MAX_BYTES, follow: true });
  } catch (err) {
    if (!(err instanceof UnsafeFileError)) throw err;
    if (err.reason === "not_regular_file") throw new Error(`it is ${err.found}, not a regular file`);
    if (err.reason === "too_large") {
      if (typeof err.found !== "number") throw new Error(`it grew while it was read, past the ${formatBytes(SCRIPT_MAX_BYTES)} a script agent's program may be`);
      const [size, max] = formatBytesOver(err.found, SCRIPT_MAX_BYTES);
      throw new Error(`it is ${size}, larger than the ${max} a script agent's program may be`);
    }
    throw err;
  }
  if (bytes === undefined) throw new Error("no such file");
  return bytes.toString("utf8");
}

/**
 * Runs an agent's codemode program in its own sandbox. The host does not know the engine; the
 * runtime (createCodemode) injects a runner that does.
 */
export type ScriptRunner = (
  code: string,
  options: {
    task: string;
    agent: AgentDefinition;
    signal: AbortSignal;
    depth: number;
    taskId: string;
    cwd: string;
    readOnly: boolean;
    /**
     * Output for the task's log while the program runs (a runner that has none gives it all in
     * `output` at the end): polling ptc_task_output or `codemode task --follow` sees progress.
     */
    onText?: (text: string) => void;
    /** Where the program's run span goes (the task's run span). */
    trace?: TraceScope;
  },
) => Promise<{
  /** What the log should get at the end that was not passed to onText. */
  output: string;
  ok: boolean;
  error?: string;
}>;

export function scriptDriver(runner: ScriptRunner | undefined): Driver {
  return async ({ task, agent, signal, emit, cwd, trace }) => {
    if (!runner) {
      return {
        exitCode: 1,
        error: `agent "${agent.name}" uses the script driver but this task host has no script runner; create it through createCodemode, or pass the scriptRunner option to TaskHost`,
      };
    }
    let code: string;
    try {
      code = agent.scriptCode ?? readScript(agent.script!);
    } catch (err) {
      return { exitCode: 1, error: `cannot read the program of agent "${agent.name}" (${agent.script}): ${messageOf(err)}; fix the "script" field of ${agent.source}` };
    }
    emit({ type: "turn" });
    try {
      const onText = (text: string): void => emit({ type: "text", text });
      const res = await runner(code, { task: task.task, agent, signal, depth: task.depth, taskId: task.id, cwd, readOnly: agent.readOnly, onText, ...(trace ? { trace } : {}) });
      if (res.output.length > 0) emit({ type: "text", text: res.output });
      return res.ok ? { exitCode: 0 } : { exitCode: 1, error: res.error ?? "the program failed" };
    } catch (err) {
      return { exitCode: 1, error: messageOf(err) };
    }
  };
}
