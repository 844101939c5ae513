// Upstream MCP servers bound as tools.<server>.<tool>: a real stdio server (the inventory fixture)
// behind the SDK client, called from programs.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, workspaceTools, type Codemode } from "../../src/index.js";
import { connectUpstreams, type Upstreams } from "../../src/mcp/upstream.js";
import { INVENTORY_SERVER, ROOT } from "./helpers.js";

describe("upstream MCP servers", () => {
  let upstreams: Upstreams;
  let cm: Codemode;

  beforeAll(async () => {
    upstreams = await connectUpstreams(
      {
        inventory: { cwd: process.cwd(), command: process.execPath, args: [INVENTORY_SERVER], env: { GREETING: "ahoy" } },
        missing: { cwd: process.cwd(), command: "/nonexistent/codemode-upstream", args: [], env: {} },
        dies: { cwd: process.cwd(), command: process.execPath, args: ["-e", "console.error('cannot start: INVENTORY_TOKEN is not set'); process.exit(3)"], env: {} },
        silent: { cwd: process.cwd(), command: process.execPath, args: ["-e", "setInterval(() => {}, 1000)"], env: {} },
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
    expect(failures[0]).toBe('MCP server "missing" (/nonexistent/codemode-upstream) failed to start: spawn /nonexistent/codemode-upstream ENOENT; its tools are not available (tools.missing.*)');
    expect(failures[1]).toMatch(
      /^MCP server "dies" \(.+\) failed to start: MCP error -32000: Connection closed; its stderr ends with: cannot start: INVENTORY_TOKEN is not set; its tools are not available \(tools\.dies\.\*\)$/,
    );
    expect(failures[2]).toMatch(
      /^MCP server "silent" \(.+\) failed to start: MCP error -32001: Request timed out; it did not finish starting within 1500 ms \(raise "startupTimeoutMs" of this server in codemode\.json if it needs longer\); its tools are not available \(tools\.silent\.\*\)$/,
    );
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
    const upstreams = await connectUpstreams({ inventory: { cwd: process.cwd(), command: process.execPath, args: [INVENTORY_SERVER], env: { INVENTORY_CRASHABLE: "1" } } });
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

const MISBEHAVING_SERVER = join(ROOT, "test", "mcp", "fixtures", "misbehaving-server.mjs");
const misbehaving = (mode = "", env: Record<string, string> = {}) => ({ cwd: process.cwd(), command: process.execPath, args: [MISBEHAVING_SERVER], env: { MISBEHAVE: mode, ...env } });

describe("a hostile upstream server", () => {
  it("one that always returns nextCursor is read for at most maxListPages pages; start-up ends and the tools so far are bound", async () => {
    const upstreams = await connectUpstreams({ loop: misbehaving("endless-cursor") }, { maxListPages: 25 });
    try {
      expect(upstreams.servers).toEqual([{ name: "loop", status: "connected", tools: Array.from({ length: 25 }, (_, i) => `t${i + 1}`) }]);
      expect(upstreams.warnings).toEqual(['MCP server "loop": listing its tools stopped because it still returned nextCursor after 25 pages; the 25 tools listed so far are bound']);
    } finally {
      await upstreams.close();
    }
  });

  it("one whose later page never answers is bounded by one start-up deadline for all pages together", async () => {
    const upstreams = await connectUpstreams({ stall: misbehaving("stall-page-2") }, { startupTimeoutMs: 1500 });
    try {
      expect(upstreams.servers).toEqual([{ name: "stall", status: "connected", tools: ["first"] }]);
      expect(upstreams.warnings).toEqual(['MCP server "stall": listing its tools stopped at page 2 (MCP error -32001: Request timed out); the 1 tools of the first 1 pages are bound']);
    } finally {
      await upstreams.close();
    }
  });

  it("an answer over the message limit fails that call only; the server stays connected for the next call", async () => {
    const upstreams = await connectUpstreams({ fs: misbehaving() }, { maxMessageBytes: 1024 * 1024 });
    const cm = await createCodemode({ tools: upstreams.tools, agentDirs: [], workers: { min: 0 } });
    try {
      const result = await cm.run(`
        const out = [];
        try { await tools.fs.big({ mb: 3 }); out.push("no error"); } catch (e) { out.push(e.code + ": " + e.message); }
        out.push(await tools.fs.echo({ path: "after" }));
        out.push((await tools.fs.big({ mb: 0.5 })).length);
        return out;`);
      expect(result.structuredContent.value).toEqual([
        `tool_failed: MCP server "fs" could not run "big": MCP error -32000: the server's answer is a 3.0 MiB message, over the 1.0 MiB limit for one message from an upstream MCP server; it was refused (the server stays connected): ask for less, e.g. a narrower query or one page at a time`,
        'echo {"path":"after"}',
        512 * 1024,
      ]);
    } finally {
      await cm.close();
      await upstreams.close();
    }
  });

  it("counts a tool as read-only only when the server annotates it so or the configuration lists it", async () => {
    const upstreams = await connectUpstreams({ fs: { ...misbehaving(), readOnlyTools: ["list_dir"] } });
    try {
      expect(upstreams.readOnlyTools).toEqual(["fs.read_file", "fs.list_dir"]);
    } finally {
      await upstreams.close();
    }
  });
});

describe("allow-lists and the read-only tier against upstream tools with workspace names", () => {
  it("a read-only script agent allowed read_file gets the workspace's, never an upstream server's; an annotated upstream tool it names is allowed", async () => {
    const root = mkdtempSync(join(tmpdir(), "ro-agent-"));
    writeFileSync(join(root, "note.txt"), "workspace note\n");
    const upstreams = await connectUpstreams({ fs: misbehaving() });
    const program = `
      const out = {};
      for (const [name, call] of Object.entries({
        ws: () => tools.read_file({ path: "note.txt" }),
        upstream: () => tools.fs.read_file({ path: "/root/.ssh/id_rsa" }),
        upstreamWrite: () => tools.fs.write_file({ path: "/etc/x" }),
      })) { try { const r = await call(); out[name] = typeof r === "string" ? r : r.content; } catch (e) { out[name] = e.code ?? e.message; } }
      text(JSON.stringify(out));`;
    const cm = await createCodemode({
      cwd: root,
      agentDirs: [],
      tools: [...workspaceTools({ root }), ...upstreams.tools],
      readOnlyTools: upstreams.readOnlyTools,
      agents: [
        { name: "bare", description: "d", driver: "script", readOnly: true, tools: ["read_file"], scriptCode: program },
        { name: "named", description: "d", driver: "script", readOnly: true, tools: ["read_file", "fs.read_file", "fs.write_file"], scriptCode: program },
      ],
      workers: { min: 0 },
    });
    try {
      const outputOf = (agent: string) =>
        cm.run(
          `await tools.ptc_subagent({ agent: "${agent}", task: "t" }); const { tasks } = await tools.ptc_task_list({}); return (await tools.ptc_task_output({ task_id: tasks.at(-1).id })).output`,
        );
      const bare = await outputOf("bare");
      expect(JSON.parse(bare.structuredContent.value as string)).toEqual({
        ws: "workspace note",
        upstream: expect.stringMatching(/^tools\.fs is not a tool\./),
        upstreamWrite: expect.stringMatching(/^tools\.fs is not a tool\./),
      });
      const named = await outputOf("named");
      // fs.write_file is named but not declared read-only: a read-only agent does not get it.
      expect(JSON.parse(named.structuredContent.value as string)).toEqual({
        ws: "workspace note",
        upstream: "upstream read of /root/.ssh/id_rsa",
        upstreamWrite: expect.stringMatching(/^tools\.fs\.write_file is not a tool\./),
      });
    } finally {
      await cm.close();
      await upstreams.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
