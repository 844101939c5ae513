// One codemode instance as the CLI and the MCP server use it: the configuration's limits and data
// dir, the workspace toolset, and the tools of upstream MCP servers.
import { homedir } from "node:os";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { createCodemode, type Codemode, type CodemodeOptions } from "../codemode/codemode.js";
import type { McpServerConfig, Upstreams } from "../mcp/upstream.js";
import type { Tool } from "../tools/index.js";
import type { WorkerInfo } from "../tasks/index.js";
import { ensurePrivateDir } from "../safe-fs.js";
import { workspaceTools } from "../workspace/index.js";
import type { CodemodeConfig } from "./config.js";

export interface Runtime {
  cm: Codemode;
  upstreams: Upstreams;
  /** Ids of the tools bound for programs (workspace, upstream), as opposed to the runtime's own. */
  boundToolIds: Set<string>;
  warnings: string[];
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /** Start the upstream MCP servers (default true; task commands do not need them). */
  upstream?: boolean;
  /** Keep a sandbox worker warm (default true; commands that run no program skip it). */
  warm?: boolean;
  /** Where the workspace tools are bound unless the configuration names `workspace.root` (default the working directory); null: not at all. */
  workspaceRoot?: string | null;
  /** Keep tasks and sessions in the configuration's data dir (default true); false: in memory. */
  persist?: boolean;
  /** This runtime is a queue worker (`codemode worker`). */
  worker?: WorkerInfo;
  /** Declarations budgets (`CodemodeOptions.declarations`), e.g. from `codemode mcp --declarations-budget`; over the configuration's. */
  declarations?: CodemodeOptions["declarations"];
}

/**
 * The configured upstream MCP servers, connected. Without any, the MCP SDK's client is not
 * loaded at all: it was ~100-150 ms of every CLI command's start (`codemode run` included), and
 * connecting no server gives the same as this.
 */
async function upstreamsOf(servers: Record<string, McpServerConfig>): Promise<Upstreams> {
  if (Object.keys(servers).length === 0) return noUpstreams();
  const { connectUpstreams } = await import("../mcp/upstream.js");
  return connectUpstreams(servers);
}

/** What connectUpstreams gives for no servers (test/cli pins the two equal). */
export function noUpstreams(): Upstreams {
  return { tools: [], readOnlyTools: [], servers: [], warnings: [], unavailable: {}, close: async () => undefined };
}

export async function openRuntime(config: CodemodeConfig, cwd: string, options: RuntimeOptions = {}): Promise<Runtime> {
  const dataDir = options.persist === false ? undefined : dataDirOf(config.dataDir);
  const upstreams = await upstreamsOf(options.upstream === false ? {} : config.mcpServers);
  const tools: Tool[] = [];
  let cm: Codemode;
  try {
    const root = config.workspace ? (config.workspace.root ?? (options.workspaceRoot === undefined ? cwd : options.workspaceRoot)) : null;
    // The data dir and agent dirs are kept out by createCodemode; the configuration file is the CLI's to name.
    if (config.workspace && root !== null) tools.push(...workspaceTools({ root, write: config.workspace.write, protect: config.file ? [config.file] : [] }));
    tools.push(...upstreams.tools);
    // Agents: the configured directory first, then the user's own (~/.codemode/agents).
    const agentDirs = [...new Set([config.agentsDir, join(homedir(), ".codemode", "agents")])];
    cm = await createCodemode({
      tools,
      ...(dataDir ? { dataDir } : {}),
      cwd,
      agentDirs,
      limits: config.limits,
      // An upstream tool is read-only only when its server (or this configuration) declares it so.
      readOnlyTools: upstreams.readOnlyTools,
      // A program calling a server that did not start is told why.
      unavailableTools: upstreams.unavailable,
      // The working directory is always a root; the configuration may add more.
      tasks: {
        ...(config.tasks.maxOutputBytes !== undefined ? { maxOutputBytes: config.tasks.maxOutputBytes } : {}),
        ...(config.tasks.cwdRoots ? { cwdRoots: [cwd, ...config.tasks.cwdRoots] } : {}),
        ...(config.tasks.maxRunning !== undefined ? { maxRunning: config.tasks.maxRunning } : {}),
        ...(config.tasks.redis !== undefined ? { redis: config.tasks.redis } : {}),
        ...(config.tasks.queue !== undefined ? { queue: config.tasks.queue } : {}),
        ...(config.tasks.lockMs !== undefined ? { lockMs: config.tasks.lockMs } : {}),
        ...(options.worker ? { worker: options.worker } : {}),
      },
      ...(options.warm === false ? { workers: { min: 0 } } : {}),
      declarations: { ...config.declarations, ...options.declarations },
      // Tools the configuration gates: every call asks a person (a terminal, an MCP client, or a continuation).
      ...(config.approvals.required.length > 0 ? { hooks: { approve: gateByConfig(new Set(config.approvals.required)) } } : {}),
    });
  } catch (error) {
    await upstreams.close();
    throw error;
  }
  return {
    cm,
    upstreams,
    boundToolIds: new Set(tools.map((tool) => tool.id)),
    // Agent files that do not load are skipped: said once, and only the agent itself fails.
    warnings: [
      ...upstreams.warnings,
      ...legacyDataDir(config, dataDir),
      ...cm.tasks.agents.problems.map((problem) => `${problem.message}; the agent "${problem.name}" is not available until it is fixed`),
    ],
    close: async () => {
      try {
        await cm.close();
      } finally {
        await upstreams.close();
      }
    },
  };
}

/**
 * The data dir, created private (0700) when it can be. One on a read-only mount is used as it is:
 * the task store then reads what is there and says why nothing can be started.
 */
function dataDirOf(dir: string): string {
  try {
    return ensurePrivateDir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EROFS" || code === "EACCES" || code === "EPERM") return dir;
    throw error;
  }
}

/**
 * The default data dir moved from .codemode to .codemode/state (state apart from the committed
 * agents): tasks and sessions an earlier version kept there are pointed at, never lost silently.
 */
function legacyDataDir(config: CodemodeConfig, dataDir: string | undefined): string[] {
  if (config.dataDirGiven || dataDir === undefined) return [];
  const old = dirname(dataDir);
  if (!existsSync(join(old, "tasks.db")) && !existsSync(join(old, "sessions"))) return [];
  return [
    `${old} holds tasks or sessions of an earlier codemode, whose default data dir it was; the default is now ${dataDir}. To keep using them, set "dataDir": ".codemode" in codemode.json (or move them)`,
  ];
}

function gateByConfig(required: ReadonlySet<string>): NonNullable<CodemodeOptions["hooks"]>["approve"] {
  return (event) => (required.has(event.tool.id) ? "ask" : undefined);
}
