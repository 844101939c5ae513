// `codemode tools`: what a program run with this configuration can call — the workspace tools,
// upstream MCP servers' tools and the runtime's own — as a list, TypeScript declarations or JSON.
import { commandHelp, CONFIG_FLAG, HELP_FLAG, parseArgs, UsageError, type FlagTable } from "./args.js";
import { loadConfig } from "./config.js";
import { EXIT_OK, write, type Io } from "./io.js";
import { openRuntime } from "./runtime.js";
import { summaryLine } from "../text.js";
import { MIN_DECLARATIONS_BUDGET } from "../codemode/codemode.js";

const TOOLS_FLAGS = {
  declarations: { type: "boolean", short: "d", description: "the TypeScript declarations of every tool a program can call, in full" },
  "declarations-budget": {
    type: "string",
    value: "<bytes>",
    description: "with --declarations: at most this many bytes, what fits in full and the rest by name and one line, as ptc_run_code's description does within its budget (default 8000)",
  },
  json: { type: "boolean", short: "j", description: "the tool descriptors (id, description, input/output JSON Schemas)" },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const TOOLS_HELP = commandHelp({
  usage: "codemode tools [--declarations [--declarations-budget <bytes>] | --json] [--config <file>]",
  about: `Lists the tools a program can call (as tools.<name> or tools.<server>.<tool>) with the configured
workspace and upstream MCP servers, and whether each resolves to a structured result or text.`,
  flags: TOOLS_FLAGS,
});

/** A --declarations-budget value: whole bytes, at least 256 (room for the notes and a few tools). */
export function declarationsBudget(command: string, raw: string): number {
  const bytes = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < MIN_DECLARATIONS_BUDGET)
    throw new UsageError(`${command}: --declarations-budget must be a whole number of bytes, at least ${MIN_DECLARATIONS_BUDGET}; got "${raw}"`);
  return bytes;
}

export async function toolsCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode tools", argv, TOOLS_FLAGS);
  if (flags.help) {
    await write(io.stdout, TOOLS_HELP);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`codemode tools: takes no arguments, got ${positionals.join(" ")}`);
  if (flags.declarations && flags.json) throw new UsageError("codemode tools: give --declarations or --json, not both");
  if (flags["declarations-budget"] !== undefined && !flags.declarations) throw new UsageError("codemode tools: --declarations-budget goes with --declarations");
  const budget = flags["declarations-budget"] === undefined ? Infinity : declarationsBudget("codemode tools", flags["declarations-budget"] as string);
  const runtime = await openRuntime(loadConfig(io.cwd, flags.config as string | undefined), io.cwd);
  try {
    for (const warning of runtime.warnings) await write(io.stderr, `codemode: warning: ${warning}\n`);
    const { cm } = runtime;
    if (flags.declarations) {
      await write(io.stdout, cm.declarations({ budgetBytes: budget }) + "\n");
    } else if (flags.json) {
      await write(io.stdout, JSON.stringify(cm.tools, null, 2) + "\n");
    } else {
      // What a program reaches: every tool but ptc_run_code (a program does not start programs).
      const rows = cm
        .toolList()
        .filter((tool) => tool.name !== "ptc_run_code")
        .map((tool) => [`tools.${tool.path.join(".")}`, tool.hasOutput ? "structured" : "text", summaryLine(tool.description)] as const);
      const width = Math.max(...rows.map(([path]) => path.length));
      await write(io.stdout, rows.map(([path, kind, text]) => `${path.padEnd(width)}  ${kind.padEnd(10)}  ${text}`).join("\n") + "\n");
    }
    return EXIT_OK;
  } finally {
    await runtime.close();
  }
}
