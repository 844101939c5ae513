// `codemode run <file|->`: run one program with the configured tools; print `content` (or, with
// --json, all three channels). Exit 0 when the program succeeded, 1 when it failed, 2 for usage.
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { commandHelp, CONFIG_FLAG, HELP_FLAG, parseArgs, parseDuration, usageFlags, UsageError, type FlagTable } from "./args.js";
import { loadConfig } from "./config.js";
import { EXIT_OK, useColor, write, type Io } from "./io.js";
import { SESSION_NAME } from "../codemode/sessions.js";
import { openRuntime } from "./runtime.js";
import { canAsk, cliResumeHint, terminalAsker } from "./approvals.js";
import { reportRun } from "./report-run.js";
import { openProgress } from "./open-progress.js";
import { progressMode } from "./progress-mode.js";
import { onStopSignals } from "./stop-signals.js";
import { readRegularFile, UnsafeFileError } from "../safe-fs.js";
import { formatBytes } from "../text.js";

/** The largest program `codemode run` reads (a file or stdin): far past any program, short of a file read whole by mistake. */
const PROGRAM_MAX_BYTES = 16 * 1024 * 1024;

/** A program piped in, read up to PROGRAM_MAX_BYTES (a stream without end would otherwise grow the host without bound). */
async function programFromStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stdin) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    bytes += buffer.length;
    if (bytes > PROGRAM_MAX_BYTES) throw new UsageError(`codemode run: the program on stdin is over ${formatBytes(PROGRAM_MAX_BYTES)}; a program is code, not data — read data with tools`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

const RUN_FLAGS = {
  json: { type: "boolean", short: "j", description: "print all three channels as JSON: content, structuredContent, details" },
  timeout: { type: "string", value: "<duration>", short: "t", description: "wall-clock deadline: 5000, 5000ms, 30s or 2m (default 30s, at most 600s)" },
  session: { type: "string", value: "<name>", short: "s", description: "share store()/load() values with earlier runs of this session (kept in the data dir, <dataDir>/sessions/<name>.json)" },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const RUN_HELP = commandHelp({
  usage: `codemode run <file|-> ${usageFlags(RUN_FLAGS)}`,
  about: `Runs a codemode program (JavaScript; top-level await; tools.* bindings) with the tools configured
in ./codemode.json and prints what the program printed with text() (its "content").
<file|-> is the program file, or - to read it from stdin.`,
  flags: RUN_FLAGS,
  notes: `While subagents run and stderr is a terminal, their progress is shown there (one line per task:
status, label, output bytes, time, usage). CODEMODE_PROGRESS=0 turns it off; CODEMODE_PROGRESS=1
prints a line per status change even when stderr is not a terminal. FORCE_COLOR and NO_COLOR
are honoured.

A call that needs a person's approval (docs/approvals.md) is asked on the terminal (y/n/always)
when stdin and stderr are one; otherwise the program stops and its continuation is printed, for
codemode resume.

Ctrl-C, SIGTERM or SIGHUP aborts the program, stops its subagents and prints what it had; a second
one exits at once.

Exit codes: 0 the program succeeded, 1 it failed (the failure is printed on stderr; also after
Ctrl-C), 2 usage error, 3 it stopped for an approval (resume it with the printed codemode resume
command), 143 / 129 it was stopped by SIGTERM / SIGHUP.`,
});

export async function runCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode run", argv, RUN_FLAGS);
  if (flags.help) {
    await write(io.stdout, RUN_HELP);
    return EXIT_OK;
  }
  if (positionals.length === 0) throw new UsageError(`codemode run: missing the program: give a file path, or - to read it from stdin`);
  if (positionals.length > 1) throw new UsageError(`codemode run: expected one program file, got ${positionals.length}: ${positionals.join(" ")}`);
  const timeoutMs = typeof flags.timeout === "string" ? parseDuration("codemode run", "timeout", flags.timeout) : undefined;
  const session = flags.session as string | undefined;
  if (session !== undefined && !SESSION_NAME.test(session)) {
    throw new UsageError(`codemode run: --session must be 1–200 letters, digits, "_", ".", ":", "@" or "-", got "${session}"`);
  }

  const source = positionals[0]!;
  let code: string;
  if (source === "-") code = await programFromStdin(io.stdin);
  else {
    const file = resolve(io.cwd, source);
    let isFile = false;
    try {
      isFile = statSync(file).isFile();
    } catch {
      throw new UsageError(`codemode run: cannot read the program "${source}": no such file`);
    }
    if (!isFile) throw new UsageError(`codemode run: the program "${source}" is not a file`);
    let bytes: Buffer | undefined;
    try {
      bytes = readRegularFile(file, { maxBytes: PROGRAM_MAX_BYTES, follow: true });
    } catch (error) {
      if (error instanceof UnsafeFileError && error.reason === "too_large")
        throw new UsageError(`codemode run: the program "${source}" is over ${formatBytes(PROGRAM_MAX_BYTES)}; a program is code, not data — read data with tools`);
      throw new UsageError(`codemode run: cannot read the program "${source}": ${(error as Error).message}`);
    }
    if (bytes === undefined) throw new UsageError(`codemode run: cannot read the program "${source}": no such file`);
    code = bytes.toString("utf8");
  }
  if (code.trim() === "") throw new UsageError(`codemode run: the program ${source === "-" ? "on stdin" : `"${source}"`} is empty`);

  const config = loadConfig(io.cwd, flags.config as string | undefined);
  const runtime = await openRuntime(config, io.cwd);
  // Ctrl-C, SIGTERM or SIGHUP aborts the program (pending tool calls are cancelled, its subagents
  // stopped when the runtime closes) and still prints what it had; a second signal exits at once.
  // Listened for until the runtime has closed, so the tasks are stopped, not left running.
  const controller = new AbortController();
  const signals = onStopSignals(() => controller.abort());
  try {
    for (const warning of runtime.warnings) await write(io.stderr, `codemode: warning: ${warning}\n`);
    const progress = await openProgress(runtime.cm.tasks, io.stderr, progressMode(io.stderr, io.env), { color: useColor(io.stderr, io.env) });
    progress.start();
    let result: Awaited<ReturnType<typeof runtime.cm.run>>;
    try {
      // A call that needs a person is asked on the terminal when there is one (and the program did
      // not come on stdin); otherwise the run stops and prints its continuation for codemode resume.
      const ask = source !== "-" && canAsk(io) ? { askApproval: terminalAsker(io) } : {};
      result = await runtime.cm.runInternal(code, {
        signal: controller.signal,
        resumeHint: cliResumeHint,
        ...ask,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
        ...(session === undefined ? {} : { session }),
      });
    } finally {
      progress.stop();
    }
    return signals.exitCode(await reportRun(result, flags.json === true, io, runtime));
  } finally {
    await runtime.close();
    signals.dispose();
  }
}
