// The client side of an upstream MCP server's stdio, with a size limit per message that refuses
// one answer instead of the connection. The SDK's own StdioClientTransport keeps a buffer of at
// most 10 MB and, past it, closes the transport: one oversized tool result cut the server off for
// the life of the host. Here lines go through the host's bounded line splitter; an oversized
// answer becomes a JSON-RPC error for its own request id, and the server stays connected.
// Parsing and serialising JSON-RPC is the SDK's own (deserializeMessage / serializeMessage).
import { spawn, type ChildProcess } from "node:child_process";
import { PassThrough } from "node:stream";
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { LineSplitter, type OverlongLine } from "../line-splitter.js";
import { formatBytes } from "../text.js";

export interface BoundedStdioOptions {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /** Largest message the server may send (one JSON-RPC line). */
  maxMessageBytes: number;
}

type RequestId = string | number;

/** JSON-RPC error code for an answer the client refused to read. */
export const MESSAGE_TOO_LARGE = -32000;

const ID = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
/** `…,"id":7}` — the SDK and most servers write the id last, after the result. */
const ID_AT_END = new RegExp(String.raw`"id"\s*:\s*${ID}\s*\}\s*$`);
/** `{"jsonrpc":"2.0","id":7,…` or `{"id":7,…` — servers that write it first. */
const ID_AT_START = new RegExp(String.raw`^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*${ID}`);

function idOf(line: OverlongLine): RequestId | undefined {
  const match = ID_AT_END.exec(line.tail.toString("utf8")) ?? ID_AT_START.exec(line.head.subarray(0, 256).toString("utf8"));
  if (!match) return undefined;
  try {
    return JSON.parse(match[1]!) as RequestId;
  } catch {
    return undefined;
  }
}

export class BoundedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The server's stderr, available before start() so no early line is lost. */
  readonly stderr = new PassThrough();
  private child: ChildProcess | undefined;
  /** Requests sent and not answered yet: an oversized answer without a readable id belongs to the only one. */
  private readonly pending = new Set<RequestId>();
  private readonly lines: LineSplitter;

  constructor(private readonly options: BoundedStdioOptions) {
    this.lines = new LineSplitter({
      maxLineBytes: options.maxMessageBytes,
      tailBytes: 256,
      onLine: (line) => this.onLine(line),
      onOverlong: (line) => this.onOverlong(line),
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    if (this.child) throw new Error("BoundedStdioTransport already started");
    return new Promise((resolve, reject) => {
      const child = spawn(this.options.command, this.options.args, {
        env: this.options.env,
        stdio: ["pipe", "pipe", "pipe"],
        shell: false,
        ...(this.options.cwd ? { cwd: this.options.cwd } : {}),
      });
      this.child = child;
      child.on("error", (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on("spawn", () => resolve());
      child.on("close", () => {
        this.child = undefined;
        this.onclose?.();
      });
      child.stdin!.on("error", (error) => this.onerror?.(error));
      child.stdout!.on("data", (chunk: Buffer) => this.lines.push(chunk));
      child.stdout!.on("error", (error) => this.onerror?.(error));
      child.stderr!.pipe(this.stderr);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin) {
        reject(new Error("Not connected"));
        return;
      }
      if ("method" in message && "id" in message) this.pending.add(message.id);
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
    const wait = (ms: number) => Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, ms).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // Already closed.
    }
    await wait(2000);
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      if (child.exitCode !== null || child.signalCode !== null) break;
      try {
        child.kill(signal);
      } catch {
        // Gone meanwhile.
      }
      await wait(2000);
    }
  }

  private onLine(line: string): void {
    if (line.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line);
    } catch (error) {
      this.onerror?.(error as Error);
      return;
    }
    if ("id" in message && !("method" in message) && message.id !== undefined) this.pending.delete(message.id);
    this.onmessage?.(message);
  }

  private onOverlong(line: OverlongLine): void {
    const id = idOf(line) ?? (this.pending.size === 1 ? [...this.pending][0] : undefined);
    const what = `a ${formatBytes(line.bytes)} message, over the ${formatBytes(this.options.maxMessageBytes)} limit for one message from an upstream MCP server`;
    if (id === undefined || !this.pending.has(id)) {
      this.onerror?.(new Error(`the server sent ${what}; it was dropped`));
      return;
    }
    this.pending.delete(id);
    this.onmessage?.({
      jsonrpc: "2.0",
      id,
      error: { code: MESSAGE_TOO_LARGE, message: `the server's answer is ${what}; it was refused (the server stays connected): ask for less, e.g. a narrower query or one page at a time` },
    });
  }
}
