// `codemode workflow validate|run <file>`: a workflow file (YAML or JSON) checked against the
// configured tools and agents, or run as a task through ptc_workflow, its node lines followed in
// the task's log as they are written.
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { formatBytes } from "../text.js";
import { formatProblems, MAX_WORKFLOW_BYTES, parseWorkflow, validateWorkflow, type NodeLine, type WorkflowPlan, type WorkflowProblem } from "../workflow/index.js";
import { commandHelp, CONFIG_FLAG, HELP_FLAG, parseArgs, usageFlags, UsageError, type FlagTable } from "./args.js";
import { loadConfig } from "./config.js";
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, line, useColor, write, type Io } from "./io.js";
import { openProgress } from "./open-progress.js";
import { progressMode } from "./progress-mode.js";
import { openRuntime, type Runtime } from "./runtime.js";
import { onStopSignals, signalName, type StopSignals } from "./stop-signals.js";
import { formatUsage } from "./usage-text.js";

const WORKFLOW_FLAGS = {
  input: { type: "string", value: "<name>=<value>", repeat: true, description: "a value for an input (repeat for each); a string, or a number or boolean when the input's default is one" },
  json: { type: "boolean", short: "j", description: "print the structured result instead (validate: { valid, errors, warnings }; run: { task_id, status, outputs, nodes, usage, warnings })" },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const WORKFLOW_HELP = commandHelp({
  usage: [`codemode workflow validate <file> ${usageFlags(WORKFLOW_FLAGS)}`, `codemode workflow run <file> ${usageFlags(WORKFLOW_FLAGS)}`],
  about: `A workflow is a YAML (or JSON) graph of tool and agent nodes whose params read earlier nodes'
outputs with {{ .nodes.<id>.output.<path> }}; see docs/workflows.md.

  validate   check it against the configured tools and agents, references against the result
             view each node selected; print each problem as "error: <code>" and its message.
             Runs nothing. Exit 0 when it is valid, 1 when it is not.
  run        validate, then run it as a task: a line per node on stdout as it finishes, then the
             output of the nodes nothing depends on. Subagents' progress is shown live on stderr
             when it is a terminal (as for run). Ctrl-C, SIGTERM or SIGHUP stops the workflow and
             its running nodes (a second one exits at once).
             Exit 0 when every node succeeded, 1 otherwise, 143 / 129 after SIGTERM / SIGHUP.`,
  flags: WORKFLOW_FLAGS,
});

const POLL_MS = 50;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

export async function workflowCommand(argv: readonly string[], io: Io): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === "--help" || sub === "-h" || sub === "help") {
    await write(sub === undefined ? io.stderr : io.stdout, WORKFLOW_HELP);
    return sub === undefined ? EXIT_USAGE : EXIT_OK;
  }
  if (sub !== "validate" && sub !== "run") throw new UsageError(`codemode workflow: unknown subcommand "${sub}"; use "validate" or "run"`);
  const command = `codemode workflow ${sub}`;
  const { flags, positionals } = parseArgs(command, rest, WORKFLOW_FLAGS);
  if (flags.help) {
    await write(io.stdout, WORKFLOW_HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(`${command}: expected one workflow file, got ${positionals.length === 0 ? "none" : positionals.join(" ")}`);
  const file = positionals[0]!;
  const text = readWorkflowFile(command, resolve(io.cwd, file), file);
  const inputs = coerceInputs(command, namedInputs(command, (flags.input as string[] | undefined) ?? []), text);

  const runtime = await openRuntime(loadConfig(io.cwd, flags.config as string | undefined), io.cwd, { warm: sub === "run" });
  // `run` stops its workflow on Ctrl-C, SIGTERM or SIGHUP (runAndFollow), listening until the
  // runtime has closed, so no node's task is left running.
  const signals = sub === "run" ? onStopSignals() : undefined;
  try {
    for (const warning of runtime.warnings) await write(io.stderr, `codemode: warning: ${warning}\n`);
    const checked = validateWorkflow(
      text,
      { tools: runtime.cm.toolList(), agents: runtime.cm.tasks.agents, depth: 1, maxDepth: runtime.cm.tasks.maxDepth },
      sub === "run" || inputs !== undefined ? { inputs: inputs ?? {} } : {},
    );
    if (sub === "validate") {
      if (flags.json) await write(io.stdout, JSON.stringify({ valid: checked.valid, errors: checked.errors, warnings: checked.warnings }, null, 2) + "\n");
      else await write(io.stdout, validationReport(file, checked.valid, checked.errors, checked.warnings));
      return checked.valid ? EXIT_OK : EXIT_FAILED;
    }
    if (!checked.valid || !checked.plan) {
      await write(io.stderr, validationReport(file, false, checked.errors, checked.warnings));
      return EXIT_FAILED;
    }
    if (checked.warnings.length > 0 && !flags.json) await write(io.stderr, `${formatProblems([], checked.warnings, file)}\n\n`);
    return signals!.exitCode(await runAndFollow(runtime, io, text, inputs ?? {}, checked.plan, flags.json === true, signals!));
  } finally {
    await runtime.close();
    signals?.dispose();
  }
}

/** `--input name=value`, repeated: each value kept whole (it may hold commas or more `=`). */
function namedInputs(command: string, values: readonly string[]): Array<[string, string]> {
  const raw: Array<[string, string]> = [];
  for (const value of values) {
    const eq = value.indexOf("=");
    if (eq <= 0) throw new UsageError(`${command}: --input must be <name>=<value>, got "${value}"`);
    const name = value.slice(0, eq);
    if (raw.some(([n]) => n === name)) throw new UsageError(`${command}: --input ${name} given twice`);
    raw.push([name, value.slice(eq + 1)]);
  }
  return raw;
}

function readWorkflowFile(command: string, path: string, shown: string): string {
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new UsageError(`${command}: the workflow "${shown}" is not a file`);
    size = st.size;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`${command}: cannot read the workflow "${shown}": no such file`);
  }
  if (size > MAX_WORKFLOW_BYTES) throw new UsageError(`${command}: the workflow "${shown}" is ${formatBytes(size)}; a workflow file is at most ${formatBytes(MAX_WORKFLOW_BYTES)}`);
  return readFileSync(path, "utf8");
}

/** Command-line values are strings; an input whose default is a number or boolean takes that type. */
function coerceInputs(command: string, raw: Array<[string, string]>, text: string): Record<string, unknown> | undefined {
  if (raw.length === 0) return undefined;
  const declared = new Map((parseWorkflow(text).definition?.inputs ?? []).map((input) => [input.name, input]));
  const out: Record<string, unknown> = {};
  for (const [name, value] of raw) {
    const spec = declared.get(name);
    const kind = spec && Object.hasOwn(spec, "default") ? typeof spec.default : "string";
    if (kind === "number") {
      const n = Number(value);
      if (value.trim() === "" || !Number.isFinite(n)) throw new UsageError(`${command}: --input ${name} must be a number (its default is ${String(spec!.default)}), got "${value}"`);
      out[name] = n;
    } else if (kind === "boolean") {
      if (value !== "true" && value !== "false") throw new UsageError(`${command}: --input ${name} must be true or false (its default is ${String(spec!.default)}), got "${value}"`);
      out[name] = value === "true";
    } else {
      Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  return out;
}

function validationReport(file: string, valid: boolean, errors: readonly WorkflowProblem[], warnings: readonly WorkflowProblem[]): string {
  const body = formatProblems(errors, warnings, file);
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  const summary = valid
    ? `${file}: valid${warnings.length > 0 ? ` (${plural(warnings.length, "warning")})` : ""}`
    : `${file}: ${plural(errors.length, "error")}${warnings.length > 0 ? `, ${plural(warnings.length, "warning")}` : ""}; nothing ran`;
  return `${body === "" ? "" : `${body}\n\n`}${summary}\n`;
}

async function runAndFollow(runtime: Runtime, io: Io, text: string, inputs: Record<string, unknown>, plan: WorkflowPlan, json: boolean, signals: StopSignals): Promise<number> {
  const { cm } = runtime;
  const host = cm.tasks;
  const started = await cm.callTool("ptc_workflow", { workflow: text, inputs, background: true });
  const handle = started.structuredContent as { task_id?: string; warnings?: WorkflowProblem[] } | undefined;
  if (started.isError || !handle?.task_id) {
    await write(io.stderr, line(`codemode: ${started.content.map((block) => block.text).join("\n")}`));
    return EXIT_FAILED;
  }
  const id = handle.task_id;
  const mode = progressMode(io.stderr, io.env);
  const progress = await openProgress(host, io.stderr, mode, { color: useColor(io.stderr, io.env) });
  // A progress view redraws its lines in place: node lines written to the same terminal between
  // two redraws would be erased, so there they are printed once the view has stopped.
  const deferLines = mode === "tty" && io.stdout.isTTY === true;
  const width = Math.max(...plan.nodes.map((node) => node.id.length));
  const lines: NodeLine[] = [];
  const held: string[] = [];
  const decoder = new StringDecoder("utf8");
  let offset = 0;
  let partial = "";
  const drain = async (): Promise<void> => {
    const size = host.store.outputSize(id);
    if (size <= offset) return;
    partial += decoder.write(host.store.readOutput(id, offset, size));
    offset = size;
    const complete = partial.split("\n");
    partial = complete.pop()!;
    for (const raw of complete) {
      if (raw.trim() === "") continue;
      const node = parseLine(raw);
      if (node) lines.push(node);
      if (json) continue;
      // A line that is not a node's (a log cut short, say) is shown as it is. What a node, an
      // agent or a tool wrote may hold terminal control sequences: write() shows them, never obeys them.
      const shown = node ? nodeLine(node, width) : `${raw}\n`;
      if (deferLines) held.push(shown);
      else await write(io.stdout, shown);
    }
  };

  // A second signal exits at once (onStopSignals).
  signals.onStop((signal) => void host.stop(id, `interrupted (${signalName(signal)})`).catch(() => undefined));
  progress.start();
  let ended = false;
  const end = host.wait(id).then(() => {
    ended = true;
  });
  try {
    while (!ended) {
      await drain();
      await Promise.race([end, sleep(POLL_MS)]);
    }
    await drain();
  } finally {
    progress.stop();
  }
  for (const shown of held) await write(io.stdout, shown);
  const record = host.get(id)!;
  const outputs: Record<string, unknown> = {};
  for (const node of lines) if (node.status === "succeeded") Object.defineProperty(outputs, node.node, { value: node.output, enumerable: true, writable: true, configurable: true });
  const ok = record.status === "succeeded";
  if (json) {
    const nodes = lines.map(({ output: _output, ...rest }) => rest);
    await write(io.stdout, JSON.stringify({ task_id: id, status: record.status, outputs, nodes, usage: record.usage, warnings: handle.warnings ?? [] }, null, 2) + "\n");
    return ok ? EXIT_OK : EXIT_FAILED;
  }
  // What a workflow produces is what its last nodes produced: those nothing else depends on.
  const needed = new Set(plan.nodes.flatMap((node) => node.deps));
  for (const node of plan.nodes) {
    if (needed.has(node.id) || !Object.hasOwn(outputs, node.id)) continue;
    await write(io.stdout, `\n--- ${node.id} ---\n${line(resultText(node, outputs[node.id]))}`);
  }
  const counts = ["succeeded", "failed", "skipped", "canceled"].map((s) => [s, lines.filter((l) => l.status === s).length] as const).filter(([, n]) => n > 0);
  const label = record.label;
  await write(io.stdout, `\nworkflow "${label}" ${record.status} (nodes: ${counts.map(([s, n]) => `${n} ${s}`).join(", ")}); usage ${formatUsage(record.usage)}\n`);
  if (!ok && record.errorMessage) await write(io.stderr, line(`codemode: ${record.errorMessage}`));
  return ok ? EXIT_OK : EXIT_FAILED;
}

function parseLine(raw: string): NodeLine | undefined {
  try {
    const value = JSON.parse(raw) as NodeLine;
    return value !== null && typeof value === "object" && typeof value.node === "string" && typeof value.status === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

function nodeLine(node: NodeLine, width: number): string {
  const parts: string[] = [node.node.padEnd(width), node.status.padEnd(9)];
  if (node.kind === "run-agent") {
    const usage = (node.output as { usage?: Parameters<typeof formatUsage>[0] } | undefined)?.usage;
    parts.push(`run-agent ${node.agent}${node.task_id ? `, task ${node.task_id}` : ""}${usage ? `, ${formatUsage(usage)}` : ""}`);
  } else {
    parts.push(`${node.kind}${node.view ? ` (${node.view} view)` : ""}`);
  }
  if (node.error) parts.push(`${node.error.code}${node.error.reason ? ` (${node.error.reason})` : ""}: ${node.error.message}`);
  if (node.reason) parts.push(node.reason);
  return `${parts.join("  ")}\n`;
}

/** An agent node's result is its text; a tool node's is its text or its JSON. */
function resultText(node: WorkflowPlan["nodes"][number], output: unknown): string {
  if (node.type === "agent" && typeof (output as { text?: unknown }).text === "string") return (output as { text: string }).text;
  return typeof output === "string" ? output : JSON.stringify(output, null, 2);
}
