// `codemode tools`: what a program run with this configuration can call — the workspace tools,
// upstream MCP servers' tools and the runtime's own — as a list, TypeScript declarations or JSON.
import { parseArgs, UsageError } from "./args.js";
import { loadConfig } from "./config.js";
import { EXIT_OK, write, type Io } from "./io.js";
import { openRuntime } from "./runtime.js";

export const TOOLS_HELP = `Usage: codemode tools [--declarations | --json] [--config <file>]

Lists the tools a program can call (as tools.<name> or tools.<server>.<tool>) with the configured
workspace and upstream MCP servers, and whether each resolves to a structured result or text.

  --declarations   the TypeScript declarations a model is given (ptc_run_code's description)
  --json           the tool descriptors (id, description, input/output JSON Schemas)
`;

export async function toolsCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode tools", argv, {
    declarations: { type: "boolean" },
    json: { type: "boolean" },
    config: { type: "string", value: "<file>" },
    help: { type: "boolean" },
  });
  if (flags.help) {
    await write(io.stdout, TOOLS_HELP);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`codemode tools: takes no arguments, got ${positionals.join(" ")}`);
  if (flags.declarations && flags.json) throw new UsageError("codemode tools: give --declarations or --json, not both");
  const runtime = await openRuntime(loadConfig(io.cwd, flags.config as string | undefined), io.cwd);
  try {
    for (const warning of runtime.warnings) await write(io.stderr, `codemode: warning: ${warning}\n`);
    const { cm } = runtime;
    if (flags.declarations) {
      await write(io.stdout, cm.declarations() + "\n");
    } else if (flags.json) {
      await write(io.stdout, JSON.stringify(cm.tools, null, 2) + "\n");
    } else {
      // What a program reaches: every tool but ptc_run_code (a program does not start programs).
      const rows = cm
        .toolList()
        .filter((tool) => tool.name !== "ptc_run_code")
        .map((tool) => [`tools.${tool.path.join(".")}`, tool.hasOutput ? "structured" : "text", firstLine(tool.description)] as const);
      const width = Math.max(...rows.map(([path]) => path.length));
      await write(io.stdout, rows.map(([path, kind, text]) => `${path.padEnd(width)}  ${kind.padEnd(10)}  ${text}`).join("\n") + "\n");
    }
    return EXIT_OK;
  } finally {
    await runtime.close();
  }
}

function firstLine(text: string): string {
  const line = text.split("\n")[0]!.trim();
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}
