// What a program gets is what the tool returned: upstream MCP tools without an outputSchema give
// programs their structuredContent (else their text), and unknown input keys are refused — from a
// program, through cm.callTool and through `codemode mcp` — naming the closest known key.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, type Codemode } from "../../src/index.js";
import { connectUpstreams, type Upstreams } from "../../src/mcp/upstream.js";
import { CLI, ROOT, tempProject } from "./helpers.js";

const UNTYPED_SERVER = join(ROOT, "test", "mcp", "fixtures", "untyped-server.mjs");

describe("upstream tools without an outputSchema", () => {
  let upstreams: Upstreams;
  let cm: Codemode;
  beforeAll(async () => {
    upstreams = await connectUpstreams({ untyped: { cwd: process.cwd(), command: process.execPath, args: [UNTYPED_SERVER], env: {} } });
    cm = await createCodemode({ tools: upstreams.tools, workers: { min: 0 } });
  });
  afterAll(async () => {
    await cm?.close();
    await upstreams?.close();
  });

  it("give a program the structuredContent the server sent, and the model its text", async () => {
    const result = await cm.run(`const w = await tools.untyped.weather({ city: "Oslo" }); return { celsius: w.celsius, type: typeof w, motto: await tools.untyped.motto() }`);
    expect(result.structuredContent.value).toStrictEqual({ celsius: 21, type: "object", motto: "measure, do not guess" });
    const direct = await cm.callTool("untyped.weather", { city: "Oslo" });
    expect(direct.content).toStrictEqual([{ type: "text", text: "Oslo: 21 °C, clear" }]);
    expect(Object.hasOwn(direct, "structuredContent")).toBe(false);
  });

  it("are declared as resolving to unknown", () => {
    const declarations = cm.declarations();
    expect(declarations).toContain("function weather(args?: {\n      city?: string;\n      [key: string]: unknown;\n    }): Promise<unknown>;");
    expect(declarations).not.toContain("Promise<string>");
  });

  it("refuse keys a closed input schema does not know, before the server is called", async () => {
    const result = await cm.run(`await tools.untyped.strict({ limt: 3 })`);
    expect(result.structuredContent.error).toMatchObject({ kind: "exception", message: 'ToolError: tool "untyped.strict" input has unknown key "limt"; did you mean "limit"?', line: 1, column: 27 });
  });
});

describe("unknown input keys through cm.callTool and codemode mcp", () => {
  it("ptc_subagent({ backgroud: true }) is refused with the closest key instead of running in the foreground", async () => {
    const cm = await createCodemode({ workers: { min: 0 }, agents: [{ name: "echo", description: "echo", driver: "script", scriptCode: "text(task)" }] });
    try {
      const direct = await cm.callTool("ptc_subagent", { agent: "echo", task: "hi", backgroud: true });
      expect(direct).toStrictEqual({
        content: [{ type: "text", text: 'tool "ptc_subagent" input has unknown key "backgroud"; did you mean "background"?' }],
        structuredContent: { error: { code: "tool_invalid_input", reason: "schema_invalid", message: 'tool "ptc_subagent" input has unknown key "backgroud"; did you mean "background"?' } },
        isError: true,
      });
      const program = await cm.run(`const t = await tools.ptc_subagent({\n  agent: "echo", task: "hi", backgroud: true });`);
      expect(program.content[0]!.text.split("\n")[0]).toBe(
        'Script failed (exception): ToolError: tool "ptc_subagent" input has unknown key "backgroud"; did you mean "background"? (line 1, column 35)',
      );
      // Nothing ran: no task was created.
      expect(cm.tasks.store.list({}).total).toBe(0);
    } finally {
      await cm.close();
    }
  });

  it("the same through the MCP server", async () => {
    const cwd = tempProject({});
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp"], cwd, stderr: "pipe" });
    const client = new Client({ name: "codemode-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: "ptc_task_list", arguments: { statuss: ["running"] } });
      expect(result.isError).toBe(true);
      expect(result.content).toStrictEqual([{ type: "text", text: 'tool "ptc_task_list" input has unknown key "statuss"; did you mean "status"?' }]);
    } finally {
      await client.close();
    }
  });
});
