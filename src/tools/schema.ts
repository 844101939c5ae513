import * as zc from "zod/v4/core";
import { digestOf, normalizeJsonSchema } from "./canonical.js";
import { messageOf } from "./errors.js";

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
  return normalizeJsonSchema(rest);
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
