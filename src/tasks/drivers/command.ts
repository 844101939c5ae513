// The `command` driver: any CLI agent as a child process, in its own process group, with the task on
// argv or stdin; stdout is its output, parsed by the agent's protocol (text, jsonl,
// claude-stream-json). Stop is SIGTERM, then SIGKILL after the kill grace. docs/command-protocol.md.
import type { ChildProcess } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { constants } from "node:os";
import { StringDecoder } from "node:string_decoder";
import { childProcess } from "../../node-builtins.js";
import type { DriverEvent } from "../agents.js";
import { TaskError } from "../errors.js";
import { LineSplitter } from "../../line-splitter.js";
import { formatBytes } from "../../text.js";
import { pidNamespace, procStartTime, signalTaskProcesses } from "../processes.js";
import type { TaskProcessGroup } from "../types.js";
import { ClaudeStreamAdapter } from "./claude-stream.js";
import { jsonlLineToEvents } from "./jsonl.js";
import type { Driver, DriverResult } from "./types.js";
import { traceEnvironment } from "../../tracing.js";

const STDERR_TAIL = 2000;
/** After SIGKILL, how long the host waits for stdout to close before it stops reading it. */
const STREAM_CLOSE_GRACE_MS = 1000;

/** Replaces `{task}` in each argv element; when no element has it, the task goes to stdin. */
export function buildArgv(template: readonly string[], task: string): { argv: string[]; viaStdin: boolean } {
  const viaArgv = template.some((a) => a.includes("{task}"));
  return { argv: template.map((a) => a.replaceAll("{task}", task)), viaStdin: !viaArgv };
}

/**
 * Where a template puts the task at the start of its own argument with no `--` before it, the
 * command's option parser reads a task that starts with "-" as an option
 * (`claude -p {task}` with the task `--dangerously-skip-permissions`). Such a task is refused;
 * a template that ends options with `--` before `{task}` takes any task.
 */
export function checkTaskArgv(agent: { name: string; source: string; command?: readonly string[] }, task: string): void {
  const template = agent.command ?? [];
  if (!/^\s*-/.test(task)) return;
  const end = template.indexOf("--");
  const exposed = template.findIndex((a, i) => i > 0 && a.startsWith("{task}") && (end === -1 || i < end));
  if (exposed === -1) return;
  throw new TaskError(
    "invalid_argument",
    `"task" starts with "-", and agent "${agent.name}" passes the task as argument ${exposed} of its command with no "--" before it, where the command would read it as an option; start the task with a word instead (the agent's author can put "--" before "{task}" in the "command" of ${agent.source})`,
  );
}

/**
 * Runs any CLI agent as a child process in its own process group. The group is what a stop
 * reaches (SIGTERM, then SIGKILL after the grace period), and it is stopped too when the command
 * itself exits: a daemon it left behind, or a grandchild still holding its stdout, ends with the
 * task instead of keeping it running forever. Processes that left the group (`setsid`) are found
 * by the task id in their environment.
 */
export const commandDriver: Driver = ({ task, agent, signal, emit, killGraceMs, cwd, maxLineBytes, onProcess, trace }) =>
  new Promise<DriverResult>((resolve) => {
    const template = agent.command ?? [];
    const { argv, viaStdin } = buildArgv(template, task.task);
    const useStdin = agent.stdin ?? viaStdin;
    const protocol = agent.protocol ?? "text";
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...agent.env,
      // The task's trace context (W3C), so an agent that traces joins the host's trace.
      ...traceEnvironment(trace),
      CODEMODE_TASK_ID: task.id,
      CODEMODE_TASK_DEPTH: String(task.depth),
    };
    // A command child cannot be confined by the host: it is told, and the tier says "advisory".
    if (agent.readOnly) env.CODEMODE_READ_ONLY = "1";
    if (task.model) env.CODEMODE_MODEL = task.model;

    let settled = false;
    const settle = (result: DriverResult): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      resolve(result);
    };

    let child: ChildProcess;
    try {
      child = childProcess().spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    } catch (err) {
      settle({ exitCode: 127, error: startError(argv[0]!, agent.source, cwd, err) });
      return;
    }

    const group: TaskProcessGroup | undefined =
      child.pid === undefined ? undefined : { pgid: child.pid, startTime: procStartTime(child.pid) ?? `clock:${Date.now()}`, ...(pidNamespace() ? { pidNamespace: pidNamespace()! } : {}) };
    if (group) onProcess?.(group);

    let stderr = "";
    let leaderExited = false;
    let exit: { code: number | null; sig: NodeJS.Signals | null } | undefined;
    let stdoutClosed = false;
    let terminating = false;
    let killTimer: NodeJS.Timeout | undefined;
    let closeTimer: NodeJS.Timeout | undefined;

    const signalAll = (sig: NodeJS.Signals): number => signalTaskProcesses(task.id, group, sig, { leaderJustExited: leaderExited });
    const closeStreams = (): void => {
      // Something outside the group and without the task's id still holds stdout: stop reading it.
      child.stdout?.destroy();
      child.stderr?.destroy();
    };
    /** SIGTERM to everything of the task now, SIGKILL to what is left after the grace period. */
    const terminate = (): void => {
      if (terminating) return;
      terminating = true;
      const found = signalAll("SIGTERM");
      if (found === 0 && leaderExited) {
        // Nothing was left behind; a stdout still open belongs to no process we can see.
        closeTimer = setTimeout(closeStreams, STREAM_CLOSE_GRACE_MS);
        closeTimer.unref();
        return;
      }
      // Not cleared when the task ends: a straggler that ignores SIGTERM still gets SIGKILL.
      killTimer = setTimeout(() => {
        signalAll("SIGKILL");
        closeTimer = setTimeout(closeStreams, STREAM_CLOSE_GRACE_MS);
        closeTimer.unref();
      }, killGraceMs);
      killTimer.unref();
    };
    const onAbort = (): void => terminate();
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });

    const finishIfDone = (): void => {
      if (!exit || !stdoutClosed) return;
      if (closeTimer) clearTimeout(closeTimer);
      const { code, sig } = exit;
      const exitCode = code ?? (sig ? 128 + signalNumber(sig) : 1);
      if (exitCode === 0) {
        settle({ exitCode });
        return;
      }
      const tail = stderr.trim();
      settle({
        exitCode,
        error: sig ? `the command was killed by ${sig}` : `the command exited with code ${exitCode}${tail ? `: ${tail}` : ""}`,
      });
    };

    child.on("error", (err) => {
      // A command that could not start never exits: answer now.
      if (child.pid === undefined) {
        closeStreams();
        settle({ exitCode: 127, error: startError(argv[0]!, agent.source, cwd, err) });
      }
    });
    child.on("exit", (code, sig) => {
      leaderExited = true;
      exit = { code, sig };
      // Whatever the command left running ends with it.
      terminate();
      finishIfDone();
    });
    child.stdin!.on("error", () => {
      // A child that never reads stdin closes it early; that is not a failure of the task.
    });
    if (useStdin) child.stdin!.end(task.task);
    else child.stdin!.end();

    const stderrDecoder = new StringDecoder("utf8");
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr = (stderr + stderrDecoder.write(chunk)).slice(-STDERR_TAIL);
    });
    child.stderr!.on("error", () => undefined);

    let flush: () => void;
    if (protocol === "text") {
      const decoder = new StringDecoder("utf8");
      child.stdout!.on("data", (chunk: Buffer) => {
        const text = decoder.write(chunk);
        if (text) emit({ type: "text", text });
      });
      flush = () => {
        const rest = decoder.end();
        if (rest) emit({ type: "text", text: rest });
      };
    } else {
      const adapter = protocol === "claude-stream-json" ? new ClaudeStreamAdapter() : undefined;
      const toEvents = (line: string): DriverEvent[] => (adapter ? adapter.line(line) : jsonlLineToEvents(line));
      let lineNo = 0;
      const lines = new LineSplitter({
        maxLineBytes,
        onLine: (line) => {
          lineNo++;
          for (const ev of toEvents(line)) emit(ev);
        },
        onOverlong: ({ head, bytes }) => {
          lineNo++;
          // A plain jsonl line is output text: its start is kept. A stream-json line is an event
          // that can no longer be read; only the note says it was there.
          // (A StringDecoder keeps back a character the cut split.)
          if (protocol === "jsonl") emit({ type: "text", text: new StringDecoder("utf8").write(head) + "\n" });
          emit({ type: "text", text: `[stdout line ${lineNo} cut: it ran to ${formatBytes(bytes)} without a newline; the host keeps at most ${formatBytes(maxLineBytes)} of one line]\n` });
          emit({
            type: "error",
            message: `the command printed a ${formatBytes(bytes)} line on stdout (line ${lineNo}), over the ${formatBytes(maxLineBytes)} line limit of protocol "${protocol}"; print one event per line, each under the limit`,
          });
        },
      });
      child.stdout!.on("data", (chunk: Buffer) => lines.push(chunk));
      flush = () => lines.end();
    }
    child.stdout!.on("error", () => undefined);
    child.stdout!.on("close", () => {
      flush();
      stdoutClosed = true;
      finishIfDone();
    });
  });

function startError(cmd: string, source: string, cwd: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  // spawn reports a missing working directory as ENOENT too: name the right culprit.
  if (code === "ENOENT" || code === "ENOTDIR" || code === "EACCES") {
    let cwdProblem: string | undefined;
    if (!existsSync(cwd)) cwdProblem = "does not exist";
    else if (!statSync(cwd).isDirectory()) cwdProblem = "is not a directory";
    if (cwdProblem) return `could not start command "${cmd}": its working directory "${cwd}" ${cwdProblem}; pass an existing directory as "cwd"`;
  }
  return `could not start command "${cmd}" (${code ?? (err as Error).message}); check the "command" field of agent ${source} and that the program is installed and on PATH`;
}

function signalNumber(sig: NodeJS.Signals): number {
  return constants.signals[sig] ?? 0;
}
