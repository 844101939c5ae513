// The `openai` driver: an OpenAI-compatible chat-completions endpoint in a tool-calling loop over
// the tools the agent allows (read-only ones only, for a read-only agent: the `enforced` tier).
// Usage comes from the API's `usage` fields, cost from the agent's prices.
import type { Driver, ChildToolDescriptor, ChildToolProvider } from "./types.js";
import { formatBytes, messageOf } from "../../text.js";

const DEFAULT_BASE_URL = "https://api.openai.com/v1";
const DEFAULT_MAX_TURNS = 20;
const ERROR_BODY_TAIL = 500;
/** Largest chat-completions response read; an endpoint that streams more fails the task. */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

interface ChatResponse {
  choices?: Array<{ message?: { content?: string | null; tool_calls?: ToolCall[] }; finish_reason?: string }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

/**
 * The tools an openai child may call: those the agent lists by their full path (an upstream
 * server's `fs.read_file` is not the workspace's `read_file`), and only read-only ones for a
 * read-only agent.
 */
export function allowedChildTools(all: readonly ChildToolDescriptor[], allow: readonly string[] | undefined, readOnly: boolean): ChildToolDescriptor[] {
  if (!allow?.length) return [];
  return all.filter((t) => allow.includes(t.path) && (!readOnly || t.readOnly));
}

/**
 * An OpenAI-compatible `/chat/completions` loop: the model answers or calls tools, tool results go
 * back as `tool` messages, until a final answer or `max_turns`. Usage comes from each response's
 * `usage` fields; cost from the agent's prices.
 */
export const openaiDriver: Driver = async ({ task, agent, signal, emit, childTools, trace }) => {
  const baseUrl = (agent.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
  const keyEnv = agent.apiKeyEnv ?? "OPENAI_API_KEY";
  const apiKey = process.env[keyEnv];
  const tools = allowedChildTools(childTools?.list() ?? [], agent.tools, agent.readOnly);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const maxTurns = agent.maxTurns ?? DEFAULT_MAX_TURNS;

  const messages: ChatMessage[] = [];
  if (agent.prompt) messages.push({ role: "system", content: agent.prompt });
  messages.push({ role: "user", content: task.task });

  for (let turn = 1; turn <= maxTurns; turn++) {
    const body: Record<string, unknown> = { model: task.model ?? agent.model, messages };
    if (tools.length) {
      body.tools = tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } }));
    }
    if (agent.temperature !== undefined) body.temperature = agent.temperature;

    let res: Response;
    try {
      res = await fetch(`${baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
        body: JSON.stringify(body),
        signal,
      });
    } catch (err) {
      if (signal.aborted) return { exitCode: 1, error: "stopped" };
      return { exitCode: 1, error: `request to ${baseUrl}/chat/completions failed: ${messageOf(err)}; check the agent's base_url` };
    }
    const raw = await readBounded(res, MAX_RESPONSE_BYTES);
    emit({ type: "turn" });
    if (raw === undefined)
      return { exitCode: 1, error: `chat completions returned more than ${formatBytes(MAX_RESPONSE_BYTES)}; the endpoint at ${baseUrl} is not answering like a chat-completions API` };
    if (!res.ok) {
      const hint = res.status === 401 ? `; set ${keyEnv} to a valid API key` : "";
      return { exitCode: 1, error: `chat completions returned HTTP ${res.status}: ${raw.slice(-ERROR_BODY_TAIL)}${hint}` };
    }
    let data: ChatResponse;
    try {
      data = JSON.parse(raw) as ChatResponse;
    } catch {
      return { exitCode: 1, error: `chat completions returned a body that is not JSON: ${raw.slice(0, ERROR_BODY_TAIL)}` };
    }
    if (data.usage) {
      emit({ type: "usage", input: nonNegative(data.usage.prompt_tokens), output: nonNegative(data.usage.completion_tokens) });
    }
    const message = data.choices?.[0]?.message;
    if (!message) return { exitCode: 1, error: "chat completions returned no choices[0].message" };

    const calls = message.tool_calls ?? [];
    if (calls.length === 0) {
      const text = message.content ?? "";
      if (text) emit({ type: "text", text });
      return { exitCode: 0 };
    }
    messages.push({ role: "assistant", content: message.content ?? null, tool_calls: calls });
    for (const call of calls) {
      const content = await runToolCall(call, byName, { signal, depth: task.depth, taskId: task.id, ...(trace ? { trace } : {}) }, childTools);
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
  return { exitCode: 1, error: `the model did not give a final answer within max_turns (${maxTurns}); raise max_turns in the agent definition or narrow the task` };
};

async function runToolCall(call: ToolCall, allowed: Map<string, ChildToolDescriptor>, ctx: Parameters<ChildToolProvider["call"]>[2], provider: Parameters<Driver>[0]["childTools"]): Promise<string> {
  const name = call.function?.name;
  if (!provider || !allowed.has(name)) {
    // Refused, not executed: the child's tool set is exactly what the agent allows.
    const names = [...allowed.keys()];
    return `error: tool "${name}" is not available to this agent${names.length ? `; available tools: ${names.join(", ")}` : "; it has no tools"}`;
  }
  let args: unknown;
  try {
    args = call.function.arguments ? JSON.parse(call.function.arguments) : {};
  } catch {
    return `error: the arguments of tool "${name}" are not valid JSON; send a JSON object`;
  }
  try {
    return await provider.call(allowed.get(name)!.path, args, ctx);
  } catch (err) {
    return `error: ${messageOf(err)}`;
  }
}

function nonNegative(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

/** The body as text, or undefined once it passes `max` bytes (read no further). */
async function readBounded(res: Response, max: number): Promise<string | undefined> {
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
