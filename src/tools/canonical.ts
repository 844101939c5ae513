// Canonical JSON and the digests built on it: descriptors' schema digests, approval digests, and
// JSON Schemas normalised so equal schemas give equal bytes.
import { createHash } from "node:crypto";
import { describeValue } from "./errors.js";
import { setKey } from "./json.js";

/**
 * JSON with object keys sorted at every depth, so equal values give equal bytes (and digests)
 * whatever order their keys were built in — in this process or any other.
 */
export function canonicalJson(value: unknown): string {
  return write(value, "$", new Set());
}

function write(value: unknown, path: string, seen: Set<object>): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: value at ${path} must be a finite number, received ${String(value)}`);
      return JSON.stringify(value);
    case "object": {
      if (seen.has(value)) throw new TypeError(`canonicalJson: value at ${path} is cyclic`);
      seen.add(value);
      try {
        if (Array.isArray(value)) {
          return `[${value.map((item, i) => write(item, `${path}[${i}]`, seen)).join(",")}]`;
        }
        const proto = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) {
          throw new TypeError(`canonicalJson: value at ${path} must be a plain object, received ${(value as object).constructor?.name ?? "object"}`);
        }
        const parts: string[] = [];
        for (const key of Object.keys(value).sort()) {
          const item = (value as Record<string, unknown>)[key];
          // Mirrors JSON.stringify: an undefined property is an absent one.
          if (item === undefined) continue;
          parts.push(`${JSON.stringify(key)}:${write(item, `${path}.${key}`, seen)}`);
        }
        return `{${parts.join(",")}}`;
      } finally {
        seen.delete(value);
      }
    }
    default:
      throw new TypeError(`canonicalJson: value at ${path} must be JSON, received ${describeValue(value)}`);
  }
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Lowercase hex SHA-256 of the canonical JSON of a value. */
export function digestOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * Digest for approvals: a remembered approval must match the same call whatever view it asks
 * for (docs/tool-contract.md#hooks-and-pinned-views), so `result_view` is left out before hashing.
 */
export function approvalDigest(toolName: string, input: unknown): string {
  if (typeof toolName !== "string" || toolName === "") {
    throw new TypeError(`approvalDigest: "toolName" must be a non-empty string, received ${describeValue(toolName)}`);
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new TypeError(`approvalDigest: "input" must be an object, received ${describeValue(input)}`);
  }
  const { result_view: _ignored, ...rest } = input as Record<string, unknown>;
  return digestOf({ input: rest, tool: toolName });
}

// Keys whose values are data, not sub-schemas: their arrays keep their order.
const DATA_KEYWORDS = new Set(["default", "const", "enum", "examples"]);

/**
 * JSON Schema in a canonical form: `required` lists are sets, so they are sorted; key order is
 * left to `canonicalJson`. Two schemas that differ only in declaration order come out equal.
 */
export function normalizeJsonSchema<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((item) => normalizeJsonSchema(item)) as T;
  if (schema === null || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    if (DATA_KEYWORDS.has(key)) {
      setKey(out, key, value);
    } else if (key === "required" && Array.isArray(value) && value.every((v) => typeof v === "string")) {
      out[key] = [...value].sort();
    } else if (key === "properties" || key === "$defs" || key === "definitions" || key === "patternProperties") {
      // Property names are data: a property literally called "required" must not be sorted as a keyword.
      const props: Record<string, unknown> = {};
      for (const [name, sub] of Object.entries((value ?? {}) as Record<string, unknown>)) setKey(props, name, normalizeJsonSchema(sub));
      out[key] = props;
    } else {
      setKey(out, key, normalizeJsonSchema(value));
    }
  }
  return out as T;
}
