// Progress notifications of `codemode mcp` for calls sent with a progressToken, through the SDK
// client's onprogress: a program's output so far and its subagents' status and output, for
// ptc_run_code, ptc_subagent and ptc_workflow. The subagent waits for a gate file the test creates
// only once a notification said the task was running: the notifications arrive while the call
// runs. On the wire, no notification of a call follows its result.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { JSONRPCMessage, Progress } from "@modelcontextprotocol/sdk/types.js";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createCodemode, defineTool } from "../../src/index.js";
import { createMcpServer } from "../../src/mcp/server.js";
import { CLI, tempProject } from "./helpers.js";

// Waits (at most 30 s) for the file named by its task, then says so and succeeds.
const GATE = `const fs = require("fs"); const file = process.argv[1]; process.stdout.write("waiting for the gate\\n");
const started = Date.now(); const timer = setInterval(() => {
  if (fs.existsSync(file)) { clearInterval(timer); process.stdout.write("gate opened\\n"); }
  else if (Date.now() - started > 30000) { clearInterval(timer); process.exit(1); }
}, 10);`;

describe("codemode mcp: progress notifications", () => {
  let client: Client;
  let cwd: string;
  const errors: Error[] = [];
  /** Every message from the server, in the order it was written. */
  const wire: JSONRPCMessage[] = [];
  let gates = 0;

  beforeAll(async () => {
    cwd = tempProject({});
    mkdirSync(join(cwd, ".codemode", "agents"), { recursive: true });
    writeFileSync(
      join(cwd, ".codemode", "agents", "gate.md"),
      `---\nname: gate\ndescription: waits for a file\ndriver: command\ncommand: [${JSON.stringify(process.execPath)}, "-e", ${JSON.stringify(GATE)}, "{task}"]\n---\nWaits.\n`,
    );
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp"], cwd, stderr: "pipe" });
    client = new Client({ name: "progress-test", version: "1.0.0" });
    // A notification for a call that has already answered would land here ("unknown token").
    client.onerror = (error) => errors.push(error);
    await client.connect(transport);
    const dispatch = transport.onmessage!;
    transport.onmessage = (...args: Parameters<typeof dispatch>) => {
      wire.push(args[0]);
      dispatch(...args);
    };
  });
  afterAll(async () => {
    await client?.close();
  });

  /** No progress notification of a request is written after that request's response. */
  function nothingAfterResults(): void {
    const answered = new Set<string | number>();
    for (const message of wire) {
      if ("id" in message && ("result" in message || "error" in message)) answered.add(message.id!);
      const token = "method" in message && message.method === "notifications/progress" ? (message.params as { progressToken: string | number }).progressToken : undefined;
      if (token !== undefined) expect(answered.has(token), JSON.stringify(message)).toBe(false);
    }
  }

  /** A fresh gate file, and an onprogress that opens it once a task is reported waiting at it. */
  function gated(): { gate: string; updates: Progress[]; onprogress: (p: Progress) => void; openedEarly: () => boolean } {
    const gate = join(cwd, `gate-${++gates}`);
    const updates: Progress[] = [];
    let opened = false;
    return {
      gate,
      updates,
      onprogress: (p) => {
        updates.push(p);
        if (!opened && /\(gate, .*\): running, .* last line: waiting for the gate/.test(p.message ?? "")) {
          opened = true;
          writeFileSync(gate, "open");
        }
      },
      openedEarly: () => opened,
    };
  }

  function expectCounting(updates: Progress[]): void {
    expect(updates.map((u) => u.progress)).toStrictEqual(updates.map((_, i) => i + 1));
    for (const update of updates) expect(Object.keys(update).sort()).toStrictEqual(["message", "progress"]);
  }

  it("ptc_run_code: the program's output so far and its subagent's status and output, while it runs", async () => {
    const run = gated();
    const code = `text("starting");\nconst done = await tools.ptc_subagent({ agent: "gate", task: ${JSON.stringify(run.gate)}, label: "the gate" });\ntext("gate says " + done.status);`;
    const result = await client.callTool({ name: "ptc_run_code", arguments: { code } }, undefined, { onprogress: run.onprogress });
    expect(result.isError).toBeUndefined();
    expect(result.content).toStrictEqual([{ type: "text", text: "starting\ngate says succeeded" }]);
    expect(run.openedEarly()).toBe(true);
    expect(existsSync(run.gate)).toBe(true);
    expectCounting(run.updates);
    const messages = run.updates.map((u) => u.message!);
    expect(messages).toContain("output so far: 8 bytes, last line: starting");
    expect(messages.some((m) => /^task \S+ \(gate, "the gate"\): running, 21 bytes of output, last line: waiting for the gate$/.test(m))).toBe(true);
    // How it ended is the result's to say; what was sent came before it.
    nothingAfterResults();
  });

  it("ptc_subagent: the task's status changes and output so far", async () => {
    const run = gated();
    const result = await client.callTool({ name: "ptc_subagent", arguments: { agent: "gate", task: run.gate } }, undefined, { onprogress: run.onprogress });
    expect(result.isError).toBeUndefined();
    expect(run.openedEarly()).toBe(true);
    expectCounting(run.updates);
    expect(run.updates.some((u) => /^task \S+ \(gate, ".*"\): running, 21 bytes of output, last line: waiting for the gate$/.test(u.message!))).toBe(true);
    expect(run.updates.some((u) => u.message!.startsWith("output so far"))).toBe(false);
    nothingAfterResults();
  });

  it("ptc_workflow: the workflow's task and its agent node's task", async () => {
    const run = gated();
    const workflow = `name: gated\ngraph:\n  nodes:\n    - id: wait\n      kind: run-agent\n      params:\n        agent: gate\n        prompt: ${JSON.stringify(run.gate)}\n`;
    const result = await client.callTool({ name: "ptc_workflow", arguments: { workflow } }, undefined, { onprogress: run.onprogress });
    expect(result.isError, JSON.stringify(result.content)).toBeUndefined();
    expect(run.openedEarly()).toBe(true);
    expectCounting(run.updates);
    const messages = run.updates.map((u) => u.message!);
    expect(
      messages.some((m) => /^task \S+ \(workflow, "gated"\): running/.test(m)),
      messages.join("\n"),
    ).toBe(true);
    expect(messages.some((m) => /^task \S+ \(gate, "wait"\): running, 21 bytes of output, last line: waiting for the gate$/.test(m))).toBe(true);
    nothingAfterResults();
  });

  it("a call without a progressToken gets none, and a tool that starts no task says nothing", async () => {
    errors.length = 0;
    const quiet = await client.callTool({ name: "ptc_run_code", arguments: { code: 'text("hi")' } });
    expect(quiet.content).toStrictEqual([{ type: "text", text: "hi" }]);
    const updates: Progress[] = [];
    const info = await client.callTool({ name: "tool_info", arguments: { tool_id: "read_file" } }, undefined, { onprogress: (p) => updates.push(p) });
    expect(info.isError).toBeUndefined();
    expect(updates).toStrictEqual([]);
    // Nothing arrived for a call that had already answered.
    expect(errors).toStrictEqual([]);
  });
});

describe("createMcpServer: a host tool's own progress, and the server's options", () => {
  it("forwards what a tool reports with ctx.progress while it runs; outputSchemas: false lists none", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const job = defineTool({
      name: "long_job",
      description: "Works in two steps.",
      input: z.object({}),
      output: z.object({ steps: z.number().int() }),
      execute: async (_input, ctx) => {
        ctx.progress?.("step 1 of 2: copying");
        await released;
        return { steps: 2 };
      },
    });
    const cm = await createCodemode({ tools: [job], workers: { min: 0 } });
    const server = createMcpServer(cm, { outputSchemas: false, progressIntervalMs: 20 });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "in-memory", version: "1.0.0" });
    await client.connect(clientSide);
    try {
      const { tools } = await client.listTools();
      expect(tools.filter((tool) => Object.hasOwn(tool, "outputSchema"))).toStrictEqual([]);
      const updates: Progress[] = [];
      const result = await client.callTool({ name: "long_job", arguments: {} }, undefined, {
        onprogress: (p) => {
          updates.push(p);
          release();
        },
      });
      expect(result.structuredContent).toStrictEqual({ steps: 2 });
      expect(updates[0]).toStrictEqual({ progress: 1, message: "step 1 of 2: copying" });
      // Without a token the tool reports to nobody and still works.
      expect((await cm.callTool("long_job", {})).structuredContent).toStrictEqual({ steps: 2 });
      await expect(cm.callTool("long_job", {}, { progress: "loud" as never })).rejects.toThrow(new TypeError('options.progress must be a function (message: string) => void, got the string "loud"'));
    } finally {
      await client.close();
      await cm.close();
    }
    expect(() => createMcpServer(cm, { progressIntervalMs: 0 })).toThrow(new TypeError('createMcpServer: "progressIntervalMs" must be a positive integer, received 0'));
  });
});
