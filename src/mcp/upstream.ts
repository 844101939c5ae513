// Upstream MCP servers (codemode.json `mcpServers`): each is started as a stdio client with the
// official SDK and every tool it lists becomes a runtime Tool with `namespace: <server>`, so a
// program calls it as `await tools.<server>.<tool>(args)`. Programs get a call's
// `structuredContent` whenever the server sent one (with or without an `outputSchema`), else its
// text; an `isError` result rejects.
// A server that fails to start costs a warning, never the whole runtime.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { defineTool, toIdentifier, toolResult, toTool, ToolError, type Tool } from "../tools/index.js";
import { isZodObject } from "../tools/project.js";
import type { McpServerConfig } from "../cli/config.js";
import { packageVersion } from "../package-files.js";
import { BoundedStdioTransport } from "./stdio-transport.js";

export interface UpstreamOptions {
  /** How long a server may take to start and list all its tools, every page together (default 20 s). */
  startupTimeoutMs?: number;
  /** Pages of `tools/list` read from one server (default 100); a server that keeps returning `nextCursor` stops there. */
  maxListPages?: number;
  /** Tools bound from one server (default 1,000). */
  maxTools?: number;
  /** Largest message one server may send (default 10 MiB); a larger answer fails that call only. */
  maxMessageBytes?: number;
}

const DEFAULTS = { startupTimeoutMs: 20_000, maxListPages: 100, maxTools: 1000, maxMessageBytes: 10 * 1024 * 1024 };

export interface UpstreamServer {
  name: string;
  status: "connected" | "failed";
  tools: string[];
  error?: string;
}

export interface Upstreams {
  tools: Tool[];
  /**
   * Paths of the tools that never change anything: those whose server declares
   * `annotations.readOnlyHint: true`, and those the configuration lists in `readOnlyTools`. Pass
   * them to createCodemode's `readOnlyTools`; every other upstream tool is kept from read-only agents.
   */
  readOnlyTools: string[];
  servers: UpstreamServer[];
  /** One line per problem: servers that did not start, tools that could not be bound. */
  warnings: string[];
  close(): Promise<void>;
}

const STDERR_TAIL = 2000;
/** Tool calls are bounded by the run's own deadline and signal, not by the SDK's 60 s default. */
const CALL_TIMEOUT_MS = 600_000;

export async function connectUpstreams(servers: Record<string, McpServerConfig>, options: UpstreamOptions = {}): Promise<Upstreams> {
  const entries = Object.entries(servers);
  const limits = { ...DEFAULTS, ...stripUndefined(options) };
  const connected = await Promise.all(entries.map(([name, config]) => connectOne(name, config, limits)));
  const tools: Tool[] = [];
  const readOnlyTools: string[] = [];
  const warnings: string[] = [];
  const clients: Client[] = [];
  const report: UpstreamServer[] = [];
  for (const result of connected) {
    warnings.push(...result.warnings);
    if (result.client) clients.push(result.client);
    tools.push(...result.tools);
    readOnlyTools.push(...result.readOnly);
    const entry: UpstreamServer = { name: result.name, status: result.error ? "failed" : "connected", tools: result.tools.map((tool) => tool.name) };
    if (result.error) entry.error = result.error;
    report.push(entry);
  }
  return {
    tools,
    readOnlyTools,
    servers: report,
    warnings,
    close: async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    },
  };
}

interface Connected {
  name: string;
  client?: Client;
  tools: Tool[];
  readOnly: string[];
  warnings: string[];
  error?: string;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

async function connectOne(name: string, config: McpServerConfig, limits: typeof DEFAULTS): Promise<Connected> {
  const transport = new BoundedStdioTransport({
    command: config.command,
    args: config.args,
    env: { ...getDefaultEnvironment(), ...config.env },
    ...(config.cwd ? { cwd: config.cwd } : {}),
    maxMessageBytes: limits.maxMessageBytes,
  });
  // Keep the tail of the server's stderr for failure messages (and keep the pipe drained).
  let stderr = "";
  transport.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
  });
  const client = new Client({ name: "codemode", version: packageVersion() }, { capabilities: {} });
  const describeFailure = (error: unknown): string => {
    const tail = stderr.trim();
    const cmd = [config.command, ...config.args].join(" ");
    return `MCP server "${name}" (${cmd}) failed to start: ${(error as Error)?.message ?? String(error)}${tail ? `; its stderr ends with: ${tail.slice(-500)}` : ""}`;
  };
  const listed: McpTool[] = [];
  const warnings: string[] = [];
  // One deadline for connecting and every page: a server that always returns nextCursor once
  // held start-up forever, 20 s at a time.
  const deadline = Date.now() + limits.startupTimeoutMs;
  const remaining = (): number => Math.max(1, deadline - Date.now());
  try {
    await client.connect(transport, { timeout: remaining() });
    const cursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 1; ; page++) {
      let result: Awaited<ReturnType<Client["listTools"]>>;
      try {
        result = await client.listTools(cursor ? { cursor } : {}, { timeout: remaining() });
      } catch (error) {
        if (page === 1) throw error;
        warnings.push(`MCP server "${name}": listing its tools stopped at page ${page} (${(error as Error)?.message ?? String(error)}); the ${listed.length} tools of the first ${page - 1} pages are bound`);
        break;
      }
      listed.push(...result.tools.slice(0, limits.maxTools - listed.length));
      cursor = result.nextCursor;
      if (!cursor) break;
      const stop =
        listed.length >= limits.maxTools
          ? `it has more than ${limits.maxTools} tools`
          : cursors.has(cursor)
            ? `it returned the cursor ${JSON.stringify(cursor.slice(0, 40))} twice`
            : page >= limits.maxListPages
              ? `it still returned nextCursor after ${limits.maxListPages} pages`
              : undefined;
      if (stop) {
        warnings.push(`MCP server "${name}": listing its tools stopped because ${stop}; the ${listed.length} tools listed so far are bound`);
        break;
      }
      cursors.add(cursor);
    }
  } catch (error) {
    await client.close().catch(() => undefined);
    const message = describeFailure(error);
    return { name, tools: [], readOnly: [], warnings: [`${message}; its tools are not available (tools.${name}.*)`], error: message };
  }
  // A server can exit later (crash, killed): calls then say so instead of "Not connected".
  const state: ServerState = { closed: false, stderrTail: () => stderr.trim().slice(-500) };
  client.onclose = () => {
    state.closed = true;
  };
  const tools: Tool[] = [];
  const readOnly: string[] = [];
  const declaredReadOnly = new Set(config.readOnlyTools ?? []);
  const paths = new Map<string, string>();
  for (const spec of listed) {
    // Names become identifiers in programs: "list-skus" and "list_skus" would both be tools.<server>.list_skus.
    const path = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(spec.name) ? toIdentifier(spec.name) : spec.name;
    const clash = paths.get(path);
    if (clash !== undefined) {
      warnings.push(`MCP server "${name}": tool "${spec.name}" is skipped: programs would reach it as tools.${name}.${path}, like "${clash}"`);
      continue;
    }
    paths.set(path, spec.name);
    let tool: Tool;
    try {
      tool = upstreamTool(name, client, state, spec, warnings);
    } catch (error) {
      warnings.push(`MCP server "${name}": tool "${spec.name}" cannot be bound: ${(error as Error).message}`);
      continue;
    }
    tools.push(tool);
    // Read-only only when declared so: by the server's own annotation, or by the operator.
    if (spec.annotations?.readOnlyHint === true || declaredReadOnly.has(spec.name)) readOnly.push(tool.path.join("."));
  }
  return { name, client, tools, readOnly, warnings };
}

/** Text of a call result for the model and for programs of tools without an output schema. */
export function resultText(result: CallToolResult): string {
  const parts: string[] = [];
  for (const block of result.content ?? []) {
    if (block.type === "text") parts.push(block.text);
    else if (block.type === "image" || block.type === "audio") parts.push(`[${block.type}: ${block.mimeType}, ${Math.floor((block.data.length * 3) / 4)} bytes]`);
    else if (block.type === "resource_link") parts.push(`[resource: ${block.uri}]`);
    else if (block.type === "resource") parts.push("text" in block.resource && typeof block.resource.text === "string" ? block.resource.text : `[resource: ${block.resource.uri}]`);
  }
  return parts.join("\n");
}

interface ServerState {
  closed: boolean;
  stderrTail(): string;
}

function upstreamTool(server: string, client: Client, state: ServerState, spec: McpTool, warnings: string[]): Tool {
  const description = spec.description?.trim() || spec.title?.trim() || `Tool "${spec.name}" of the MCP server "${server}".`;
  const input = convert(spec.inputSchema);
  const output = spec.outputSchema ? convert(spec.outputSchema) : undefined;
  if (spec.outputSchema && !output) {
    warnings.push(`MCP server "${server}": the outputSchema of tool "${spec.name}" cannot be converted to a zod object; its results reach programs unchecked`);
  }

  const call = async (args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> => {
    const stopped = (): ToolError => {
      const tail = state.stderrTail();
      return new ToolError(
        "tool_failed",
        `MCP server "${server}" has stopped, so "${spec.name}" cannot run; restart codemode to start it again${tail ? `. Its stderr ends with: ${tail}` : ""}`,
        { reason: "upstream_unavailable" },
      );
    };
    if (state.closed) throw stopped();
    let result: CallToolResult;
    try {
      result = (await client.callTool({ name: spec.name, arguments: args }, undefined, { signal, timeout: CALL_TIMEOUT_MS })) as CallToolResult;
    } catch (error) {
      if (signal.aborted) throw new ToolError("tool_aborted", `call to ${server}.${spec.name} was cancelled`);
      throw new ToolError("tool_failed", `MCP server "${server}" could not run "${spec.name}": ${(error as Error).message}`, { reason: "upstream_unavailable" });
    }
    if (result.isError) {
      const text = resultText(result);
      throw new ToolError("tool_failed", text === "" ? `${server}.${spec.name} failed (the MCP server gave no message)` : text, { reason: "upstream_error" });
    }
    return result;
  };

  if (!input) {
    // Not expressible in zod: bind it as given (the server validates its own input).
    if (output) warnings.push(`MCP server "${server}": the inputSchema of tool "${spec.name}" cannot be converted; it is passed through unchecked and its output is not checked`);
    return toTool({
      name: spec.name,
      namespace: server,
      description,
      inputSchema: spec.inputSchema as Record<string, unknown>,
      execute: async (args: Record<string, unknown>, ctx: { signal: AbortSignal }) => untypedResult(await call(args, ctx.signal)),
    });
  }
  if (output) {
    return defineTool({
      name: spec.name,
      namespace: server,
      description,
      input,
      output,
      execute: async (args, ctx) => {
        const result = await call(args as Record<string, unknown>, ctx.signal);
        if (!result.structuredContent) {
          throw new ToolError("tool_output_invalid", `${server}.${spec.name} declares an outputSchema but returned no structuredContent`, { reason: "schema_invalid" });
        }
        const text = resultText(result);
        return toolResult(result.structuredContent as Record<string, unknown>, text === "" ? {} : { modelOutput: text });
      },
    });
  }
  return defineTool({
    name: spec.name,
    namespace: server,
    description,
    input,
    execute: async (args, ctx) => untypedResult(await call(args as Record<string, unknown>, ctx.signal)),
  });
}

/** A result of a tool without a usable output schema: its structuredContent for programs when it sent one (the text for the model), else its text. */
function untypedResult(result: CallToolResult): unknown {
  const text = resultText(result);
  if (result.structuredContent === undefined || result.structuredContent === null) return text;
  return toolResult(result.structuredContent, text === "" ? {} : { modelOutput: text });
}

/** A JSON Schema as a zod object, or undefined when zod cannot express it (refs, odd shapes). */
function convert(schema: unknown): ReturnType<typeof z.object> | undefined {
  try {
    const converted = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    if (!isZodObject(converted)) return undefined;
    // defineTool renders it back to JSON Schema; refuse here what it would refuse there.
    z.toJSONSchema(converted, { unrepresentable: "throw" });
    return converted as unknown as ReturnType<typeof z.object>;
  } catch {
    return undefined;
  }
}
