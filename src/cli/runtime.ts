// One codemode instance as the CLI and the MCP server use it: the configuration's limits and data
// dir, the workspace toolset on the working directory, and the tools of upstream MCP servers.
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { createCodemode, type Codemode } from "../codemode/codemode.js";
import { connectUpstreams, type Upstreams } from "../mcp/upstream.js";
import type { Tool } from "../tools/index.js";
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
}

export async function openRuntime(config: CodemodeConfig, cwd: string, options: RuntimeOptions = {}): Promise<Runtime> {
  // A data dir that cannot be created (read-only parent) still opens: the task store reads what is there.
  try {
    mkdirSync(config.dataDir, { recursive: true });
  } catch {
    // The task store and session files report what they cannot do.
  }
  const upstreams = await connectUpstreams(options.upstream === false ? {} : config.mcpServers);
  const tools: Tool[] = [];
  let cm: Codemode;
  try {
    if (config.workspace) tools.push(...workspaceTools({ root: cwd, write: config.workspace.write }));
    tools.push(...upstreams.tools);
    // Agents: the configured directory first, then the user's own (~/.codemode/agents).
    const agentDirs = [...new Set([config.agentsDir, join(homedir(), ".codemode", "agents")])];
    cm = await createCodemode({
      tools,
      dataDir: config.dataDir,
      cwd,
      agentDirs,
      limits: config.limits,
      // An upstream tool is read-only only when its server (or this configuration) declares it so.
      readOnlyTools: upstreams.readOnlyTools,
      // The working directory is always a root; the configuration may add more.
      tasks: { ...(config.tasks.maxOutputBytes !== undefined ? { maxOutputBytes: config.tasks.maxOutputBytes } : {}), ...(config.tasks.cwdRoots ? { cwdRoots: [cwd, ...config.tasks.cwdRoots] } : {}) },
      ...(options.warm === false ? { workers: { min: 0 } } : {}),
    });
  } catch (error) {
    await upstreams.close();
    throw error;
  }
  return {
    cm,
    upstreams,
    boundToolIds: new Set(tools.map((tool) => tool.id)),
    warnings: [...upstreams.warnings],
    close: async () => {
      try {
        await cm.close();
      } finally {
        await upstreams.close();
      }
    },
  };
}
