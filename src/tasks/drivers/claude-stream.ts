// The `claude-stream-json` protocol of the command driver (docs/command-protocol.md).
import { createHash } from "node:crypto";
import type { DriverEvent } from "../agents.js";
import { count, parseObject } from "./jsonl.js";

/**
 * How many recent message ids the adapter remembers. Claude Code repeats a message's usage on the
 * consecutive lines of its content blocks, so one would do; a few more keep the count exact should
 * lines of a few messages interleave, and bound what a child printing a new id per line can make
 * the host keep.
 */
export const CLAUDE_TRACKED_MESSAGES = 16;

/** An id longer than this is remembered by its hash: a child's id is not held at its own length. */
const MAX_ID_KEY = 128;

/**
 * Adapter for Claude Code's `--output-format stream-json` (with `--verbose`): one JSON object per
 * line — `system` init, `assistant` and `user` messages, and a final `result`.
 *
 * Claude Code emits one `assistant` line per content block, each repeating its message's usage, so
 * usage is counted once per message id (the last reading wins) and each message is one turn.
 * Only the last {@link CLAUDE_TRACKED_MESSAGES} ids are remembered (a long one by its hash): an id
 * seen again after that many other messages counts as a new message. A line without an id is a
 * message of its own.
 */
export class ClaudeStreamAdapter {
  /** Recent message ids (or their hashes), least recently seen first, with the usage read so far. */
  private readonly usageById = new Map<string, { input: number; output: number }>();
  private sawText = false;

  /** What the adapter holds about messages: how many it remembers and the longest key (for tests). */
  get retained(): { messages: number; longestKey: number } {
    let longestKey = 0;
    for (const key of this.usageById.keys()) longestKey = Math.max(longestKey, key.length);
    return { messages: this.usageById.size, longestKey };
  }

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
    const key = typeof m.id === "string" ? idKey(m.id) : undefined;
    const before = key === undefined ? undefined : this.usageById.get(key);
    if (!before) events.push({ type: "turn" });
    let seen = before ?? { input: 0, output: 0 };
    if (m.usage) {
      const u = m.usage;
      const now = {
        input: count(u.input_tokens) + count(u.cache_creation_input_tokens) + count(u.cache_read_input_tokens),
        output: count(u.output_tokens),
      };
      const delta = { input: Math.max(0, now.input - seen.input), output: Math.max(0, now.output - seen.output) };
      seen = { input: Math.max(now.input, seen.input), output: Math.max(now.output, seen.output) };
      if (delta.input || delta.output) events.push({ type: "usage", ...delta });
    }
    if (key !== undefined) this.remember(key, seen);
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

  /** Remembers a message as the most recently seen, forgetting the oldest past the bound. */
  private remember(key: string, usage: { input: number; output: number }): void {
    this.usageById.delete(key);
    this.usageById.set(key, usage);
    if (this.usageById.size > CLAUDE_TRACKED_MESSAGES) this.usageById.delete(this.usageById.keys().next().value!);
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

function idKey(id: string): string {
  // The hash's length prefix keeps long ids of different lengths apart; a short id is kept as it is.
  return id.length <= MAX_ID_KEY ? id : `#${id.length}:${createHash("sha256").update(id).digest("base64")}`;
}
