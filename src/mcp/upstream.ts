// Upstream MCP servers (codemode.json `mcpServers`): each is reached with the official SDK's
// client — a process started over stdio, or a Streamable HTTP (or SSE) endpoint — and every tool
// it lists becomes a runtime Tool with `namespace: <server>`, so a program calls it as
// `await tools.<server>.<tool>(args)`. Programs get a call's
// `structuredContent` whenever the server sent one (with or without an `outputSchema`), else its
// text; an `isError` result rejects.
// A server that fails to start costs a warning, never the whole runtime; a program that reaches
// for its tools is told why they are missing (`unavailable`).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SseError, SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike, Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { defineTool, pickAnnotations, toIdentifier, toolResult, toTool, ToolError, type Tool } from "../tools/index.js";
import { isZodObject } from "../tools/project.js";
import { packageVersion } from "../package-files.js";
import { formatBytes, summaryLine } from "../text.js";
import { BoundedStdioTransport, MESSAGE_TOO_LARGE } from "./stdio-transport.js";

interface ServerCommon {
  /** Tools of this server (names as it lists them) that never change anything, besides those it annotates `readOnlyHint`. */
  readOnlyTools?: string[];
  /** How long this server may take to start and list its tools (default: the `startupTimeoutMs` option). */
  startupTimeoutMs?: number;
}

/** A server the runtime starts as a process and speaks to over stdio. */
export interface StdioServerConfig extends ServerCommon {
  type?: "stdio";
  command: string;
  args?: string[];
  env?: Record<string, string>;
  /** Working directory of the server process (absolute; default the configuration's directory). */
  cwd?: string;
}

/**
 * A server reached over HTTP: Streamable HTTP (`http`) or the older HTTP+SSE transport (`sse`).
 * `${VAR}` and `${VAR:-default}` in the url and the header values are replaced from the
 * environment when it is started; header values never appear in a message.
 */
export interface RemoteServerConfig extends ServerCommon {
  type: "http" | "sse";
  url: string;
  headers?: Record<string, string>;
}

export type McpServerConfig = StdioServerConfig | RemoteServerConfig;

export interface UpstreamOptions {
  /** How long a server may take to start and list all its tools, every page together (default 20 s). */
  startupTimeoutMs?: number;
  /** Pages of `tools/list` read from one server (default 100); a server that keeps returning `nextCursor` stops there. */
  maxListPages?: number;
  /** Tools bound from one server (default 1,000). */
  maxTools?: number;
  /** Largest message one server may send (default 10 MiB); a larger answer fails that call only. */
  maxMessageBytes?: number;
  /** Where `${VAR}` in remote servers' urls and headers is looked up (default process.env). */
  env?: NodeJS.ProcessEnv;
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
  /**
   * The servers that did not start, each with why: pass it to createCodemode's `unavailableTools`
   * so that a program calling `tools.<server>.<tool>` is told so rather than "not a tool".
   */
  unavailable: Record<string, string>;
  close(): Promise<void>;
}

const STDERR_TAIL = 2000;
/** Tool calls are bounded by the run's own deadline and signal, not by the SDK's 60 s default. */
const CALL_TIMEOUT_MS = 600_000;

export async function connectUpstreams(servers: Record<string, McpServerConfig>, options: UpstreamOptions = {}): Promise<Upstreams> {
  const entries = Object.entries(servers);
  const { env = process.env, ...rest } = options;
  const limits = { ...DEFAULTS, ...stripUndefined(rest), env };
  const connected = await Promise.all(entries.map(([name, config]) => connectOne(name, config, limits)));
  const tools: Tool[] = [];
  const readOnlyTools: string[] = [];
  const warnings: string[] = [];
  const report: UpstreamServer[] = [];
  const unavailable: Record<string, string> = {};
  for (const result of connected) {
    warnings.push(...result.warnings);
    tools.push(...result.tools);
    readOnlyTools.push(...result.readOnly);
    const entry: UpstreamServer = { name: result.name, status: result.error ? "failed" : "connected", tools: result.tools.map((tool) => tool.name) };
    if (result.error) {
      entry.error = result.error;
      unavailable[result.name] = result.error;
    }
    report.push(entry);
  }
  return {
    tools,
    readOnlyTools,
    servers: report,
    warnings,
    unavailable,
    close: async () => {
      await Promise.all(connected.map((result) => result.close?.()));
    },
  };
}

interface Connected {
  name: string;
  client?: Client;
  close?: () => Promise<void>;
  tools: Tool[];
  readOnly: string[];
  warnings: string[];
  error?: string;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

type Limits = typeof DEFAULTS & { env: NodeJS.ProcessEnv };

/** A server's transport, how messages name it, and what of its own output explains a failure. */
interface Opened {
  transport: Transport;
  /** The command line, or the url as written (never expanded: it may hold a token). */
  shown: string;
  stderrTail: () => string;
  /** Turns every secret (an expanded variable, a header value) in a message back into its name. */
  redact: (text: string) => string;
  close?: () => Promise<void>;
}

function openTransport(config: McpServerConfig, limits: Limits): Opened {
  if ("url" in config) {
    const secrets = new Map<string, string>();
    const url = new URL(expand(config.url, "url", limits.env, secrets));
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(config.headers ?? {})) {
      headers[key] = expand(value, `headers.${key}`, limits.env, secrets);
      secrets.set(headers[key], `<headers.${key}>`);
    }
    const redact = (text: string): string => {
      let out = text;
      for (const [secret, name] of secrets) if (secret.length >= 4) out = out.split(secret).join(name);
      return out;
    };
    const options = { requestInit: { headers }, fetch: boundedFetch(limits.maxMessageBytes) };
    if (config.type === "sse") return { transport: new SSEClientTransport(url, options), shown: config.url, stderrTail: () => "", redact };
    const transport = new StreamableHTTPClientTransport(url, options);
    // A session the server keeps for this client is ended when the runtime closes (best effort).
    const close = () => withDeadline(transport.terminateSession(), 2000);
    return { transport, shown: config.url, stderrTail: () => "", redact, close };
  }
  const transport = new BoundedStdioTransport({
    command: config.command,
    args: config.args ?? [],
    env: { ...getDefaultEnvironment(), ...config.env },
    ...(config.cwd ? { cwd: config.cwd } : {}),
    maxMessageBytes: limits.maxMessageBytes,
  });
  // Keep the tail of the server's stderr for failure messages (and keep the pipe drained).
  let stderr = "";
  transport.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
  });
  return { transport, shown: [config.command, ...(config.args ?? [])].join(" "), stderrTail: () => stderr.trim().slice(-500), redact: (text) => text };
}

class MissingVariable extends Error {}

/** `${VAR}` and `${VAR:-default}` from the environment; a variable that is not set (and has no default) is an error naming it. */
function expand(text: string, field: string, env: NodeJS.ProcessEnv, secrets: Map<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name: string, fallback: string | undefined) => {
    const value = env[name];
    if (value !== undefined && value !== "") {
      secrets.set(value, `\${${name}}`);
      return value;
    }
    if (fallback !== undefined) return fallback;
    throw new MissingVariable(`its ${field} uses \${${name}}, which is not set in the environment codemode runs in; set it, or write \${${name}:-default}`);
  });
}

function withDeadline(promise: Promise<unknown>, ms: number): Promise<void> {
  return Promise.race([
    promise.then(
      () => undefined,
      () => undefined,
    ),
    new Promise<void>((resolve) => setTimeout(resolve, ms).unref()),
  ]);
}

const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
const EVENT_END = /\r?\n\r?\n/g;

/** The id of the JSON-RPC request a POST carries (what an oversized answer is answered for). */
function requestIdOf(body: unknown): string | number | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const message = JSON.parse(body) as { id?: unknown; method?: unknown };
    return typeof message.method === "string" && (typeof message.id === "string" || typeof message.id === "number") ? message.id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * fetch with the per-message limit of the stdio transport. A JSON answer, or one server-sent
 * event, is held until it is complete and at most `maxBytes`; past that it is dropped and the
 * request it answers gets a JSON-RPC error instead (the server stays connected), so no server can
 * make the host buffer whatever it sends.
 */
function boundedFetch(maxBytes: number): FetchLike {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (!response.body || NULL_BODY_STATUSES.has(response.status)) return response;
    const events = response.headers.get("content-type")?.includes("text/event-stream") === true;
    const id = requestIdOf(init?.body);
    const refusal = (): string => {
      const message = `the server's answer is more than ${formatBytes(maxBytes)}, the limit for one message from an upstream MCP server; it was refused (the server stays connected): ask for less, e.g. a narrower query or one page at a time`;
      return JSON.stringify({ jsonrpc: "2.0", id, error: { code: MESSAGE_TOO_LARGE, message } });
    };
    let held: Buffer[] = [];
    let heldBytes = 0;
    let refused = false;
    const encoder = new TextEncoder();
    const limit = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (refused) return;
        const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        if (events) {
          // Look for an event's end in the new bytes (and the 3 before them): complete events pass.
          const overlap = Math.min(3, heldBytes);
          const window = Buffer.concat([...(overlap > 0 ? [Buffer.concat(held).subarray(heldBytes - overlap)] : []), buffer]).toString("latin1");
          let end = -1;
          for (const match of window.matchAll(EVENT_END)) end = match.index + match[0].length - overlap;
          if (end > 0) {
            controller.enqueue(Buffer.concat([...held, buffer.subarray(0, end)]));
            held = [];
            heldBytes = 0;
            if (end < buffer.length) {
              held.push(Buffer.from(buffer.subarray(end)));
              heldBytes = buffer.length - end;
            }
          } else {
            held.push(Buffer.from(buffer));
            heldBytes += buffer.length;
          }
        } else {
          held.push(Buffer.from(buffer));
          heldBytes += buffer.length;
        }
        if (heldBytes <= maxBytes) return;
        refused = true;
        held = [];
        heldBytes = 0;
        if (id === undefined) {
          controller.error(new Error(`an upstream MCP server sent a message of more than ${formatBytes(maxBytes)}; it was refused`));
          return;
        }
        controller.enqueue(encoder.encode(events ? `event: message\ndata: ${refusal()}\n\n` : refusal()));
        controller.terminate();
      },
      flush(controller) {
        if (heldBytes > 0) controller.enqueue(Buffer.concat(held));
      },
    });
    return new Response(response.body.pipeThrough(limit), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

async function connectOne(name: string, config: McpServerConfig, limits: Limits): Promise<Connected> {
  const startupTimeoutMs = config.startupTimeoutMs ?? limits.startupTimeoutMs;
  let opened: Opened;
  try {
    opened = openTransport(config, limits);
  } catch (error) {
    const shown = "url" in config ? config.url : config.command;
    const message = `MCP server "${name}" (${shown}) cannot start: ${error instanceof MissingVariable ? error.message : (error as Error).message}`;
    return { name, tools: [], readOnly: [], warnings: [`${message}; its tools are not available (tools.${name}.*)`], error: message };
  }
  const { transport, shown, stderrTail, redact } = opened;
  const client = new Client({ name: "codemode", version: packageVersion() }, { capabilities: {} });
  const describeFailure = (error: unknown): string => {
    const tail = stderrTail();
    const timedOut = error instanceof McpError && error.code === ErrorCode.RequestTimeout;
    const status = (error instanceof StreamableHTTPError || error instanceof SseError) && typeof error.code === "number" ? error.code : undefined;
    const why = timedOut
      ? `; it did not finish starting within ${startupTimeoutMs} ms (raise "startupTimeoutMs" of this server in codemode.json if it needs longer)`
      : status !== undefined
        ? ` (HTTP ${status}${status === 401 || status === 403 ? ": check its headers" : ""})`
        : "";
    return redact(`MCP server "${name}" (${shown}) failed to start: ${(error as Error)?.message ?? String(error)}${why}${tail ? `; its stderr ends with: ${tail}` : ""}`);
  };
  const listed: McpTool[] = [];
  const warnings: string[] = [];
  // One deadline for connecting and every page: a server that always returns nextCursor once
  // held start-up forever, 20 s at a time.
  const deadline = Date.now() + startupTimeoutMs;
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
        warnings.push(
          `MCP server "${name}": listing its tools stopped at page ${page} (${(error as Error)?.message ?? String(error)}); the ${listed.length} tools of the first ${page - 1} pages are bound`,
        );
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
  const state: ServerState = { closed: false, stderrTail, redact };
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
  const close = async (): Promise<void> => {
    await opened.close?.();
    await client.close().catch(() => undefined);
  };
  return { name, client, close, tools, readOnly, warnings };
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
  redact(text: string): string;
}

function upstreamTool(server: string, client: Client, state: ServerState, spec: McpTool, warnings: string[]): Tool {
  const description = spec.description?.trim() || spec.title?.trim() || `Tool "${spec.name}" of the MCP server "${server}".`;
  // The server's title and effect hints, so our listing and tool_info pass them on. Taken as far
  // as they are valid (one line of at most 200 characters; the four known boolean hints), so a
  // server's odd title or extra hints never keep its tool from binding.
  const title = upstreamTitle(spec);
  const annotations = pickAnnotations(spec.annotations);
  const identity = { name: spec.name, namespace: server, description, ...(title ? { title } : {}), ...(annotations ? { annotations } : {}) };
  const input = convert(spec.inputSchema);
  const output = spec.outputSchema ? convert(spec.outputSchema) : undefined;
  if (spec.outputSchema && !output) {
    warnings.push(`MCP server "${server}": the outputSchema of tool "${spec.name}" cannot be converted to a zod object; its results reach programs unchecked`);
  }

  const call = async (args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> => {
    const stopped = (): ToolError => {
      const tail = state.stderrTail();
      return new ToolError("tool_failed", `MCP server "${server}" has stopped, so "${spec.name}" cannot run; restart codemode to start it again${tail ? `. Its stderr ends with: ${tail}` : ""}`, {
        reason: "upstream_unavailable",
      });
    };
    if (state.closed) throw stopped();
    let result: CallToolResult;
    try {
      result = (await client.callTool({ name: spec.name, arguments: args }, undefined, { signal, timeout: CALL_TIMEOUT_MS })) as CallToolResult;
    } catch (error) {
      if (signal.aborted) throw new ToolError("tool_aborted", `call to ${server}.${spec.name} was cancelled`);
      throw new ToolError("tool_failed", state.redact(`MCP server "${server}" could not run "${spec.name}": ${(error as Error).message}`), { reason: "upstream_unavailable" });
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
      ...identity,
      inputSchema: spec.inputSchema as Record<string, unknown>,
      execute: async (args: Record<string, unknown>, ctx: { signal: AbortSignal }) => untypedResult(await call(args, ctx.signal)),
    });
  }
  if (output) {
    return defineTool({
      ...identity,
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
    ...identity,
    input,
    execute: async (args, ctx) => untypedResult(await call(args as Record<string, unknown>, ctx.signal)),
  });
}

/** `title`, or `annotations.title` (where the 2025-03-26 revision put it), as one line a tool may carry. */
function upstreamTitle(spec: McpTool): string | undefined {
  const raw = typeof spec.title === "string" && spec.title.trim() !== "" ? spec.title : spec.annotations?.title;
  if (typeof raw !== "string") return undefined;
  const line = summaryLine(raw, 200);
  return line === "" ? undefined : line;
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
