// Which result view carries a field. One resolver answers it for both places that ask: a workflow
// validating its `{{ .nodes.<id>.output.<path> }}` references before anything runs, and a failed
// program whose code read a field of a tool result that only `result_view: "full"` returns.
//
// It walks the JSON Schemas of the descriptors (not zod), so upstream MCP tools whose schemas
// arrived as JSON are answered the same way as tools defined here.
import { isPlainObject } from "./json.js";
import type { ResultView, ToolDescriptor } from "./types.js";

type JsonSchema = Record<string, unknown>;

/** One step of a path: an object key, or an array index. */
export type PathSegment = string | number;

/**
 * - `declared`: the schema names every segment of the path.
 * - `open`: the path enters a part of the schema that allows keys it does not list
 *   (`additionalProperties`, an untyped value), so it may exist but cannot be proven; `at` is the
 *   number of segments that were declared before the open part.
 * - `absent`: the schema rules the path out; `at` is the index of the first segment it has no place for.
 */
export type PathResolution = { status: "declared" } | { status: "open"; at: number } | { status: "absent"; at: number };

function refTarget(root: JsonSchema, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isPlainObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** The alternatives a schema node stands for: itself, or each branch of anyOf/oneOf/allOf, refs followed. */
function alternatives(root: JsonSchema, schema: unknown, depth = 0): unknown[] {
  if (depth > 32) return [true];
  if (schema === true || schema === undefined) return [true];
  if (schema === false || !isPlainObject(schema)) return [schema];
  if (typeof schema.$ref === "string") {
    const target = refTarget(root, schema.$ref);
    return target === undefined ? [true] : alternatives(root, target, depth + 1);
  }
  const branches = [schema.anyOf, schema.oneOf, schema.allOf].find(Array.isArray) as unknown[] | undefined;
  if (branches) return branches.flatMap((branch) => alternatives(root, branch, depth + 1));
  return [schema];
}

/** What one segment leads to in one schema node: the child schema, "open", or nothing. */
function step(node: unknown, segment: PathSegment): { child: unknown } | "open" | undefined {
  if (node === true) return "open";
  if (!isPlainObject(node)) return undefined;
  const type = node.type;
  const types = Array.isArray(type) ? type : type === undefined ? undefined : [type];
  // A node with no type and no structure says nothing about what it holds.
  if (types === undefined && node.properties === undefined && node.items === undefined && node.prefixItems === undefined && node.const === undefined && node.enum === undefined) {
    return "open";
  }
  const index = typeof segment === "number" ? segment : /^(0|[1-9]\d*)$/.test(segment) ? Number(segment) : undefined;
  if (index !== undefined && (types?.includes("array") || node.items !== undefined || node.prefixItems !== undefined)) {
    if (Array.isArray(node.prefixItems) && index < node.prefixItems.length) return { child: node.prefixItems[index] };
    if (node.items === false) return undefined;
    return node.items === undefined ? "open" : { child: node.items };
  }
  if (typeof segment === "string" && (types?.includes("object") || node.properties !== undefined)) {
    const properties = isPlainObject(node.properties) ? node.properties : {};
    if (Object.hasOwn(properties, segment)) return { child: properties[segment] };
    // A key the schema does not list may still be there when the object is open (a record, a
    // loose object, or zod's input mode, which writes no additionalProperties): it cannot be proven.
    return node.additionalProperties === false ? undefined : "open";
  }
  return undefined;
}

/** Resolve `path` in a JSON Schema. A union is resolved in every branch; the best answer wins (declared, then open, then absent). */
export function resolveSchemaPath(schema: unknown, path: readonly PathSegment[]): PathResolution {
  const root = isPlainObject(schema) ? schema : {};
  const rank = (r: PathResolution): number => (r.status === "declared" ? 3e9 : r.status === "open" ? 2e9 + r.at : 1e9 + r.at);
  const resolve = (node: unknown, i: number, depth: number): PathResolution => {
    if (i === path.length) return { status: "declared" };
    if (depth > 256) return { status: "open", at: i };
    let best: PathResolution = { status: "absent", at: i };
    for (const alternative of alternatives(root, node)) {
      const result = step(alternative, path[i]!);
      const found: PathResolution = result === "open" ? { status: "open", at: i } : result ? resolve(result.child, i + 1, depth + 1) : { status: "absent", at: i };
      if (rank(found) > rank(best)) best = found;
      if (best.status === "declared") break;
    }
    return best;
  };
  return resolve(schema, 0, 0);
}

/**
 * Where a path of a tool's result lives, given the view a caller selected:
 * - `ok`: the selected view declares it;
 * - `requires_full`: compact was selected and only the full view declares it (the fix: `result_view: "full"`);
 * - `unproven`: the selected view leaves that part open, so it may be there (warn, do not refuse);
 * - `unresolvable`: neither view can hold it;
 * - `no_schema`: the tool declares no output schema at all (its result is untyped).
 */
export type ViewPathVerdict =
  | { verdict: "ok" }
  | { verdict: "requires_full" }
  | { verdict: "unproven"; declaredSegments: number }
  | { verdict: "unresolvable"; missingSegment: number }
  | { verdict: "no_schema" };

export function classifyViewPath(descriptor: Pick<ToolDescriptor, "output_schema" | "output_views">, path: readonly PathSegment[], selected: ResultView = "compact"): ViewPathVerdict {
  const views = descriptor.output_views;
  if (!views) {
    if (!descriptor.output_schema) return { verdict: "no_schema" };
    return verdictOf(resolveSchemaPath(descriptor.output_schema, path));
  }
  const chosen = resolveSchemaPath(views[selected].schema, path);
  if (chosen.status === "declared") return { verdict: "ok" };
  if (selected === "compact") {
    const full = resolveSchemaPath(views.full.schema, path);
    if (full.status === "declared") return { verdict: "requires_full" };
    if (chosen.status === "absent" && full.status === "open") return { verdict: "requires_full" };
  }
  return verdictOf(chosen);
}

function verdictOf(resolution: PathResolution): ViewPathVerdict {
  switch (resolution.status) {
    case "declared":
      return { verdict: "ok" };
    case "open":
      return { verdict: "unproven", declaredSegments: resolution.at };
    case "absent":
      return { verdict: "unresolvable", missingSegment: resolution.at };
  }
}

/** The top-level keys a result schema declares (for messages naming the shape a tool resolves to). */
export function topLevelKeys(schema: unknown): string[] {
  const root = isPlainObject(schema) ? schema : {};
  const keys = new Set<string>();
  for (const alternative of alternatives(root, schema)) {
    if (isPlainObject(alternative) && isPlainObject(alternative.properties)) for (const key of Object.keys(alternative.properties)) keys.add(key);
  }
  return [...keys];
}

/**
 * The keys declared where `path` leads in a result schema (the shape a message names when a
 * program read a key that is not there), or [] when the path leaves what the schema declares.
 */
export function keysAt(schema: unknown, path: readonly PathSegment[]): string[] {
  const root = isPlainObject(schema) ? schema : {};
  let nodes: unknown[] = [schema];
  for (const segment of path) {
    const next: unknown[] = [];
    for (const node of nodes) {
      for (const alternative of alternatives(root, node)) {
        const result = step(alternative, segment);
        if (result && result !== "open") next.push(result.child);
      }
    }
    if (next.length === 0) return [];
    nodes = next;
  }
  const keys = new Set<string>();
  for (const node of nodes) for (const key of topLevelKeys(refResolved(root, node))) keys.add(key);
  return [...keys];
}

/** A node with its local `$ref` followed against the root schema (topLevelKeys resolves refs against the node itself). */
function refResolved(root: JsonSchema, node: unknown): unknown {
  if (isPlainObject(node) && typeof node.$ref === "string") return refTarget(root, node.$ref) ?? node;
  return node;
}

/** `a.b[0].c`, as a program would write the path. */
export function formatSegments(path: readonly PathSegment[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number" || /^(0|[1-9]\d*)$/.test(segment)) out += `[${segment}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(segment)) out += out === "" ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}
