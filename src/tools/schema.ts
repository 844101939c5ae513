// JSON Schemas of zod schemas, as descriptors and declarations carry them.
import * as zc from "zod/v4/core";
import { digestOf, normalizeJsonSchema } from "./canonical.js";
import { messageOf } from "./errors.js";
import { setKey } from "./json.js";

/**
 * JSON Schema of a zod schema by zod's own converter, in canonical form. `io: "input"` describes
 * what a caller may send, `"output"` what a program receives. Throws a TypeError naming `field`
 * when the schema has no JSON form (Date, transforms, bigint…): such a value could not cross the
 * sandbox wall as JSON anyway.
 */
export function jsonSchemaOf(schema: zc.$ZodType, io: "input" | "output", field: string): Record<string, unknown> {
  let raw: Record<string, unknown>;
  try {
    raw = zc.toJSONSchema(schema, { io, unrepresentable: "throw" }) as Record<string, unknown>;
  } catch (err) {
    throw new TypeError(`${field} cannot be represented as JSON Schema: ${messageOf(err)}`);
  }
  // The dialect URI is the same for every tool: it only adds bytes to every descriptor.
  const { $schema: _dialect, ...rest } = raw;
  return normalizeJsonSchema(withoutSafeIntegerBounds(rest));
}

/**
 * zod states `.int()` as `minimum: -(2^53 - 1), maximum: 2^53 - 1` on every integer: bounds no
 * caller means, on every integer of every descriptor. Those two exact values are dropped (zod
 * still refuses an unsafe integer when it checks a value); a bound a schema chose stays.
 */
function withoutSafeIntegerBounds<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map(withoutSafeIntegerBounds) as T;
  if (schema === null || typeof schema !== "object") return schema;
  const node = schema as Record<string, unknown>;
  const integer = node.type === "integer";
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (integer && ((key === "minimum" && value === Number.MIN_SAFE_INTEGER) || (key === "maximum" && value === Number.MAX_SAFE_INTEGER))) continue;
    // Data keywords hold values, not schemas: an enum of numbers is left alone.
    setKey(out, key, key === "const" || key === "enum" || key === "default" || key === "examples" ? value : withoutSafeIntegerBounds(value));
  }
  return out as T;
}

export interface SchemaView {
  schema: Record<string, unknown>;
  digest: string;
}

export function schemaView(schema: zc.$ZodType, field: string): SchemaView {
  const json = jsonSchemaOf(schema, "output", field);
  return { schema: json, digest: digestOf(json) };
}

export const RESULT_VIEW_PROPERTY = {
  type: "string",
  enum: ["compact", "full"],
  description: 'Which result to return: "compact" (default) or "full", the complete record.',
} as const;
