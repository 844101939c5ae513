// `codemode mcp`: serve the runtime over MCP on stdio until the client disconnects. A client starts
// it from wherever it likes (often `/` or the home directory), so the workspace is bound on the
// configuration's folder (or its `workspace.root`), never on the working directory by accident.
import { dirname } from "node:path";
import { serveMcpStdio } from "../mcp/server.js";
import { parseArgs, UsageError } from "./args.js";
import { CONFIG_FILE, loadConfig } from "./config.js";
import { EXIT_OK, write, type Io } from "./io.js";
import { openRuntime, type Runtime } from "./runtime.js";

export const MCP_HELP = `Usage: codemode mcp [--all-tools] [--config <file>]

Serves the runtime over MCP on stdio: ptc_run_code (its description lists every tool a program can
call, with result types), tool_info and the runtime's other tools. Upstream MCP servers and the
workspace tools from ./codemode.json are bound inside programs (tools.<server>.<tool>); with
--all-tools they are also listed to the client directly.

The workspace tools are bound on the configuration's folder (or its "workspace": { "root" }),
not on the directory the client started the server in. Without a configuration file they are
not bound at all, and tasks and sessions are kept in memory.

Client configuration (e.g. Claude Desktop, Claude Code, Cursor), started in your project:
  { "mcpServers": { "codemode": { "command": "npx", "args": ["codemode", "mcp", "--config", "<project>/codemode.json"] } } }
Servers that fail to start are reported on stderr (your client's MCP log); the others still work.
`;

export async function mcpCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode mcp", argv, { "all-tools": { type: "boolean" }, config: { type: "string", value: "<file>" }, help: { type: "boolean" } });
  if (flags.help) {
    await write(io.stdout, MCP_HELP);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`codemode mcp: takes no arguments, got ${positionals.join(" ")}; configure upstream servers in codemode.json`);
  const config = loadConfig(io.cwd, flags.config as string | undefined);
  // Without a configuration file nothing says which project this is: no workspace, and tasks
  // and sessions in memory rather than a .codemode/ made wherever the client happened to start.
  const projectDir = config.file ? dirname(config.file) : null;
  const runtime = await openRuntime(config, projectDir ?? io.cwd, { workspaceRoot: projectDir, persist: projectDir !== null });
  if (projectDir === null) {
    runtime.warnings.push(
      `no ${CONFIG_FILE} in ${io.cwd} (the directory the client started this server in), so the workspace tools are not bound and tasks and sessions are kept in memory; start the server with --config <project>/${CONFIG_FILE}`,
    );
  }
  try {
    for (const warning of runtime.warnings) await write(io.stderr, `codemode: warning: ${warning}\n`);
    await serveMcpStdio(runtime.cm, {
      stdin: io.stdin,
      stdout: io.stdout,
      instructions: instructions(runtime),
      ...(flags["all-tools"] ? {} : { hide: runtime.boundToolIds }),
    });
  } finally {
    await runtime.close();
  }
  return EXIT_OK;
}

/** What the client (and its model) is told about this server: how to use it, and what is missing. */
function instructions(runtime: Runtime): string {
  const lines = [
    "Write a JavaScript program and run it with ptc_run_code: inside it, await tools.<name>(args) calls the tools listed in that tool's description, and only text(...) output comes back to you. Background subagents: ptc_subagent, ptc_task_wait (wait for them in one call), ptc_task_list, ptc_task_output, ptc_task_stop. Workflows (graphs of tool and agent nodes, checked against result views before they run): ptc_workflow.",
  ];
  const connected = runtime.upstreams.servers.filter((server) => server.status === "connected");
  if (connected.length > 0) lines.push(`Upstream MCP servers bound in programs: ${connected.map((server) => `tools.${server.name}.* (${server.tools.length} tools)`).join(", ")}.`);
  for (const warning of runtime.warnings) lines.push(`Warning: ${warning}`);
  return lines.join("\n");
}
