import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentRegistry, TaskHost, allowedChildTools, memoryTaskStore } from "../../src/tasks/index.js";
import { defineTool, z } from "../../src/index.js";
import { childToolProvider } from "../../src/ptc/index.js";
import { workspaceTools } from "../../src/workspace/index.js";

let server: Server;
let baseUrl: string;
let root: string;
const requests: Array<{ tools?: Array<{ function: { name: string; parameters: Record<string, unknown> } }>; messages: Array<Record<string, unknown>> }> = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "child-tools-"));
  writeFileSync(join(root, "a.txt"), "line one\nline two\n");
  // First reply: call read_file and write_file; second: answer.
  server = createServer((req, res) => {
    let raw = "";
    req
      .on("data", (d) => (raw += d))
      .on("end", () => {
        const body = JSON.parse(raw);
        requests.push(body);
        const first = body.messages.length === 1;
        const message = first
          ? {
              role: "assistant",
              content: null,
              tool_calls: [
                { id: "c1", type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: "a.txt", start_line: 2 }) } },
                { id: "c2", type: "function", function: { name: "write_file", arguments: JSON.stringify({ path: "b.txt", content: "x" }) } },
                { id: "c3", type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: "../etc/passwd" }) } },
              ],
            }
          : { role: "assistant", content: "read it" };
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 1 } }));
      });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(root, { recursive: true, force: true });
});

describe("childToolProvider", () => {
  it("offers a read-only openai child only read-only workspace tools, through invokeTool", async () => {
    const host = new TaskHost({
      store: memoryTaskStore(),
      agents: new AgentRegistry({
        dirs: [],
        agents: [{ name: "ro", description: "d", driver: "openai", model: "m", baseUrl, readOnly: true, tools: ["read_file", "write_file"] }],
      }),
      childTools: childToolProvider(workspaceTools({ root, write: true })),
    });
    const rec = await host.spawn({ agent: "ro", task: "read a.txt" });
    expect([rec.status, rec.readOnlyTier, rec.usage]).toStrictEqual(["succeeded", "enforced", { input: 10, output: 2, cost: 0, turns: 2 }]);
    expect(requests[0]!.tools!.map((t) => t.function.name)).toStrictEqual(["read_file"]);
    expect(requests[0]!.tools![0]!.function.parameters).toMatchObject({ type: "object", required: ["path"] });
    expect(requests[1]!.messages.slice(1)).toStrictEqual([
      requests[1]!.messages[1],
      { role: "tool", tool_call_id: "c1", content: "a.txt lines 2-2 of 2\nline two" },
      { role: "tool", tool_call_id: "c2", content: 'error: tool "write_file" is not available to this agent; available tools: read_file' },
      { role: "tool", tool_call_id: "c3", content: 'error: "path" "../etc/passwd" leads outside the workspace root; pass a path inside it' },
    ]);
    expect(existsSync(join(root, "b.txt"))).toBe(false);
    await host.close();
  });
});

describe("childToolProvider and tools of the same name", () => {
  it("names tools by full path: an upstream fs.read_file neither shadows nor is mistaken for the workspace read_file", async () => {
    const upstreamRead = defineTool({ name: "read_file", namespace: "fs", description: "upstream read", input: z.object({ path: z.string() }), execute: async ({ path }) => `UPSTREAM ${path}` });
    const provider = childToolProvider([...workspaceTools({ root }), upstreamRead]);
    const listed = provider.list();
    expect(listed.filter((t) => t.path.endsWith("read_file")).map((t) => [t.path, t.name, t.readOnly])).toStrictEqual([
      ["read_file", "read_file", true],
      ["fs.read_file", "fs__read_file", false],
    ]);
    expect(allowedChildTools(listed, ["read_file"], true).map((t) => t.path)).toStrictEqual(["read_file"]);
    expect(allowedChildTools(listed, ["fs.read_file"], true)).toStrictEqual([]);
    expect(allowedChildTools(listed, ["fs.read_file"], false).map((t) => t.name)).toStrictEqual(["fs__read_file"]);
    const ctx = { signal: new AbortController().signal, depth: 1, taskId: "T" };
    expect(await provider.call("read_file", { path: "a.txt" }, ctx)).toBe("a.txt lines 1-2 of 2\nline one\nline two");
    expect(await provider.call("fs.read_file", { path: "a.txt" }, ctx)).toBe("UPSTREAM a.txt");
  });
});
