// One codemode instance as the CLI and the MCP server use it: the configuration's limits and data
// dir, the workspace toolset on the working directory, and the tools of upstream MCP servers.
import { mkdirSync } from "node:fs";
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

export async function openRuntime(config: CodemodeConfig, cwd: string): Promise<Runtime> {
  mkdirSync(config.dataDir, { recursive: true });
  const upstreams = await connectUpstreams(config.mcpServers);
  const tools: Tool[] = [];
  if (config.workspace) tools.push(...workspaceTools({ root: cwd, write: config.workspace.write }));
  tools.push(...upstreams.tools);
  let cm: Codemode;
  try {
    cm = await createCodemode({ tools, dataDir: config.dataDir, cwd, limits: config.limits });
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
      await cm.close();
      await upstreams.close();
    },
  };
}
