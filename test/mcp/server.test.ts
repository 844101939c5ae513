// `codemode mcp` through the official SDK client over stdio, as an MCP host would use it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BINDING_CONTRACT, createCodemode } from "../../src/index.js";
import { CLI, inventoryConfig, tempProject } from "./helpers.js";

async function connect(cwd: string, args: string[] = []): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp", ...args], cwd, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "codemode-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const text = (result: Record<string, unknown>) => (result.content as Array<{ type: string; text: string }>).map((block) => block.text).join("\n");

describe("codemode mcp", () => {
  let client: Client;
  let stderr: () => string;
  let runtimeToolIds: string[];

  beforeAll(async () => {
    const cwd = tempProject(inventoryConfig({ broken: { command: "/nonexistent/codemode-test-server" } }), { "notes.md": "line one\nline two\n" });
    mkdirSync(join(cwd, ".codemode", "agents"), { recursive: true });
    writeFileSync(join(cwd, ".codemode", "agents", "shout.md"), "---\nname: shout\ndescription: upper-cases its task\ndriver: script\nscript: shout.js\n---\nShouts.\n");
    writeFileSync(join(cwd, ".codemode", "agents", "shout.js"), "text(task.toUpperCase() + '!')");
    writeFileSync(
      join(cwd, ".codemode", "agents", "crash.md"),
      `---\nname: crash\ndescription: always fails\ndriver: command\ncommand: [${JSON.stringify(process.execPath)}, "-e", "process.stderr.write('disk full'); process.exit(3)"]\n---\nFails.\n`,
    );
    ({ client, stderr } = await connect(cwd));
    // What the runtime itself offers a model, whatever it grows to: the server lists exactly that.
    const cm = await createCodemode({ workers: { min: 0 } });
    runtimeToolIds = cm.tools.map((tool) => tool.id);
    await cm.close();
  });
  afterAll(async () => {
    await client?.close();
  });

  it("lists the runtime's own tools with input schemas (and output schemas where they have one)", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(runtimeToolIds);
    expect(runtimeToolIds).toEqual(expect.arrayContaining(["ptc_run_code", "tool_info"]));
    for (const tool of tools) expect(tool.inputSchema.type).toBe("object");
    const run = tools.find((tool) => tool.name === "ptc_run_code")!;
    // code, or resume (with approvals) to continue an interrupted run: neither is required alone.
    expect(Object.hasOwn(run.inputSchema, "required")).toBe(false);
    expect(Object.keys(run.inputSchema.properties!)).toEqual(["code", "timeout_ms", "session", "resume", "approvals"]);
    expect(run.outputSchema?.required).toEqual(["duration_ms", "status", "tool_calls"]);
    // The description is the binding contract plus declarations of what programs can reach:
    // the upstream server's tools and the workspace tools, which are not listed themselves.
    expect(run.description!.startsWith(BINDING_CONTRACT)).toBe(true);
    expect(run.description).toContain("get_item");
    expect(run.description).toContain("read_file");
    expect(tools.some((tool) => tool.name.startsWith("inventory."))).toBe(false);
    // zod's ±(2^53 - 1) bounds of integers are nowhere in the listing.
    expect(JSON.stringify(tools)).not.toContain("9007199254740991");
  });

  it("gives every tool a title and annotations: what it changes, whether again changes more, whether it reaches outside", async () => {
    const { tools } = await client.listTools();
    const hints = (readOnlyHint: boolean, destructiveHint: boolean, idempotentHint: boolean, openWorldHint: boolean) => ({ readOnlyHint, destructiveHint, idempotentHint, openWorldHint });
    const expected: Record<string, [string, ReturnType<typeof hints>]> = {
      ptc_subagent: ["Run a subagent", hints(false, true, false, true)],
      ptc_task_list: ["List subagent tasks", hints(true, false, true, false)],
      ptc_task_output: ["Read a task's output", hints(true, false, true, false)],
      ptc_task_stop: ["Stop a task", hints(false, true, true, false)],
      ptc_task_wait: ["Wait for tasks", hints(true, false, true, false)],
      ptc_workflow: ["Run a workflow", hints(false, true, false, true)],
      tool_info: ["Describe a tool", hints(true, false, true, false)],
      tool_search: ["Search the tools", hints(true, false, true, false)],
      ptc_run_code: ["Run a codemode program", hints(false, true, false, true)],
    };
    expect(Object.fromEntries(tools.map((tool) => [tool.name, { title: tool.title, annotations: tool.annotations }]))).toStrictEqual(
      Object.fromEntries(Object.entries(expected).map(([name, [title, annotations]]) => [name, { title, annotations: { title, ...annotations } }])),
    );
  });

  it("reports an upstream server that failed to start on stderr and in its instructions, and keeps serving", () => {
    expect(client.getInstructions()?.split("\n").slice(1)).toEqual([
      "Upstream MCP servers bound in programs: tools.inventory.* (4 tools).",
      'Warning: MCP server "inventory": tool "list_skus" is skipped: programs would reach it as tools.inventory.list_skus, like "list-skus"',
      'Warning: MCP server "inventory": tool "bad name" cannot be bound: defineTool: "name" must be 1–128 characters of letters, digits, "_", "-" or ".", not starting with "-" or ".", received "bad name"',
      'Warning: MCP server "broken" (/nonexistent/codemode-test-server) failed to start: spawn /nonexistent/codemode-test-server ENOENT; its tools are not available (tools.broken.*)',
    ]);
    expect(stderr()).toContain(
      'codemode: warning: MCP server "broken" (/nonexistent/codemode-test-server) failed to start: spawn /nonexistent/codemode-test-server ENOENT; its tools are not available (tools.broken.*)',
    );
  });

  it("runs a program through ptc_run_code: content for the model, structuredContent for the host", async () => {
    const code = `const item = await tools.inventory.get_item({ sku: "A-1" });
const notes = await tools.read_file({ path: "notes.md" });
text(\`\${item.name}: \${item.stock}; notes have \${notes.total_lines} lines\`);
return item.stock;`;
    const result = await client.callTool({ name: "ptc_run_code", arguments: { code } });
    expect(result.isError).toBeUndefined();
    expect(text(result)).toBe("anvil: 3; notes have 2 lines\n\nWarnings:\n- the return value (1 byte of JSON) is not shown because the program printed with text(); text() it to see it here");
    expect(result.structuredContent).toMatchObject({ status: "ok", value: 3, tool_calls: 2 });
  });

  it("a program lists tasks, spawns a background subagent, polls it and reads its output", async () => {
    const code = `const before = await tools.ptc_task_list({});
const handle = await tools.ptc_subagent({ agent: "shout", task: "hello", background: true, label: "shout-1" });
let out;
do { await sleep(20); out = await tools.ptc_task_output({ task_id: handle.task_id }); } while (out.status === "queued" || out.status === "running");
const after = await tools.ptc_task_list({});
return { before: before.count, handle: [handle.status, handle.report_channel, "usage" in handle], status: out.status, output: out.output, usage: out.usage, after: after.tasks.map((t) => [t.label, t.status, t.depth]) };`;
    const result = await client.callTool({ name: "ptc_run_code", arguments: { code } });
    expect(result.isError, text(result)).toBeUndefined();
    expect((result.structuredContent as { value: unknown }).value).toEqual({
      before: 0,
      handle: ["running", "none", false],
      status: "succeeded",
      output: "HELLO!",
      usage: { input: 0, output: 0, cost: 0, turns: 1 },
      after: [["shout-1", "succeeded", 1]],
    });
    // The same records through the task tools called directly, as a model over MCP would.
    const list = await client.callTool({ name: "ptc_task_list", arguments: { status: ["succeeded"] } });
    const [task] = (list.structuredContent as { tasks: Array<{ id: string; label: string }> }).tasks;
    expect(task!.label).toBe("shout-1");
    expect(text(list)).toContain(`${task!.id} succeeded shout depth=1 "shout-1" 6B`);
    const output = await client.callTool({ name: "ptc_task_output", arguments: { task_id: task!.id } });
    expect(output.structuredContent).toMatchObject({ task_id: task!.id, status: "succeeded", output: "HELLO!", output_bytes: 6, usage: { turns: 1 } });
    expect(text(output)).toContain("usage: input=0 output=0 cost=0 turns=1");
    const stop = await client.callTool({ name: "ptc_task_stop", arguments: { task_id: task!.id } });
    expect(stop.isError).toBe(true);
    expect(text(stop)).toContain("it has already ended (succeeded); read its output with ptc_task_output or spawn a new task");
  });

  it("a client that cancels a call stops its program; the server keeps serving", async () => {
    const controller = new AbortController();
    const call = client.callTool({ name: "ptc_run_code", arguments: { session: "cancel", code: "let i = 0; for (;;) { store('ticks', ++i); await sleep(5); }" } }, undefined, {
      signal: controller.signal,
    });
    // Cancel once the program is visibly running (its session store is ticking).
    const ticks = async () => (await client.callTool({ name: "ptc_run_code", arguments: { session: "cancel", code: "return load('ticks') ?? 0" } })).structuredContent as { value: number };
    while ((await ticks()).value < 3) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    await expect(call).rejects.toThrow(/abort/i);
    // The cancellation reaches the server asynchronously; once it has, the count stops moving.
    let last = -1;
    let now = (await ticks()).value;
    for (let i = 0; i < 50 && now !== last; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      [last, now] = [now, (await ticks()).value];
    }
    expect(now).toBe(last);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await ticks()).value).toBe(now);
  });

  it("a failed program is an isError result whose structuredContent still matches the output schema", async () => {
    const result = await client.callTool({ name: "ptc_run_code", arguments: { code: `await tools.inventory.explode({});` } });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(
      // The rejection names the line of the call, with its code frame.
      "Script failed (exception): ToolError: the warehouse is on fire (line 1, column 30)\n1 | await tools.inventory.explode({});\n  |                              ^\n\nTool calls made before the failure (not undone):\n- tools.inventory.explode: error",
    );
    expect(result.structuredContent).toMatchObject({ status: "error", error: { kind: "exception", message: "ToolError: the warehouse is on fire" }, tool_calls: 1 });
  });

  it("a failed foreground subagent is an isError result whose structuredContent.error carries its task id", async () => {
    const result = await client.callTool({ name: "ptc_subagent", arguments: { agent: "crash", task: "go" } });
    expect(result.isError).toBe(true);
    const error = (result.structuredContent as { error: { task_id: string } }).error;
    const id = error.task_id;
    const message = `subagent task ${id} (agent "crash") failed: the command exited with code 3: disk full; its output and usage stay readable with ptc_task_output({ task_id: "${id}" })`;
    expect(result.structuredContent).toStrictEqual({ error: { code: "task_failed", message, task_id: id } });
    expect(text(result)).toBe(message);
    // The id is the task's: its usage is readable with it.
    const out = await client.callTool({ name: "ptc_task_output", arguments: { task_id: id } });
    expect(out.structuredContent).toMatchObject({ task_id: id, status: "failed", report_channel: "none", usage: { input: 0, output: 0, cost: 0, turns: 0 } });
  });

  it("a bad argument is an isError result that names the field and the expected type", async () => {
    const result = await client.callTool({ name: "ptc_run_code", arguments: { code: 42 } });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe('tool "ptc_run_code" input "code" must be string, received number');
    expect(result.structuredContent).toBeUndefined();
  });

  it("an unknown tool is an isError result listing the tools there are", async () => {
    const result = await client.callTool({ name: "ptc_run_kode", arguments: {} });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(`no tool named "ptc_run_kode"; this server offers: ${runtimeToolIds.join(", ")}`);
  });

  it("tool_info describes an upstream tool a program can reach", async () => {
    const result = await client.callTool({ name: "tool_info", arguments: { tool_id: "inventory.get_item" } });
    expect(result.isError).toBeUndefined();
    const descriptor = (result.structuredContent as { tool: { descriptor: Record<string, unknown> } }).tool.descriptor;
    expect(descriptor.id).toBe("inventory.get_item");
    expect(descriptor.description).toBe("Look up one item by SKU.");
    expect((descriptor.output_schema as { required: string[] }).required).toEqual(["name", "sku", "stock"]);
  });
});

describe("codemode mcp --no-output-schemas", () => {
  it("lists no output schema; results still carry structuredContent, and tool_info gives each contract", async () => {
    const cwd = tempProject(inventoryConfig());
    const { client } = await connect(cwd, ["--no-output-schemas"]);
    const { client: full } = await connect(cwd);
    try {
      const { tools } = await client.listTools();
      expect(tools.length).toBeGreaterThan(5);
      for (const tool of tools) expect(Object.hasOwn(tool, "outputSchema"), tool.name).toBe(false);
      const withSchemas = (await full.listTools()).tools;
      expect(tools.map((tool) => tool.name)).toStrictEqual(withSchemas.map((tool) => tool.name));
      expect(JSON.stringify(tools).length).toBeLessThan(JSON.stringify(withSchemas).length / 2);
      expect(client.getInstructions()).toContain("No output schemas are listed: results still carry structuredContent; tool_info({ tool_id }) gives a tool's output_schema (and output_views).");
      const run = await client.callTool({ name: "ptc_run_code", arguments: { code: 'return (await tools.inventory.get_item({ sku: "A-1" })).stock' } });
      expect(run.structuredContent).toMatchObject({ status: "ok", value: 3, tool_calls: 1 });
      const list = await client.callTool({ name: "ptc_task_list", arguments: {} });
      expect(list.structuredContent).toStrictEqual({ tasks: [], count: 0 });
      // A failed call's error record reaches the client too: no schema holds it back.
      const stop = await client.callTool({ name: "ptc_task_stop", arguments: { task_id: "nope" } });
      expect(stop.isError).toBe(true);
      expect((stop.structuredContent as { error: { code: string } }).error.code).toBe("task_not_found");
      const info = await client.callTool({ name: "tool_info", arguments: { tool_id: "ptc_task_list" } });
      const descriptor = (info.structuredContent as { tool: { descriptor: { output_views: { compact: { schema: { required: string[] } } } } } }).tool.descriptor;
      expect(descriptor.output_views.compact.schema.required).toStrictEqual(["count", "tasks"]);
    } finally {
      await client.close();
      await full.close();
    }
  });
});

describe("codemode mcp --all-tools", () => {
  it("also lists the bound tools, callable directly with their structuredContent", async () => {
    const { client } = await connect(tempProject(inventoryConfig()), ["--all-tools"]);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(["ptc_run_code", "tool_info", "read_file", "list_files", "search_files", "inventory.get_item", "inventory.list-skus"]));
      expect(names).not.toContain("write_file");
      // The workspace tools state what they do; an upstream tool that states nothing is listed claiming nothing.
      const read = tools.find((tool) => tool.name === "read_file")!;
      expect([read.title, read.annotations]).toStrictEqual(["Read a file", { title: "Read a file", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }]);
      const item = tools.find((tool) => tool.name === "inventory.get_item")!;
      expect([Object.hasOwn(item, "title"), Object.hasOwn(item, "annotations")]).toStrictEqual([false, false]);
      // A tool with result views accepts either view as its result, or the error record of a failed call.
      const list = tools.find((tool) => tool.name === "list_files")!;
      const anyOf = (list.outputSchema as unknown as { anyOf: Array<{ required?: string[] }> }).anyOf;
      expect([anyOf.length, anyOf[2]!.required]).toStrictEqual([3, ["error"]]);
      const result = await client.callTool({ name: "inventory.get_item", arguments: { sku: "B-2" } });
      expect(text(result)).toBe("bucket: 0 in stock");
      expect(result.structuredContent).toEqual({ sku: "B-2", name: "bucket", stock: 0, warehouse: "south" });
      const full = await client.callTool({ name: "list_files", arguments: { pattern: "*.json", result_view: "full" } });
      expect((full.structuredContent as { files: string[]; entries: unknown[] }).files).toEqual(["codemode.json"]);
      expect((full.structuredContent as { entries: unknown[] }).entries).toHaveLength(1);
    } finally {
      await client.close();
    }
  });
});
