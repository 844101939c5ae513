// TypeScript declarations of the `tools` namespace for a model's prompt, within a byte budget
// (docs/tool-contract.md#declarations-and-finding-tools).
import { toolInternals, type Tool } from "./define.js";
import { describeValue } from "./errors.js";
import { isIdentifier } from "./identifiers.js";
import { isPlainObject } from "./json.js";
import { summaryLine } from "../text.js";

/**
 * TypeScript declarations of the `tools` namespace, for a model's prompt: it writes better
 * programs when the result shapes are stated (one published runtime found that models guessing
 * result shapes caused most of its program crashes). Rendered from the same JSON Schemas
 * the descriptors carry, so the prompt and `tool_info` never disagree.
 */

export const DEFAULT_DECLARATIONS_BUDGET = 24_000;
/** How much of a description a tool declared with one line keeps. */
const BRIEF_CHARS = 100;

type Schema = Record<string, unknown> | boolean;
/** `#/$defs/<name>` → the type alias that renders it. */
type Refs = ReadonlyMap<string, string>;
const NO_REFS: Refs = new Map();

function comment(text: string, indent: string): string {
  const safe = text.replace(/\*\//g, "*\\/").trim();
  const lines = safe.split(/\r?\n/);
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join("\n")}\n${indent} */\n`;
}

function literal(value: unknown): string {
  return JSON.stringify(value) ?? "unknown";
}

function propertyKey(key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : JSON.stringify(key);
}

function union(parts: string[]): string {
  const unique = [...new Set(parts)];
  if (unique.includes("unknown")) return "unknown";
  return unique.length === 0 ? "never" : unique.map((p) => (p.includes("=>") ? `(${p})` : p)).join(" | ");
}

/** A TypeScript type for a JSON Schema produced by zod (the subset its converter emits). */
export function schemaToType(schema: Schema, indent = "", refs: Refs = NO_REFS): string {
  if (schema === true || schema === undefined) return "unknown";
  if (schema === false) return "never";
  if (!isPlainObject(schema)) return "unknown";
  if (Object.hasOwn(schema, "const")) return literal(schema.const);
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal));
  if (Array.isArray(schema.anyOf)) return union(schema.anyOf.map((s) => wrap(schemaToType(s as Schema, indent, refs))));
  if (Array.isArray(schema.oneOf)) return union(schema.oneOf.map((s) => wrap(schemaToType(s as Schema, indent, refs))));
  if (Array.isArray(schema.allOf)) return schema.allOf.map((s) => wrap(schemaToType(s as Schema, indent, refs))).join(" & ");
  // Recursive schemas refer to their $defs, which the tool's namespace declares as aliases.
  if (typeof schema.$ref === "string") return refs.get(schema.$ref) ?? "unknown";
  const type = schema.type;
  if (Array.isArray(type)) return union(type.map((t) => wrap(schemaToType({ ...schema, type: t }, indent, refs))));
  switch (type) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array":
      return arrayType(schema, indent, refs);
    case "object":
      return objectType(schema, indent, refs);
    default:
      return "unknown";
  }
}

function wrap(type: string): string {
  return type.includes(" | ") || type.includes(" & ") ? `(${type})` : type;
}

function arrayType(schema: Record<string, unknown>, indent: string, refs: Refs): string {
  if (Array.isArray(schema.prefixItems)) {
    const items = schema.prefixItems.map((s) => schemaToType(s as Schema, indent, refs));
    if (schema.items !== false && schema.items !== undefined) items.push(`...${wrap(schemaToType(schema.items as Schema, indent, refs))}[]`);
    return `[${items.join(", ")}]`;
  }
  if (schema.items === undefined) return "unknown[]";
  return `${wrap(schemaToType(schema.items as Schema, indent, refs))}[]`;
}

function objectType(schema: Record<string, unknown>, indent: string, refs: Refs): string {
  const properties = isPlainObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const keys = Object.keys(properties);
  const extra = schema.additionalProperties;
  const open = extra !== undefined && extra !== false ? schemaToType(extra as Schema, `${indent}  `, refs) : undefined;
  if (keys.length === 0) {
    const names = isPlainObject(schema.propertyNames) && Array.isArray(schema.propertyNames.enum) ? schema.propertyNames.enum : undefined;
    if (open !== undefined && names && names.length > 0 && names.every((n) => typeof n === "string")) {
      // z.record(z.enum([...]), T) lists every key as required; z.partialRecord none.
      const all = names.every((n) => required.has(n as string));
      return `{ [K in ${union(names.map(literal))}]${all ? "" : "?"}: ${open} }`;
    }
    if (open !== undefined) return `{ [key: string]: ${open} }`;
    // zod's input-mode objects have no additionalProperties; an empty object means "no fields".
    return extra === false || schema.properties !== undefined ? "{}" : "Record<string, unknown>";
  }
  const inner = `${indent}  `;
  let out = "{\n";
  for (const key of keys) {
    const sub = properties[key] as Schema;
    if (isPlainObject(sub) && typeof sub.description === "string" && sub.description !== "") out += comment(sub.description, inner);
    out += `${inner}${propertyKey(key)}${required.has(key) ? "" : "?"}: ${schemaToType(sub, inner, refs)};\n`;
  }
  if (open !== undefined) out += `${inner}[key: string]: ${open === "unknown" ? "unknown" : `${open} | undefined`};\n`;
  return `${out}${indent}}`;
}

function hasRequired(schema: Record<string, unknown>): boolean {
  return Array.isArray(schema.required) && schema.required.length > 0;
}

interface Part {
  label: string;
  schema: Record<string, unknown>;
  refs: Map<string, string>;
  aliases: [string, Record<string, unknown>][];
  /** The schema refers to itself (`"$ref": "#"`): it needs an alias of its own. */
  selfRef: boolean;
}

/** Each schema names its own $defs (zod converts them separately), so aliases carry the part's label. */
function part(fn: string, label: string, schema: Record<string, unknown>): Part {
  const refs = new Map<string, string>([["#", `${fn}.${label}`]]);
  const aliases: [string, Record<string, unknown>][] = [];
  if (isPlainObject(schema.$defs)) {
    for (const [name, def] of Object.entries(schema.$defs)) {
      const alias = `${label}_${name.replace(/[^A-Za-z0-9_$]/g, "_")}`;
      refs.set(`#/$defs/${name}`, `${fn}.${alias}`);
      if (isPlainObject(def)) aliases.push([alias, def]);
    }
  }
  return { label, schema, refs, aliases, selfRef: JSON.stringify(schema).includes('"$ref":"#"') };
}

/** One tool's declaration, indented for its namespace. */
function renderTool(tool: Tool, indent: string): string {
  const impl = toolInternals(tool, "renderDeclarations: tools[]");
  const fn = tool.path[tool.path.length - 1]!;
  const input = part(fn, "Input", impl.inputJsonSchema);
  const optionalArgs = !hasRequired(input.schema);
  const inner = `${indent}  `;
  const aliasLines = (parts: Part[]): string => parts.flatMap((p) => p.aliases.map(([alias, def]) => `${inner}type ${alias} = ${schemaToType(def, inner, p.refs)};\n`)).join("");
  let doc = tool.description;
  if (impl.views) {
    const compact = part(fn, "Compact", impl.views.compact.schema);
    const full = part(fn, "Full", impl.views.full.schema);
    doc += `\nResolves to the compact view; pass result_view: "full" for the full record.`;
    let out = comment(doc, indent);
    out += `${indent}function ${fn}(args${optionalArgs ? "?" : ""}: ${fn}.Input & { result_view?: "compact" }): Promise<${fn}.Compact>;\n`;
    out += `${indent}function ${fn}(args: ${fn}.Input & { result_view: "full" }): Promise<${fn}.Full>;\n`;
    out += `${indent}namespace ${fn} {\n`;
    for (const p of [input, compact, full]) out += `${inner}type ${p.label} = ${schemaToType(p.schema, inner, p.refs)};\n`;
    out += aliasLines([input, compact, full]);
    return `${out}${indent}}\n`;
  }
  const output = impl.output ? part(fn, "Output", impl.output.schema) : undefined;
  // No declared type: a program gets whatever `execute` returned (a JSON copy), so it must look before it reads.
  if (!output) doc += "\nResolves to the value the tool returns (no declared type: check it before use).";
  const parts = output ? [input, output] : [input];
  const typeOf = (p: Part): string => (p.selfRef ? `${fn}.${p.label}` : schemaToType(p.schema, indent, p.refs));
  let out = `${comment(doc, indent)}${indent}function ${fn}(args${optionalArgs ? "?" : ""}: ${typeOf(input)}): Promise<${output ? typeOf(output) : "unknown"}>;\n`;
  const selfAliases = parts.filter((p) => p.selfRef).map((p) => `${inner}type ${p.label} = ${schemaToType(p.schema, inner, p.refs)};\n`);
  const aliases = selfAliases.join("") + aliasLines(parts);
  if (aliases !== "") out += `${indent}namespace ${fn} {\n${aliases}${indent}}\n`;
  return out;
}

/** A tool past the budget for full declarations: a signature that still type-checks and its one line. */
function briefTool(tool: Tool, indent: string): string {
  const fn = tool.path[tool.path.length - 1]!;
  // A line comment: summaryLine leaves no line break (nor U+2028/U+2029) that could end it early.
  return `${indent}function ${fn}(args?: object): Promise<unknown>; // ${summaryLine(tool.description, BRIEF_CHARS)}\n`;
}

interface Group {
  tools: Tool[];
  namespaces: Map<string, Tool[]>;
}

function group(tools: readonly Tool[]): Group {
  const out: Group = { tools: [], namespaces: new Map() };
  for (const tool of tools) {
    if (tool.path.length === 1) out.tools.push(tool);
    else {
      const ns = tool.path[0]!;
      if (!out.namespaces.has(ns)) out.namespaces.set(ns, []);
      out.namespaces.get(ns)!.push(tool);
    }
  }
  return out;
}

/**
 * The whole `declare namespace tools { … }` text within `budgetBytes` (default 24,000; Infinity
 * for no limit). When everything does not fit, every tool is first given one line (its name, a
 * loose signature and the first line of its description), in the caller's order while they fit,
 * and the tools that do not fit even so are counted in a note; then the caller's order decides
 * which of the listed tools get their full declaration. The notes name `tool_info` and
 * `tool_search` for the rest when they are among `tools`.
 */
export function renderDeclarations(tools: readonly Tool[], options: { budgetBytes?: number } = {}): string {
  return declarationsOf(tools, options)();
}

/**
 * renderDeclarations in two steps: the checks now (whatever renderDeclarations throws, this throws,
 * here), the text at the first call of the function it returns, once. Rendering after the checks
 * cannot throw: it reads only the tools' JSON Schemas, which a Tool always has (the runtime's own
 * tools work theirs out on that read; test/tools/lazy-schemas.test.ts converts them all). For
 * ptc_run_code's description, which reads every program tool's schemas and which nothing on a
 * cold start reads. `tools` is copied: later changes to the caller's array change nothing.
 */
export function declarationsOf(tools: readonly Tool[], options: { budgetBytes?: number } = {}): () => string {
  if (!Array.isArray(tools)) throw new TypeError(`renderDeclarations: "tools" must be an array of tools, received ${describeValue(tools)}`);
  const budget = options?.budgetBytes ?? DEFAULT_DECLARATIONS_BUDGET;
  if (typeof budget !== "number" || !(Number.isInteger(budget) || budget === Infinity) || budget < 1) {
    throw new TypeError(`renderDeclarations: "options.budgetBytes" must be a positive integer (or Infinity), received ${String(budget)}`);
  }
  const seen = new Map<string, Tool>();
  for (const [i, tool] of tools.entries()) {
    toolInternals(tool, `renderDeclarations: tools[${i}]`);
    const key = tool.path.join(".");
    const clash = seen.get(key);
    if (clash) throw new TypeError(`renderDeclarations: tools "${clash.id}" and "${tool.id}" both become tools.${key}; rename one`);
    seen.set(key, tool);
    for (const segment of tool.path) if (!isIdentifier(segment)) throw new TypeError(`renderDeclarations: tools[${i}] path segment "${segment}" is not an identifier`);
  }
  for (const tool of tools) {
    const namespaceTool = tool.path.length > 1 ? seen.get(tool.path[0]!) : undefined;
    if (namespaceTool) throw new TypeError(`renderDeclarations: tool "${namespaceTool.id}" and namespace "${tool.namespace}" both become tools.${tool.path[0]}; rename one`);
  }
  const checked = [...tools];
  let text: string | undefined;
  return () => (text ??= render(checked, budget));
}

/** The declarations of tools renderDeclarations checked (see there). */
function render(tools: readonly Tool[], budget: number): string {
  const indentOf = (tool: Tool): string => (tool.path.length === 1 ? "  " : "    ");
  const rendered = new Map(tools.map((tool) => [tool, renderTool(tool, indentOf(tool))]));
  const brief = new Map(tools.map((tool) => [tool, briefTool(tool, indentOf(tool))]));
  const grouped = group(tools);
  const offers = (name: string): boolean => tools.some((t) => t.path.length === 1 && t.name === name);
  const how = [offers("tool_search") ? "tool_search({ query, declarations: true }) gives their declarations" : "", offers("tool_info") ? "tool_info({ tool_id }) one tool's schemas" : ""].filter(
    Boolean,
  );
  const notes = (briefCount: number, omitted: number): string =>
    (briefCount > 0
      ? `  // ${briefCount === tools.length ? "Every tool is" : briefCount === 1 ? "1 tool is" : `${briefCount} tools are`} declared with one line only (over the declarations budget)${how.length > 0 ? `: ${how.join(", ")}` : ""}.\n`
      : "") +
    (omitted > 0
      ? `  // ${omitted} more tool${omitted === 1 ? " is" : "s are"} not declared here${offers("tool_search") ? ": tool_search({ query }) finds tools by name and description" : ""}.\n`
      : "");
  const assemble = (full: ReadonlySet<Tool>, listed: ReadonlySet<Tool>): string => {
    const body = (list: Tool[]): string => list.map((t) => (full.has(t) ? rendered.get(t)! : listed.has(t) ? brief.get(t)! : "")).join("");
    let out = `declare namespace tools {\n${notes(tools.filter((t) => listed.has(t) && !full.has(t)).length, tools.length - listed.size)}`;
    out += body(grouped.tools);
    for (const [ns, list] of grouped.namespaces) {
      const inner = body(list);
      if (inner !== "") out += `  namespace ${ns} {\n${inner}  }\n`;
    }
    return `${out}}\n`;
  };

  const everything = new Set(tools);
  const allText = assemble(everything, everything);
  if (Buffer.byteLength(allText) <= budget) return allText;
  // Greedy in the caller's order (it lists the tools that matter most first): one line for each
  // tool that fits, then full declarations in place of lines while they fit; then exact: give up
  // the last upgrade, or the last line, until the assembled text fits.
  const namespaceBytes = (ns: string): number => Buffer.byteLength(`  namespace ${ns} {\n  }\n`);
  // The notes at their longest for the counts they may state: the lines chosen never overflow them.
  const noteBytes = (omitted: number): number => Math.max(Buffer.byteLength(notes(tools.length, omitted)), Buffer.byteLength(notes(tools.length - 1, omitted)));
  const listLines = (omittedNote: boolean): Tool[] => {
    const opened = new Set<string>();
    const chosen: Tool[] = [];
    let bytes = Buffer.byteLength("declare namespace tools {\n}\n") + noteBytes(omittedNote ? tools.length : 0);
    for (const tool of tools) {
      const ns = tool.path.length > 1 ? tool.path[0]! : undefined;
      const extra = Buffer.byteLength(brief.get(tool)!) + (ns !== undefined && !opened.has(ns) ? namespaceBytes(ns) : 0);
      if (bytes + extra > budget) continue;
      chosen.push(tool);
      if (ns !== undefined) opened.add(ns);
      bytes += extra;
    }
    return chosen;
  };
  // Without the note of tools left out first: it is there only when some are.
  let listed = listLines(false);
  if (listed.length < tools.length) listed = listLines(true);
  // Exact from here; each upgrade only shortens the notes' counts.
  let estimate = Buffer.byteLength(assemble(new Set(), new Set(listed)));
  const full: Tool[] = [];
  for (const tool of listed) {
    const extra = Buffer.byteLength(rendered.get(tool)!) - Buffer.byteLength(brief.get(tool)!);
    if (estimate + extra > budget) continue;
    full.push(tool);
    estimate += extra;
  }
  let text = assemble(new Set(full), new Set(listed));
  while (Buffer.byteLength(text) > budget && (full.length > 0 || listed.length > 0)) {
    if (full.length > 0) full.pop();
    else listed.pop();
    text = assemble(new Set(full), new Set(listed));
  }
  return text;
}
