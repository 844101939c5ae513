// ToolError: the one error type a tool call fails with, carrying a machine-readable `code` (and
// optional `reason`) so a model, a program and a host can react without parsing messages; and the
// shape in which a failure crosses into a program.
import { messageOf, tailChars } from "../text.js";

export type ToolErrorCode = "tool_invalid_input" | "tool_denied" | "tool_failed" | "tool_output_invalid" | "tool_aborted" | (string & {});

export class ToolError extends Error {
  override readonly name = "ToolError" as const;
  readonly code: ToolErrorCode;
  // `declare`: an absent reason or field set is no own property at all, not one holding undefined.
  declare readonly reason?: string;
  /** Extra facts a program can read off the rejection as own properties (e.g. `task_id`). */
  declare readonly fields?: Readonly<Record<string, string>>;

  constructor(code: ToolErrorCode, message: string, options?: { reason?: string; cause?: unknown; fields?: Record<string, string> }) {
    if (typeof code !== "string" || !/^[a-z][a-z0-9_]*$/.test(code)) {
      throw new TypeError(`ToolError: "code" must be a snake_case string, received ${describeValue(code)}`);
    }
    if (typeof message !== "string") {
      throw new TypeError(`ToolError: "message" must be a string, received ${describeValue(message)}`);
    }
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options?.reason !== undefined) {
      if (typeof options.reason !== "string" || options.reason === "") {
        throw new TypeError(`ToolError: "reason" must be a non-empty string, received ${describeValue(options.reason)}`);
      }
      (this as { reason?: string }).reason = options.reason;
    }
    if (options?.fields !== undefined) {
      for (const [key, value] of Object.entries(options.fields)) {
        if (!/^[a-z][a-z0-9_]*$/.test(key) || typeof value !== "string" || key === "code" || key === "reason" || key === "name" || key === "message") {
          throw new TypeError(`ToolError: "fields" must map snake_case names (not name/message/code/reason) to strings, received ${JSON.stringify(key)}: ${describeValue(value)}`);
        }
      }
      (this as { fields?: Readonly<Record<string, string>> }).fields = Object.freeze({ ...options.fields });
    }
  }

  toJSON(): { name: "ToolError"; code: string; reason?: string; message: string } {
    return this.reason === undefined ? { name: this.name, code: this.code, message: this.message } : { name: this.name, code: this.code, reason: this.reason, message: this.message };
  }
}

export { messageOf };

export function isToolError(value: unknown): value is ToolError {
  return value instanceof ToolError;
}

/** A short type name for error messages a model reads ("received number", "received array"). */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number" && Number.isNaN(value)) return "NaN";
  return typeof value;
}

/** Guest rejections keep the tail: the end of a long failure text is where the cause usually is. */
export const GUEST_MESSAGE_LIMIT = 2000;

/** A failed tool call as it reaches a program: the fields of the `Error` its promise rejects with. */
export interface ToolRejection {
  name: string;
  code: string;
  reason?: string;
  message: string;
  fields?: Record<string, string>;
}

/**
 * The rejection a sandboxed program sees for a failed `await tools.x()`. The message keeps its
 * last 2,000 characters.
 */
export function toolRejection(err: unknown): ToolRejection {
  const code = err instanceof ToolError ? err.code : "tool_failed";
  const name = err instanceof ToolError ? "ToolError" : err instanceof Error ? err.name : "ToolError";
  let message = messageOf(err);
  if (message.length > GUEST_MESSAGE_LIMIT) message = `…${tailChars(message, GUEST_MESSAGE_LIMIT - 1)}`;
  const out: ToolRejection = { name, code, message };
  if (err instanceof ToolError && err.reason !== undefined) out.reason = err.reason;
  if (err instanceof ToolError && err.fields !== undefined) out.fields = { ...err.fields };
  return out;
}
