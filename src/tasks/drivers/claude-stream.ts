// The `claude-stream-json` protocol of the command driver (docs/command-protocol.md).
import type { DriverEvent } from "../agents.js";
import { count, parseObject } from "./jsonl.js";

/**
 * Adapter for Claude Code's `--output-format stream-json` (with `--verbose`): one JSON object per
 * line — `system` init, `assistant` and `user` messages, and a final `result`.
 *
 * Claude Code emits one `assistant` line per content block, each repeating its message's usage, so
 * usage is counted once per message id (the last reading wins) and each message is one turn.
 */
export class ClaudeStreamAdapter {
  private readonly usageById = new Map<string, { input: number; output: number }>();
  private sawText = false;

  line(line: string): DriverEvent[] {
    const obj = parseObject(line);
    if (!obj) return [];
    if (obj.type === "assistant") return this.assistant(obj.message);
    if (obj.type === "result") return this.result(obj);
    return [];
  }

  private assistant(message: unknown): DriverEvent[] {
    if (message === null || typeof message !== "object") return [];
    const m = message as { id?: unknown; content?: unknown; usage?: Record<string, unknown> };
    const events: DriverEvent[] = [];
    const id = typeof m.id === "string" ? m.id : `anon-${this.usageById.size}`;
    if (!this.usageById.has(id)) events.push({ type: "turn" });
    if (m.usage) {
      const u = m.usage;
      const now = {
        input: count(u.input_tokens) + count(u.cache_creation_input_tokens) + count(u.cache_read_input_tokens),
        output: count(u.output_tokens),
      };
      const before = this.usageById.get(id) ?? { input: 0, output: 0 };
      const delta = { input: Math.max(0, now.input - before.input), output: Math.max(0, now.output - before.output) };
      this.usageById.set(id, { input: Math.max(now.input, before.input), output: Math.max(now.output, before.output) });
      if (delta.input || delta.output) events.push({ type: "usage", ...delta });
    } else if (!this.usageById.has(id)) {
      this.usageById.set(id, { input: 0, output: 0 });
    }
    if (Array.isArray(m.content)) {
      for (const block of m.content as Array<Record<string, unknown>>) {
        if (block?.type === "text" && typeof block.text === "string" && block.text.length > 0) {
          events.push({ type: "text", text: (this.sawText ? "\n" : "") + block.text });
          this.sawText = true;
        }
      }
    }
    return events;
  }

  private result(obj: Record<string, unknown>): DriverEvent[] {
    const events: DriverEvent[] = [];
    // The CLI meters its own cost (prices differ per model and cache tier); used only when the
    // agent definition carries no prices of its own.
    if (typeof obj.total_cost_usd === "number" && obj.total_cost_usd >= 0) {
      events.push({ type: "usage", input: 0, output: 0, cost: obj.total_cost_usd });
    }
    if (!this.sawText && typeof obj.result === "string" && obj.result.length > 0) {
      events.push({ type: "text", text: obj.result });
      this.sawText = true;
    }
    const subtype = typeof obj.subtype === "string" ? obj.subtype : "";
    if (obj.is_error === true || subtype.startsWith("error")) {
      const why = typeof obj.result === "string" && obj.result ? obj.result : subtype || "error";
      events.push({ type: "error", message: `claude reported an error: ${why}` });
    }
    return events;
  }
}
