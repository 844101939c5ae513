// Upstream MCP servers bound as tools.<server>.<tool>: a real stdio server (the inventory fixture)
// behind the SDK client, called from programs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, type Codemode } from "../../src/index.js";
import { connectUpstreams, type Upstreams } from "../../src/mcp/upstream.js";
import { INVENTORY_SERVER } from "./helpers.js";

describe("upstream MCP servers", () => {
  let upstreams: Upstreams;
  let cm: Codemode;

  beforeAll(async () => {
    upstreams = await connectUpstreams(
      {
        inventory: { command: process.execPath, args: [INVENTORY_SERVER], env: { GREETING: "ahoy" } },
        missing: { command: "/nonexistent/codemode-upstream", args: [], env: {} },
        dies: { command: process.execPath, args: ["-e", "console.error('cannot start: INVENTORY_TOKEN is not set'); process.exit(3)"], env: {} },
        silent: { command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"], env: {} },
      },
      { startupTimeoutMs: 1500 },
    );
    cm = await createCodemode({ tools: upstreams.tools, workers: { min: 0 } });
  });
  afterAll(async () => {
    await cm?.close();
    await upstreams?.close();
  });

  it("binds every tool of a server under its namespace; only tools with an outputSchema promise structuredContent", () => {
    expect(upstreams.tools.map((tool) => [tool.id, tool.path.join("."), tool.hasOutput])).toEqual([
      ["inventory.get_item", "inventory.get_item", true],
      ["inventory.list-skus", "inventory.list_skus", false],
      ["inventory.explode", "inventory.explode", false],
      ["inventory.greet", "inventory.greet", false],
    ]);
    expect(cm.declarations()).toContain("get_item");
  });

  it("reports servers that failed to start, with the cause, and keeps the others", () => {
    expect(upstreams.servers.map((server) => [server.name, server.status, server.tools.length])).toEqual([
      ["inventory", "connected", 4],
      ["missing", "failed", 0],
      ["dies", "failed", 0],
      ["silent", "failed", 0],
    ]);
    expect(upstreams.warnings).toHaveLength(5);
    expect(upstreams.warnings.slice(0, 2)).toEqual([
      'MCP server "inventory": tool "list_skus" is skipped: programs would reach it as tools.inventory.list_skus, like "list-skus"',
      'MCP server "inventory": tool "bad name" cannot be bound: defineTool: "name" must be 1–128 characters of letters, digits, "_", "-" or ".", not starting with "-" or ".", received "bad name"',
    ]);
    const failures = upstreams.warnings.slice(2);
    expect(failures[0]).toBe(
      'MCP server "missing" (/nonexistent/codemode-upstream) failed to start: spawn /nonexistent/codemode-upstream ENOENT; its tools are not available (tools.missing.*)',
    );
    expect(failures[1]).toMatch(/^MCP server "dies" \(.+\) failed to start: MCP error -32000: Connection closed; its stderr ends with: cannot start: INVENTORY_TOKEN is not set; its tools are not available \(tools\.dies\.\*\)$/);
    expect(failures[2]).toMatch(/^MCP server "silent" \(.+\) failed to start: MCP error -32001: Request timed out; its tools are not available \(tools\.silent\.\*\)$/);
  });

  it("a program gets structuredContent from a tool with an outputSchema and text from one without", async () => {
    const result = await cm.run(`
      const item = await tools.inventory.get_item({ sku: "A-1" });
      const skus = await tools.inventory.list_skus({});
      const hello = await tools.inventory.greet({ who: "bob" });
      return { item, skus, hello };`);
    expect(result.structuredContent.status).toBe("ok");
    expect(result.structuredContent.value).toEqual({
      item: { sku: "A-1", name: "anvil", stock: 3, warehouse: "north" },
      skus: "A-1\nB-2",
      hello: "ahoy, bob",
    });
  });

  it("isError results and bad arguments reject with a name, a code and the server's message", async () => {
    const result = await cm.run(`
      const out = [];
      for (const call of [() => tools.inventory.explode({}), () => tools.inventory.get_item({ sku: "Z-9" }), () => tools.inventory.get_item({ sku: 7 })]) {
        try { await call(); } catch (e) { out.push([e.name, e.code, e.message]); }
      }
      return out;`);
    expect(result.structuredContent.value).toEqual([
      ["ToolError", "tool_failed", "the warehouse is on fire"],
      ["ToolError", "tool_failed", 'no item with SKU "Z-9"; known: A-1, B-2'],
      ["ToolError", "tool_invalid_input", 'tool "inventory.get_item" input "sku" must be string, received number'],
    ]);
  });

  it("callTool gives the model the server's own text and the host the structuredContent", async () => {
    const result = await cm.callTool("inventory.get_item", { sku: "B-2" });
    expect(result.content).toEqual([{ type: "text", text: "bucket: 0 in stock" }]);
    expect(result.structuredContent).toEqual({ sku: "B-2", name: "bucket", stock: 0, warehouse: "south" });
  });
});

describe("an upstream server that dies mid-session", () => {
  it("turns later calls into rejections that name the server; the program and the runtime carry on", async () => {
    const upstreams = await connectUpstreams({ inventory: { command: process.execPath, args: [INVENTORY_SERVER], env: { INVENTORY_CRASHABLE: "1" } } });
    const cm = await createCodemode({ tools: upstreams.tools, agentDirs: [], workers: { min: 0 } });
    try {
      const result = await cm.run(`
        const out = [];
        for (const call of [() => tools.inventory.crash({}), () => tools.inventory.get_item({ sku: "A-1" })]) {
          try { await call(); out.push("ok"); } catch (e) { out.push(e.code + ": " + e.message); }
        }
        return out;`);
      expect(result.structuredContent.status).toBe("ok");
      const [crash, after] = result.structuredContent.value as string[];
      expect(crash).toMatch(/^tool_failed: MCP server "inventory" could not run "crash": .*Connection closed/);
      expect(after).toBe('tool_failed: MCP server "inventory" has stopped, so "get_item" cannot run; restart codemode to start it again. Its stderr ends with: inventory server ready');
      expect((await cm.run("return 1 + 1")).structuredContent.value).toBe(2);
    } finally {
      await cm.close();
      await upstreams.close();
    }
  });
});
