import { spawn } from "node:child_process";
import { constants } from "node:os";
import { createInterface } from "node:readline";
import { StringDecoder } from "node:string_decoder";
import type { DriverEvent } from "../agents.js";
import { ClaudeStreamAdapter } from "./claude-stream.js";
import { jsonlLineToEvents } from "./jsonl.js";
import type { Driver, DriverResult } from "./types.js";

const STDERR_TAIL = 2000;

/** Replaces `{task}` in each argv element; when no element has it, the task goes to stdin. */
export function buildArgv(template: readonly string[], task: string): { argv: string[]; viaStdin: boolean } {
  const viaArgv = template.some((a) => a.includes("{task}"));
  return { argv: template.map((a) => a.replaceAll("{task}", task)), viaStdin: !viaArgv };
}

/**
 * Runs any CLI agent as a child process in its own process group, so a stop reaches the CLI's own
 * children too: SIGTERM to the group, then SIGKILL after the grace period.
 */
export const commandDriver: Driver = ({ task, agent, signal, emit, killGraceMs, cwd }) =>
  new Promise<DriverResult>((resolve) => {
    const template = agent.command ?? [];
    const { argv, viaStdin } = buildArgv(template, task.task);
    const useStdin = agent.stdin ?? viaStdin;
    const protocol = agent.protocol ?? "text";
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...agent.env,
      CODEMODE_TASK_ID: task.id,
      CODEMODE_TASK_DEPTH: String(task.depth),
    };
    // A command child cannot be confined by the host: it is told, and the tier says "advisory".
    if (agent.readOnly) env.CODEMODE_READ_ONLY = "1";
    if (task.model) env.CODEMODE_MODEL = task.model;

    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(argv[0]!, argv.slice(1), { cwd, env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    } catch (err) {
      resolve({ exitCode: 127, error: startError(argv[0]!, agent.source, err) });
      return;
    }

    let stderr = "";
    let spawnError: string | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const signalGroup = (sig: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // The group is already gone.
      }
    };
    const onAbort = (): void => {
      signalGroup("SIGTERM");
      killTimer = setTimeout(() => signalGroup("SIGKILL"), killGraceMs);
      killTimer.unref();
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });

    child.on("error", (err) => {
      spawnError = startError(argv[0]!, agent.source, err);
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

    let stdoutDone: Promise<void>;
    if (protocol === "text") {
      const decoder = new StringDecoder("utf8");
      stdoutDone = new Promise((done) => {
        child.stdout!.on("data", (chunk: Buffer) => {
          const text = decoder.write(chunk);
          if (text) emit({ type: "text", text });
        });
        child.stdout!.on("end", () => {
          const rest = decoder.end();
          if (rest) emit({ type: "text", text: rest });
          done();
        });
        child.stdout!.on("error", () => done());
      });
    } else {
      const adapter = protocol === "claude-stream-json" ? new ClaudeStreamAdapter() : undefined;
      const toEvents = (line: string): DriverEvent[] => (adapter ? adapter.line(line) : jsonlLineToEvents(line));
      const rl = createInterface({ input: child.stdout!, crlfDelay: Infinity });
      rl.on("line", (line) => {
        for (const ev of toEvents(line)) emit(ev);
      });
      stdoutDone = new Promise((done) => rl.on("close", () => done()));
    }

    child.on("close", (code, sig) => {
      void stdoutDone.then(() => {
        signal.removeEventListener("abort", onAbort);
        if (killTimer) clearTimeout(killTimer);
        if (spawnError) {
          resolve({ exitCode: 127, error: spawnError });
          return;
        }
        const exitCode = code ?? (sig ? 128 + signalNumber(sig) : 1);
        if (exitCode === 0) {
          resolve({ exitCode });
          return;
        }
        const tail = stderr.trim();
        resolve({
          exitCode,
          error: sig ? `the command was killed by ${sig}` : `the command exited with code ${exitCode}${tail ? `: ${tail}` : ""}`,
        });
      });
    });
  });

function startError(cmd: string, source: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  return `could not start command "${cmd}" (${code ?? (err as Error).message}); check the "command" field of agent ${source} and that the program is installed and on PATH`;
}

function signalNumber(sig: NodeJS.Signals): number {
  return constants.signals[sig] ?? 0;
}
