// Upstream servers as people configure them: a Streamable HTTP server and an SSE server (SDK
// servers this test starts on 127.0.0.1) with headers from the environment, the official
// @modelcontextprotocol/server-memory started from node_modules, and servers that fail to start —
// which a program calling them hears about by name.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, type Codemode } from "../../src/index.js";
import { connectUpstreams, type Upstreams } from "../../src/mcp/upstream.js";
import { mcpToolOf } from "../../src/mcp/server.js";
import { ROOT } from "./helpers.js";

const TOKEN = "s3cret-token-4711";
const MEMORY_SERVER = join(ROOT, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js");

/** An SDK server with one structured tool, as each HTTP session gets it. */
function catalogServer(): McpServer {
  const server = new McpServer({ name: "catalog", version: "1.0.0" });
  server.registerTool(
    "lookup",
    {
      title: "Part lookup",
      annotations: { readOnlyHint: true, openWorldHint: false },
      description: "Look up a part by number.",
      inputSchema: { part: z.string() },
      outputSchema: { part: z.string(), price: z.number(), tags: z.array(z.string()) },
    },
    async ({ part }) => {
      const value = { part, price: 12.5, tags: ["steel", "m4"] };
      return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
    },
  );
  server.registerTool("huge", { description: "Answers with far too much." }, async () => ({ content: [{ type: "text", text: "x".repeat(300_000) }] }));
  // A title no tool of ours could carry (an escape, a second line, 300 characters): still bound.
  server.registerTool("odd", { title: `Odd \u001b[31mtitle ${"x".repeat(300)}\nsecond line`, description: "Has an odd title." }, async () => ({ content: [{ type: "text", text: "ok" }] }));
  return server;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? undefined : JSON.parse(text);
}

/** Streamable HTTP on /mcp and SSE on /sse + /messages, both behind a bearer token. */
async function startHttp(): Promise<{ url: string; server: Server; seen: { authorized: number; refused: number } }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const sse = new Map<string, SSEServerTransport>();
  const seen = { authorized: 0, refused: 0 };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        seen.refused++;
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unauthorized" }));
        return;
      }
      seen.authorized++;
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path === "/sse" && req.method === "GET") {
        const transport = new SSEServerTransport("/messages", res);
        sse.set(transport.sessionId, transport);
        await catalogServer().connect(transport);
        return;
      }
      if (path === "/messages") {
        const transport = sse.get(new URL(req.url!, "http://x").searchParams.get("sessionId") ?? "");
        if (!transport) return void res.writeHead(404).end();
        await transport.handlePostMessage(req, res, await readBody(req));
        return;
      }
      const id = req.headers["mcp-session-id"];
      let transport = typeof id === "string" ? sessions.get(id) : undefined;
      const body = req.method === "POST" ? await readBody(req) : undefined;
      if (!transport) {
        transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => void sessions.set(sid, transport!) });
        await catalogServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    })().catch((error) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, seen };
}

describe("upstream servers over HTTP, from node_modules, and ones that fail", () => {
  let http: Awaited<ReturnType<typeof startHttp>>;
  let upstreams: Upstreams;
  let cm: Codemode;

  beforeAll(async () => {
    http = await startHttp();
    const memoryFile = join(mkdtempSync(join(tmpdir(), "codemode-memory-")), "memory.jsonl");
    upstreams = await connectUpstreams(
      {
        catalog: { type: "http", url: "${CATALOG_URL}/mcp", headers: { Authorization: "Bearer ${CATALOG_TOKEN}" } },
        legacy: { type: "sse", url: `${http.url}/sse`, headers: { Authorization: "Bearer ${CATALOG_TOKEN}" } },
        memory: { command: process.execPath, args: [MEMORY_SERVER], env: { MEMORY_FILE_PATH: memoryFile } },
        locked: { type: "http", url: `${http.url}/mcp`, headers: { Authorization: "Bearer wrong-token-9999" } },
        unset: { type: "http", url: `${http.url}/mcp`, headers: { Authorization: "Bearer ${CODEMODE_TEST_UNSET_TOKEN}" } },
        slow: { command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"], startupTimeoutMs: 300 },
      },
      { env: { CATALOG_URL: http.url, CATALOG_TOKEN: TOKEN }, maxMessageBytes: 100_000 },
    );
    cm = await createCodemode({ tools: upstreams.tools, unavailableTools: upstreams.unavailable, workers: { min: 0 }, agentDirs: [] });
  });
  afterAll(async () => {
    await cm?.close();
    await upstreams?.close();
    http?.server.closeAllConnections();
    await new Promise((resolve) => http?.server.close(resolve));
  });

  it("binds the tools of a Streamable HTTP and an SSE server (headers from the environment) and of server-memory", () => {
    expect(upstreams.servers.map((server) => [server.name, server.status])).toEqual([
      ["catalog", "connected"],
      ["legacy", "connected"],
      ["memory", "connected"],
      ["locked", "failed"],
      ["unset", "failed"],
      ["slow", "failed"],
    ]);
    expect(upstreams.tools.filter((tool) => tool.namespace === "catalog").map((tool) => tool.id)).toEqual(["catalog.lookup", "catalog.huge", "catalog.odd"]);
    expect(upstreams.tools.some((tool) => tool.id === "memory.read_graph")).toBe(true);
  });

  it("a program gets each server's structured results as objects", async () => {
    const result = await cm.run(`
      const http = await tools.catalog.lookup({ part: "M4-12" });
      const sse = await tools.legacy.lookup({ part: "M5" });
      const created = await tools.memory.create_entities({ entities: [{ name: "Ada", entityType: "person", observations: ["wrote the first program"] }] });
      const graph = await tools.memory.read_graph({});
      return { http, sse: sse.part, created: created.entities.map((e) => e.name), graph: graph.entities.map((e) => [e.name, e.observations]) };`);
    expect(result.structuredContent.status).toBe("ok");
    expect(result.structuredContent.value).toStrictEqual({
      http: { part: "M4-12", price: 12.5, tags: ["steel", "m4"] },
      sse: "M5",
      created: ["Ada"],
      graph: [["Ada", ["wrote the first program"]]],
    });
  });

  it("an upstream tool keeps its server's title and hints: in our MCP listing and in tool_info", async () => {
    const byId = (id: string) => upstreams.tools.find((tool) => tool.id === id)!;
    // server-memory states a title and all four hints on each tool.
    expect(mcpToolOf(byId("memory.delete_entities"))).toMatchObject({
      name: "memory.delete_entities",
      title: "Delete Entities",
      annotations: { title: "Delete Entities", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    });
    const info = await cm.callTool("tool_info", { tool_id: "memory.delete_entities" });
    const tool = (info.structuredContent as { tool: Record<string, unknown> }).tool;
    expect([tool.title, tool.annotations]).toStrictEqual(["Delete Entities", { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }]);
    expect(JSON.parse(JSON.stringify(info.structuredContent))).toStrictEqual(info.structuredContent);
    // Over Streamable HTTP too; hints the server did not state are not made up.
    const lookup = ((await cm.callTool("tool_info", { tool_id: "catalog.lookup" })).structuredContent as { tool: Record<string, unknown> }).tool;
    expect([lookup.title, lookup.annotations]).toStrictEqual(["Part lookup", { readOnlyHint: true, openWorldHint: false }]);
    const huge = ((await cm.callTool("tool_info", { tool_id: "catalog.huge" })).structuredContent as { tool: Record<string, unknown> }).tool;
    expect([Object.hasOwn(huge, "title"), Object.hasOwn(huge, "annotations")]).toStrictEqual([false, false]);
    expect(Object.hasOwn(mcpToolOf(byId("catalog.huge")), "annotations")).toBe(false);
    // An odd title is cut to its first line of at most 200 characters, its control characters spaces.
    const odd = byId("catalog.odd").title!;
    expect(odd.length).toBe(200);
    expect(odd).toMatch(/^Odd {2}\[31mtitle x+…$/);
  });

  it("an answer over the message limit fails that call only; the server stays usable", async () => {
    const result = await cm.run(`
      let failed;
      try { await tools.catalog.huge({}); } catch (e) { failed = e.message; }
      return { failed, after: (await tools.catalog.lookup({ part: "A" })).part };`);
    const value = result.structuredContent.value as { failed: string; after: string };
    expect(value.failed).toContain("more than 97.7 KiB, the limit for one message from an upstream MCP server");
    expect(value.after).toBe("A");
  });

  it("servers that failed say why, and never print a header's value or an expanded variable", () => {
    const { locked, unset, slow } = upstreams.unavailable;
    expect(locked).toMatch(new RegExp(`^MCP server "locked" \\(${http.url}/mcp\\) failed to start: .*unauthorized.* \\(HTTP 401: check its headers\\)`));
    expect(unset).toBe(
      `MCP server "unset" (${http.url}/mcp) cannot start: its headers.Authorization uses \${CODEMODE_TEST_UNSET_TOKEN}, which is not set in the environment codemode runs in; set it, or write \${CODEMODE_TEST_UNSET_TOKEN:-default}`,
    );
    expect(slow).toContain('it did not finish starting within 300 ms (raise "startupTimeoutMs" of this server in codemode.json if it needs longer)');
    const everything = JSON.stringify([upstreams.warnings, upstreams.unavailable, upstreams.servers]);
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain("wrong-token-9999");
    expect(http.seen.refused).toBeGreaterThan(0);
  });

  it("a program calling a server that failed to start is told which server and why, not 'not a tool'", async () => {
    const result = await cm.run(`
      const out = [];
      for (const call of [() => tools.slow.anything({}), () => tools.locked.lookup({ part: "x" }), () => tools.nothing_here.x({})]) {
        try { await call(); } catch (e) { out.push(e.message); }
      }
      return out;`);
    const [slow, locked, unknown] = result.structuredContent.value as string[];
    expect(slow).toBe(`tools.slow is not available: ${upstreams.unavailable.slow}`);
    expect(locked).toBe(`tools.locked is not available: ${upstreams.unavailable.locked}`);
    expect(unknown).toMatch(/^tools\.nothing_here is not a tool\./);
    // Uncaught, it is the run's error.
    const failed = await cm.run(`await tools.slow.list({})`);
    expect(failed.structuredContent.error?.message).toBe(`TypeError: tools.slow is not available: ${upstreams.unavailable.slow}`);
  });
});
