// The `jsonl` protocol of the command driver, and the JSON-line parsing its adapters share.
import type { DriverEvent } from "../agents.js";

/**
 * The command driver's own JSON-lines protocol (docs/command-protocol.md). Each stdout line that
 * is a JSON object with a known `type` is an event; every other line is plain output text.
 */
export function jsonlLineToEvents(line: string): DriverEvent[] {
  const obj = parseObject(line);
  if (!obj) return [{ type: "text", text: line + "\n" }];
  switch (obj.type) {
    case "text":
      return typeof obj.text === "string" ? [{ type: "text", text: obj.text }] : [];
    case "usage": {
      const input = count(obj.input_tokens);
      const output = count(obj.output_tokens);
      const ev: DriverEvent = { type: "usage", input, output };
      if (typeof obj.cost_usd === "number" && Number.isFinite(obj.cost_usd) && obj.cost_usd >= 0) ev.cost = obj.cost_usd;
      return [ev];
    }
    case "turn":
      return [{ type: "turn" }];
    case "report": {
      const { type: _type, ...report } = obj;
      return [{ type: "report", report }];
    }
    case "error":
      return [{ type: "error", message: typeof obj.message === "string" ? obj.message : "the child reported an error" }];
    default:
      return [{ type: "text", text: line + "\n" }];
  }
}

export function parseObject(line: string): Record<string, unknown> | undefined {
  const t = line.trim();
  if (!t.startsWith("{")) return undefined;
  try {
    const v: unknown = JSON.parse(t);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}
