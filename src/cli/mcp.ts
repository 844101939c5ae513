// `codemode mcp`: serve the runtime over MCP on stdio until the client disconnects. A client starts
// it from wherever it likes (often `/` or the home directory), so the workspace is bound on the
// configuration's folder (or its `workspace.root`), never on the working directory by accident.
import { dirname } from "node:path";
import { commandHelp, CONFIG_FLAG, HELP_FLAG, parseArgs, usageFlags, UsageError, type FlagTable } from "./args.js";
import { CONFIG_FILE, loadConfig } from "./config.js";
import { EXIT_OK, write, type Io } from "./io.js";
import { openRuntime, type Runtime } from "./runtime.js";
import { declarationsBudget } from "./tools.js";
import { onStopSignals } from "./stop-signals.js";

const MCP_FLAGS = {
  "all-tools": { type: "boolean", description: "also list the workspace's and upstream servers' tools to the client directly" },
  "no-output-schemas": { type: "boolean", description: "list no outputSchema (a smaller catalog; results still carry structuredContent, and tool_info gives each tool's contract)" },
  "declarations-budget": { type: "string", value: "<bytes>", description: "declarations in ptc_run_code's description (default 8000)" },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const MCP_HELP = commandHelp({
  usage: `codemode mcp ${usageFlags(MCP_FLAGS)}`,
  about: `Serves the runtime over MCP on stdio: ptc_run_code (its description lists every tool a program can
call: with their types while they fit the declarations budget, by name and one line past it),
tool_search and tool_info (a tool's types on demand) and the ptc_* task tools. Upstream MCP
servers and the workspace tools from ./codemode.json are bound inside programs
(tools.<server>.<tool>); with --all-tools they are also listed to the client directly.

The workspace tools are bound on the configuration's folder (or its "workspace": { "root" }),
not on the directory the client started the server in. Without a configuration file they are
not bound at all, and tasks and sessions are kept in memory.`,
  flags: MCP_FLAGS,
  notes: `A call sent with a progressToken gets progress notifications: a program's output so far, and the
status and output of the subagents it starts.

Client configuration (e.g. Claude Desktop, Claude Code, Cursor); works from any directory:
  { "mcpServers": { "codemode": { "command": "npx", "args": ["-y", "codemode-runtime", "mcp", "--config", "/path/to/project/codemode.json"] } } }
Servers that fail to start are reported on stderr (your client's MCP log); the others still work.
The server ends when stdin ends, or on SIGTERM, SIGHUP or Ctrl-C (exit 128 + the signal's number):
either way the subagents it started are stopped first.`,
});

export async function mcpCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode mcp", argv, MCP_FLAGS);
  if (flags.help) {
    await write(io.stdout, MCP_HELP);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`codemode mcp: takes no arguments, got ${positionals.join(" ")}; configure upstream servers in codemode.json`);
  const budget = flags["declarations-budget"] === undefined ? undefined : declarationsBudget("codemode mcp", flags["declarations-budget"] as string);
  const config = loadConfig(io.cwd, flags.config as string | undefined);
  // Without a configuration file nothing says which project this is: no workspace, and tasks
  // and sessions in memory rather than a .codemode/ made wherever the client happened to start.
  const projectDir = config.file ? dirname(config.file) : null;
  const runtime = await openRuntime(config, projectDir ?? io.cwd, {
    workspaceRoot: projectDir,
    persist: projectDir !== null,
    ...(budget === undefined ? {} : { declarations: { prompt: budget } }),
  });
  if (projectDir === null) {
    runtime.warnings.push(
      `no ${CONFIG_FILE} in ${io.cwd} (the directory the client started this server in), so the workspace tools are not bound and tasks and sessions are kept in memory; start the server with --config <project>/${CONFIG_FILE}`,
    );
  }
  // Ctrl-C, SIGTERM or SIGHUP ends serving as stdin's end does: the runtime closes (its tasks are
  // stopped, not left running) and the exit code is 128 + the signal's number. A second one exits at once.
  const stopped = new AbortController();
  const signals = onStopSignals(() => stopped.abort());
  try {
    for (const warning of runtime.warnings) await write(io.stderr, `codemode: warning: ${warning}\n`);
    // The MCP SDK loads here, for this command only: every other command's start skips it.
    const { serveMcpStdio } = await import("../mcp/server.js");
    await serveMcpStdio(runtime.cm, {
      stdin: io.stdin,
      stdout: io.stdout,
      signal: stopped.signal,
      instructions: instructions(runtime, flags["no-output-schemas"] === true),
      ...(flags["no-output-schemas"] ? { outputSchemas: false } : {}),
      ...(flags["all-tools"] ? {} : { hide: runtime.boundToolIds }),
    });
  } finally {
    await runtime.close();
    signals.dispose();
  }
  return signals.exitCode(EXIT_OK, { interruptCode: true });
}

/** What the client (and its model) is told about this server: how to use it, and what is missing. */
function instructions(runtime: Runtime, noOutputSchemas: boolean): string {
  const lines = [
    "Write a JavaScript program and run it with ptc_run_code: inside it, await tools.<name>(args) calls the tools listed in that tool's description, and only text(...) output comes back to you. Find tools by what they do with tool_search({ query }) (declarations: true gives their types); tool_info({ tool_id }) describes one. Background subagents: ptc_subagent, ptc_task_wait (wait for them in one call), ptc_task_list, ptc_task_output, ptc_task_stop. Workflows (graphs of tool and agent nodes, checked against result views before they run): ptc_workflow.",
  ];
  if (noOutputSchemas) lines.push("No output schemas are listed: results still carry structuredContent; tool_info({ tool_id }) gives a tool's output_schema (and output_views).");
  const connected = runtime.upstreams.servers.filter((server) => server.status === "connected");
  if (connected.length > 0) lines.push(`Upstream MCP servers bound in programs: ${connected.map((server) => `tools.${server.name}.* (${server.tools.length} tools)`).join(", ")}.`);
  for (const warning of runtime.warnings) lines.push(`Warning: ${warning}`);
  return lines.join("\n");
}
