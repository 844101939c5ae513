// `codemode mcp`: the runtime as an MCP server on stdio (official SDK). Every tool the runtime
// offers a model (ptc_run_code, the ptc_* task tools, tool_info, tool_search, and the host's
// tools unless hidden) is listed with its title, annotations, input schema and, unless the server
// is told to advertise none, its output schema. Calls go through `cm.callTool`, so a failure is an
// `isError` result with a fixable message; a call with a progressToken hears how it is going.
import type { Readable, Writable } from "node:stream";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { Codemode } from "../codemode/codemode.js";
import { RUN_CODE_TOOL } from "../codemode/run-code-tool.js";
import { describeTool, type Tool, type ToolCallResult, type ToolDescriptor } from "../tools/index.js";
import { WORKFLOW_TOOL } from "../workflow/index.js";
import { packageVersion } from "../package-files.js";
import { CallProgress } from "./progress.js";
import { elicitingAsker } from "./elicit.js";

export interface McpServeOptions {
  /** Tool ids to leave out of the listing (tools bound only for programs). */
  hide?: ReadonlySet<string>;
  stdin?: Readable;
  stdout?: Writable;
  /** Short text for the client about what this server is. */
  instructions?: string;
  /**
   * Advertise each tool's output schema (default true). false lists none (a smaller
   * catalog, docs/mcp.md#what-is-listed; the contracts stay readable with tool_info); results still carry structuredContent.
   */
  outputSchemas?: boolean;
  /** Least time between two progress notifications of one call (default 250 ms). */
  progressIntervalMs?: number;
  /** Stop serving when it fires, as when stdin ends (`codemode mcp` on SIGTERM, say). */
  signal?: AbortSignal;
}

/** The tools that start subagent tasks: their progress includes those tasks' status and output. */
const TASK_STARTING_TOOLS = new Set([RUN_CODE_TOOL, "ptc_subagent", WORKFLOW_TOOL]);

/**
 * What a failed call's structuredContent holds (`errorResult`): `{ error: { code, reason?,
 * message, ...fields } }`, fields such as a failed child's `task_id` included.
 */
const ERROR_RECORD_SCHEMA = {
  type: "object",
  properties: {
    error: {
      type: "object",
      properties: { code: { type: "string" }, reason: { type: "string" }, message: { type: "string" } },
      required: ["code", "message"],
      additionalProperties: { type: "string" },
    },
  },
  required: ["error"],
  additionalProperties: false,
};

/**
 * The MCP listing entry of one tool: its descriptor's schemas, and its title and annotations when
 * its definition states them (a tool that states none is listed claiming nothing).
 */
export function mcpToolOf(runtimeTool: Tool, options: { outputSchemas?: boolean } = {}): McpTool {
  const descriptor: ToolDescriptor = describeTool(runtimeTool);
  const tool: McpTool = {
    name: descriptor.id,
    description: descriptor.description,
    inputSchema: { type: "object", ...descriptor.input_schema } as McpTool["inputSchema"],
  };
  if (runtimeTool.title !== undefined) tool.title = runtimeTool.title;
  // annotations.title too: clients of the 2025-03-26 revision read the title only there.
  if (runtimeTool.annotations !== undefined || runtimeTool.title !== undefined) {
    tool.annotations = { ...(runtimeTool.title !== undefined ? { title: runtimeTool.title } : {}), ...runtimeTool.annotations };
  }
  if (options.outputSchemas === false) return tool;
  if (descriptor.output_views) {
    // `result_view: "full"` returns the full record: either view is a valid result, and so is the
    // error record of a failed call, so a client receives its code and fields (task_id) too.
    tool.outputSchema = { type: "object", anyOf: [descriptor.output_views.compact.schema, descriptor.output_views.full.schema, ERROR_RECORD_SCHEMA] } as McpTool["outputSchema"];
  } else if (descriptor.output_schema) {
    tool.outputSchema = { type: "object", ...descriptor.output_schema } as McpTool["outputSchema"];
  }
  return tool;
}

/** Whether a listed tool's output schema admits the error record (tools with views list it). */
export function acceptsErrorRecord(tool: McpTool): boolean {
  const options = (tool.outputSchema as { anyOf?: unknown[] } | undefined)?.anyOf;
  return tool.outputSchema === undefined || (Array.isArray(options) && options.includes(ERROR_RECORD_SCHEMA));
}

/** The MCP result of one call: content for the model, structuredContent for programs and hosts. */
export function mcpResultOf(result: ToolCallResult, dropErrorRecord: boolean): CallToolResult {
  const out: CallToolResult = { content: result.content.map((block) => ({ type: "text", text: block.text })) };
  const structured = result.structuredContent;
  if (structured !== undefined) {
    // Clients validate structuredContent against the declared output schema: where that schema
    // does not admit the error record `{ error }` (single-result tools), errors travel as text only.
    const isErrorRecord = result.isError === true && Object.keys(structured).length === 1 && "error" in structured;
    if (!(isErrorRecord && dropErrorRecord)) out.structuredContent = structured;
  }
  if (result.isError) out.isError = true;
  return out;
}

export function createMcpServer(cm: Codemode, options: McpServeOptions = {}): Server {
  const server = new Server({ name: "codemode", version: packageVersion() }, { capabilities: { tools: {} }, ...(options.instructions ? { instructions: options.instructions } : {}) });
  // The tool set is fixed for the runtime's life: describe it once, not on every call.
  const tools: McpTool[] = cm
    .toolList()
    .filter((tool) => !options.hide?.has(tool.id))
    .map((tool) => mcpToolOf(tool, { outputSchemas: options.outputSchemas }));
  const listed = (): McpTool[] => tools;
  const interval = options.progressIntervalMs ?? 250;
  if (!Number.isInteger(interval) || interval < 1) throw new TypeError(`createMcpServer: "progressIntervalMs" must be a positive integer, received ${String(interval)}`);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed() }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const tool = listed().find((candidate) => candidate.name === name);
    if (!tool) {
      const names = listed().map((candidate) => candidate.name);
      return { content: [{ type: "text", text: `no tool named "${name}"; this server offers: ${names.join(", ")}` }], isError: true };
    }
    const token = request.params._meta?.progressToken;
    // A client that can ask its user (elicitation) answers a program's approvals while it waits.
    const ask = server.getClientCapabilities()?.elicitation ? { askApproval: elicitingAsker(server) } : {};
    if (token === undefined) return mcpResultOf(await cm.callTool(name, args ?? {}, { signal: extra.signal, ...ask }), !acceptsErrorRecord(tool));
    const progress = new CallProgress(
      TASK_STARTING_TOOLS.has(name) ? cm.tasks : undefined,
      (update) => extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, ...update } }),
      interval,
    );
    progress.start();
    try {
      const result = await cm.callTool(name, args ?? {}, { signal: extra.signal, progress: progress.report, ...ask });
      return mcpResultOf(result, !acceptsErrorRecord(tool));
    } finally {
      await progress.finish();
    }
  });
  return server;
}

/** Serve until stdin ends, the client closes the connection or `options.signal` fires. */
export async function serveMcpStdio(cm: Codemode, options: McpServeOptions = {}): Promise<void> {
  const stdin = options.stdin ?? process.stdin;
  const server = createMcpServer(cm, options);
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  let onAbort: (() => void) | undefined;
  const closed = new Promise<void>((resolve) => {
    const close = () => void server.close().then(resolve, resolve);
    transport.onclose = () => resolve();
    stdin.once("end", close);
    stdin.once("close", close);
    onAbort = close;
  });
  if (options.signal?.aborted) return;
  options.signal?.addEventListener("abort", onAbort!, { once: true });
  try {
    await server.connect(transport);
    // server.connect replaces onclose with its own handler that still calls ours.
    await closed;
  } finally {
    options.signal?.removeEventListener("abort", onAbort!);
  }
}
