import { describe, it, expect, beforeAll, afterAll, afterEach } from "vitest";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { AgentRegistry, TaskHost, type TaskError, memoryTaskStore, type AgentInput, type ChildToolProvider } from "../../src/tasks/index.js";

interface Exchange {
  auth: string | undefined;
  body: { model: string; messages: Array<Record<string, unknown>>; tools?: Array<{ function: { name: string } }>; temperature?: number };
}

/** A local server speaking the chat-completions protocol; each test queues the replies it wants. */
let server: Server;
let baseUrl: string;
const seen: Exchange[] = [];
let replies: Array<{ status?: number; body: unknown }> = [];

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = "";
    req.on("data", (d) => (s += d)).on("end", () => resolve(s));
  });
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const raw = await readBody(req);
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(404).end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    seen.push({ auth: req.headers.authorization, body: JSON.parse(raw) });
    const reply = replies.shift() ?? { status: 500, body: { error: { message: "no reply queued" } } };
    res.writeHead(reply.status ?? 200, { "content-type": "application/json" }).end(JSON.stringify(reply.body));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const hosts: TaskHost[] = [];
afterEach(async () => {
  seen.length = 0;
  replies = [];
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

function completion(message: Record<string, unknown>, prompt: number, completionTokens: number) {
  return {
    body: {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "test-model",
      choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: message.tool_calls ? "tool_calls" : "stop" }],
      usage: { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens },
    },
  };
}

const toolCalls: Array<{ name: string; args: unknown; ctx: unknown }> = [];
const provider: ChildToolProvider = {
  list: () => [
    { path: "read_file", name: "read_file", description: "reads", parameters: { type: "object", properties: { path: { type: "string" } } }, readOnly: true },
    { path: "write_file", name: "write_file", description: "writes", parameters: { type: "object" }, readOnly: false },
    { path: "search_files", name: "search_files", description: "searches", parameters: { type: "object" }, readOnly: true },
  ],
  call: async (name, args, ctx) => {
    toolCalls.push({ name, args, ctx: { depth: ctx.depth, taskId: ctx.taskId } });
    return `contents of ${(args as { path: string }).path}`;
  },
};

function host(agent: Partial<AgentInput>): TaskHost {
  const a = { name: "oa", description: "d", driver: "openai", model: "test-model", baseUrl, prompt: "You are terse.", ...agent } as AgentInput;
  const h = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents: [a], dirs: [] }), childTools: provider });
  hosts.push(h);
  return h;
}

describe("openai driver against a local chat-completions server", () => {
  it("runs the tool-calling loop over the agent's read-only tools and counts usage from the API", async () => {
    process.env.CODEMODE_TEST_KEY = "sk-test";
    toolCalls.length = 0;
    const h = host({ tools: ["read_file", "write_file"], readOnly: true, prices: { input: 1, output: 4 }, apiKeyEnv: "CODEMODE_TEST_KEY", temperature: 0 });
    replies = [
      completion(
        {
          content: null,
          tool_calls: [
            { id: "c1", type: "function", function: { name: "read_file", arguments: '{"path":"a.ts"}' } },
            { id: "c2", type: "function", function: { name: "write_file", arguments: '{"path":"a.ts"}' } },
          ],
        },
        100,
        20,
      ),
      completion({ content: "a.ts looks fine. I used 0 tokens." }, 150, 30),
    ];
    const rec = await h.spawn({ agent: "oa", task: "check a.ts" });
    const usage = { input: 250, output: 50, cost: (250 * 1 + 50 * 4) / 1e6, turns: 2 };
    expect([rec.status, rec.readOnlyTier, rec.usage, rec.model]).toStrictEqual(["succeeded", "enforced", usage, "test-model"]);
    expect(h.output(rec.id).output).toBe("a.ts looks fine. I used 0 tokens.");
    // write_file is not offered to a read-only agent, and a call to it is refused without running.
    expect(seen[0]!.body.tools!.map((t) => t.function.name)).toStrictEqual(["read_file"]);
    expect(toolCalls).toStrictEqual([{ name: "read_file", args: { path: "a.ts" }, ctx: { depth: 1, taskId: rec.id } }]);
    expect(seen[0]!.auth).toBe("Bearer sk-test");
    expect(seen[0]!.body.temperature).toBe(0);
    expect(seen[0]!.body.messages).toStrictEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "check a.ts" },
    ]);
    expect(seen[1]!.body.messages.slice(2)).toStrictEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "read_file", arguments: '{"path":"a.ts"}' } },
          { id: "c2", type: "function", function: { name: "write_file", arguments: '{"path":"a.ts"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "contents of a.ts" },
      { role: "tool", tool_call_id: "c2", content: 'error: tool "write_file" is not available to this agent; available tools: read_file' },
    ]);
  });

  it("fails on max_turns with the usage spent so far, and on HTTP errors", async () => {
    const h = host({ tools: ["read_file"], maxTurns: 1 });
    replies = [completion({ content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: '{"path":"x"}' } }] }, 10, 5)];
    let err = (await h.spawn({ agent: "oa", task: "t" }).catch((e: unknown) => e)) as TaskError;
    let rec = h.get(err.taskId!)!;
    expect([rec.status, rec.usage, rec.errorMessage]).toStrictEqual([
      "failed",
      { input: 10, output: 5, cost: 0, turns: 1 },
      "the model did not give a final answer within max_turns (1); raise max_turns in the agent definition or narrow the task",
    ]);
    replies = [{ status: 401, body: { error: { message: "bad key" } } }];
    err = (await h.spawn({ agent: "oa", task: "t" }).catch((e: unknown) => e)) as TaskError;
    rec = h.get(err.taskId!)!;
    expect(rec.errorMessage).toBe('chat completions returned HTTP 401: {"error":{"message":"bad key"}}; set OPENAI_API_KEY to a valid API key');
  });
});
