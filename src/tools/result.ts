// What `execute` may return (toolResult), the error result of a failed call, and the value a
// program receives from a call (guestValue).
import { boundText, DEFAULT_OUTPUT_BUDGET, validateBudget, type BoundOutput } from "./budget.js";
import { describeValue, messageOf, ToolError } from "./errors.js";
import { isPlainObject, jsonClone } from "./json.js";
import { toolInternals, type Tool } from "./define.js";
import type { ToolCallResult, ToolResult } from "./types.js";

const TOOL_RESULT = Symbol.for("codemode-runtime.toolResult");

/**
 * Wraps a record with its own model text and/or details. A plain object `{ output, modelOutput }`
 * is recognised too; this helper is for records that might look like one (e.g. only `output`).
 */
export function toolResult<R>(output: R, extra: { modelOutput?: string; details?: unknown; isError?: boolean } = {}): ToolResult<R> {
  if (!isPlainObject(extra)) throw new TypeError(`toolResult: "extra" must be an object { modelOutput?, details?, isError? }, received ${describeValue(extra)}`);
  if (extra.modelOutput !== undefined && typeof extra.modelOutput !== "string") {
    throw new TypeError(`toolResult: "modelOutput" must be a string, received ${describeValue(extra.modelOutput)}`);
  }
  if (extra.isError !== undefined && typeof extra.isError !== "boolean") throw new TypeError(`toolResult: "isError" must be a boolean, received ${describeValue(extra.isError)}`);
  const result: ToolResult<R> = { output };
  if (extra.modelOutput !== undefined) result.modelOutput = extra.modelOutput;
  if (extra.isError === true) result.isError = true;
  if (Object.hasOwn(extra, "details")) result.details = extra.details;
  Object.defineProperty(result, TOOL_RESULT, { value: true, enumerable: false });
  return result;
}

/**
 * Whether `execute` returned a ToolResult rather than a bare record. A bare `{ output }` stays a
 * record: a ToolResult without modelOutput or details would mean nothing, while records with an
 * `output` field are common (command tools, task output). `brandedOnly` is for tools whose own
 * schema declares `output`: there only `toolResult()` can tell the two apart.
 */
export function asToolResult(value: unknown, options: { brandedOnly?: boolean } = {}): ToolResult<unknown> | undefined {
  if (!isPlainObject(value)) return undefined;
  if ((value as Record<symbol, unknown>)[TOOL_RESULT] === true) return value as unknown as ToolResult<unknown>;
  if (options.brandedOnly === true || !Object.hasOwn(value, "output")) return undefined;
  const keys = Object.keys(value);
  if (keys.length < 2 || !keys.every((k) => k === "output" || k === "modelOutput" || k === "details")) return undefined;
  return value as unknown as ToolResult<unknown>;
}

/**
 * The `isError` result a model sees for a failed call: the message as text (held to the budget by
 * the same cut as any content) and, for programs and hosts, `{ error: { code, reason?, message,
 * ...fields } }` — a ToolError's fields (e.g. `task_id`) travel there, not only in the prose.
 */
export function errorResult(err: unknown, options: { outputBudget?: number; boundOutput?: BoundOutput } = {}): ToolCallResult {
  const budget = validateBudget(options?.outputBudget, "errorResult: options.outputBudget");
  const bound = options?.boundOutput ?? boundText;
  if (typeof bound !== "function") throw new TypeError(`errorResult: options.boundOutput must be a function, received ${describeValue(bound)}`);
  const code = err instanceof ToolError ? err.code : "tool_failed";
  const message = messageOf(err);
  const error: Record<string, unknown> = { code };
  if (err instanceof ToolError && err.reason !== undefined) error.reason = err.reason;
  error.message = message;
  if (err instanceof ToolError && err.fields !== undefined) Object.assign(error, err.fields);
  return {
    content: [{ type: "text", text: bound(message, budget).text }],
    structuredContent: { error },
    isError: true,
  };
}

/**
 * What `await tools.x(args)` resolves to in a program, from a call's channels: `structuredContent`
 * for tools that declare an output (or views); for any other tool the record its `execute`
 * returned, passed as `record` (programs get what the tool returned, not its model text), or the
 * text when a host only kept the channels. A result flagged `isError` becomes a thrown ToolError
 * so a program can never mistake a failure for data.
 */
export function guestValue(tool: Tool, result: ToolCallResult, record?: { value: unknown }): unknown {
  toolInternals(tool, "guestValue: tool");
  if (!isPlainObject(result) || !Array.isArray(result.content)) {
    throw new TypeError(`guestValue: "result" must be a ToolCallResult { content: [...] }, received ${describeValue(result)}`);
  }
  const text = result.content.map((block) => (block && typeof block.text === "string" ? block.text : "")).join("\n");
  if (result.isError === true) {
    const error = isPlainObject(result.structuredContent) ? result.structuredContent.error : undefined;
    if (isPlainObject(error) && typeof error.code === "string" && /^[a-z][a-z0-9_]*$/.test(error.code)) {
      const reason = typeof error.reason === "string" && error.reason !== "" ? error.reason : undefined;
      // Extra snake_case string facts (task_id…) come back as the rejection's own fields.
      const fields: Record<string, string> = {};
      for (const [key, value] of Object.entries(error)) {
        if (!["code", "reason", "message", "name"].includes(key) && /^[a-z][a-z0-9_]*$/.test(key) && typeof value === "string") fields[key] = value;
      }
      const extra = { ...(reason ? { reason } : {}), ...(Object.keys(fields).length > 0 ? { fields } : {}) };
      throw new ToolError(error.code, typeof error.message === "string" ? error.message : text, Object.keys(extra).length > 0 ? extra : undefined);
    }
    throw new ToolError("tool_failed", text === "" ? `tool "${tool.id}" failed` : text);
  }
  if (tool.hasOutput) {
    if (!isPlainObject(result.structuredContent)) {
      throw new TypeError(`guestValue: tool "${tool.id}" declares an output, so "result.structuredContent" must be an object, received ${describeValue(result.structuredContent)}`);
    }
    return result.structuredContent;
  }
  if (record !== undefined) {
    if (!isPlainObject(record) || !Object.hasOwn(record, "value")) throw new TypeError(`guestValue: "record" must be { value }, received ${describeValue(record)}`);
    return jsonClone(record.value) ?? null;
  }
  return text;
}

export { DEFAULT_OUTPUT_BUDGET };
