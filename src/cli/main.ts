// The `codemode` command line: dispatch, help, and the one place errors become exit codes
// (0 ok, 1 the program or command failed, 2 usage or configuration errors).
import { closestNames } from "../tools/identifiers.js";
import { packageVersion } from "../package-files.js";
import { UsageError } from "./args.js";
import { ConfigError } from "./config.js";
import { initCommand, INIT_HELP } from "./init.js";
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, write, type Io } from "./io.js";
import { mcpCommand, MCP_HELP } from "./mcp.js";
import { approvalsCommand, APPROVALS_HELP, resumeCommand, RESUME_HELP } from "./approvals.js";
import { runCommand, RUN_HELP } from "./run.js";
import { taskCommand, tasksCommand, TASK_HELP, TASKS_HELP } from "./tasks.js";
import { toolsCommand, TOOLS_HELP } from "./tools.js";
import { workflowCommand, WORKFLOW_HELP } from "./workflow.js";
import { workerCommand, WORKER_HELP } from "./worker.js";

export const HELP = `codemode — run model-written JavaScript in a sandbox with async tool bindings

Usage:
  codemode run <file|-> [--json] [--timeout <duration>] [--session <name>]
                         run a program; print its text() output (--json: all three channels);
                         subagents' progress is shown live on stderr when it is a terminal
  codemode resume <continuation> [--allow <id>]… [--deny <id>]… [--always <id>]…
                         continue a program that stopped for a person's approval
  codemode approvals [list|revoke <digest>] [--session <name>]
                         the approvals remembered per session; forget one or a session's
  codemode tasks [--status <s,…>] [--limit <n>] [--watch] [--json]
                         the subagent tasks in the data dir, as a table
  codemode task <id> [--follow] [--json]
                         one task's output (stdout), status, usage and report (stderr)
  codemode workflow validate|run <file> [--input <name>=<value>]… [--json]
                         check a workflow (YAML graph of tool and agent nodes) against the
                         tools' result views, or run it as a task with a line per node
  codemode tools [--declarations | --json]
                         the tools a program can call with this configuration
  codemode mcp [--all-tools] [--no-output-schemas] [--declarations-budget <bytes>]
                         serve the runtime over MCP on stdio (ptc_run_code, ptc_*, tool_search, tool_info)
  codemode worker [--config <file>] [--concurrency <n>]
                         run subagent tasks from the configuration's Redis queue (docs/distributed.md)
  codemode init [--force]
                         write a starter codemode.json, a sample agent and hello.js
  codemode help [command]   (or codemode <command> -h)
  codemode --version

Configuration: ./codemode.json, or --config <file> on run, workflow, tasks, task, tools and mcp —
{ "limits", "dataDir" (default .codemode/state), "agentsDir" (default .codemode/agents),
  "workspace": { "write", "root" } | false, "declarations": { "prompt", "search" },
  "mcpServers": { "<name>": { "command", "args", "env" } | { "url", "headers" }, "startupTimeoutMs" },
  "approvals": { "required": ["<tool id>", …] } (calls that need a person's approval) }
(schema/codemode.schema.json describes every field).
Paths in the file, and the defaults above, are relative to the file. The workspace is
"workspace.root", else the working directory (mcp: the file's folder). A configuration is
trusted: run, tools and mcp start its mcpServers, and programs may spawn its command agents.
Programs reach upstream MCP tools as tools.<server>.<tool>.

Exit codes: 0 success, 1 the program failed, 2 usage or configuration error, 3 the program
stopped for a person's approval (run and resume).
`;

type Command = (argv: readonly string[], io: Io) => Promise<number>;

const COMMANDS: Record<string, { run: Command; help: string }> = {
  run: { run: runCommand, help: RUN_HELP },
  mcp: { run: mcpCommand, help: MCP_HELP },
  tasks: { run: tasksCommand, help: TASKS_HELP },
  task: { run: taskCommand, help: TASK_HELP },
  tools: { run: toolsCommand, help: TOOLS_HELP },
  workflow: { run: workflowCommand, help: WORKFLOW_HELP },
  init: { run: initCommand, help: INIT_HELP },
  worker: { run: workerCommand, help: WORKER_HELP },
  resume: { run: resumeCommand, help: RESUME_HELP },
  approvals: { run: approvalsCommand, help: APPROVALS_HELP },
};

export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === "help" || command === "--help" || command === "-h") {
      const topic = command === "help" ? rest[0] : undefined;
      if (topic !== undefined) {
        const entry = COMMANDS[topic];
        if (!entry) throw new UsageError(unknownCommand(topic));
        await write(io.stdout, entry.help);
      } else {
        await write(command === undefined ? io.stderr : io.stdout, HELP);
      }
      return command === undefined ? EXIT_USAGE : EXIT_OK;
    }
    if (command === "--version" || command === "-v") {
      await write(io.stdout, `${packageVersion()}\n`);
      return EXIT_OK;
    }
    const entry = COMMANDS[command];
    if (!entry) throw new UsageError(unknownCommand(command));
    return await entry.run(rest, io);
  } catch (error) {
    // A malformed agent file is configuration too: the message names the file and the field.
    if (error instanceof UsageError || error instanceof ConfigError || (error as { code?: unknown })?.code === "agent_invalid") {
      const message = error instanceof UsageError || error instanceof ConfigError ? error.message : `codemode: ${(error as Error).message}`;
      await write(io.stderr, `${message}\n${error instanceof UsageError ? "Run codemode help for usage.\n" : ""}`);
      return EXIT_USAGE;
    }
    await write(io.stderr, `codemode: ${(error as Error)?.message ?? String(error)}\n`);
    return EXIT_FAILED;
  }
}

function unknownCommand(name: string): string {
  const known = Object.keys(COMMANDS);
  return `codemode: unknown command "${name}"; did you mean "${closestNames(name, known, 1)[0]}"? Commands: ${known.join(", ")}, help`;
}

export function processIo(): Io {
  return { cwd: process.cwd(), stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env };
}
