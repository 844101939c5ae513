// The template grammar of workflow params (docs/workflows.md#templates), parsed properly so a mistake is
// reported at the template that has it, with what was expected there:
//
//   template  := ( text | "{{" ws* expr ws* "}}" )*
//   expr      := reference | string            a JSON string literal, e.g. {{ "{{" }} for literal braces
//   reference := ".inputs." name
//              | ".nodes." id ".output" path?
//   path      := ( "." key | "[" digits "]" | "[" string "]" )+
//
// Text outside `{{ … }}` is kept as is (a lone "}}" is text). A string param that is exactly one
// reference takes the referenced value itself (a number stays a number); any other string is
// text in which each reference is rendered (strings as they are, other values as JSON).
import { setKey } from "../tools/json.js";
import type { PathSegment } from "../tools/view-paths.js";

export type Reference = { kind: "input"; name: string; source: string } | { kind: "node"; node: string; path: PathSegment[]; source: string };

export type TemplatePart = { text: string } | { ref: Reference };

export interface ParsedTemplate {
  parts: TemplatePart[];
  /** The whole string is this one reference (no text around it): the value is used as is. */
  whole?: Reference;
}

export class TemplateError extends Error {
  override readonly name = "TemplateError";
  constructor(
    message: string,
    /** The offending `{{ … }}` as written (cut when long). */
    readonly template: string,
    /** 1-based character of the string where the problem is. */
    readonly character: number,
  ) {
    super(message);
  }
}

export const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const NAME_CHAR = /[A-Za-z0-9_-]/;
const KEY_CHAR = /[A-Za-z0-9_$-]/;
const SHAPES = "a reference is {{ .inputs.<name> }} or {{ .nodes.<id>.output.<path> }}";
const MAX_SHOWN = 80;

/** Whether a string holds any template at all (cheap, before a full parse). */
export function hasTemplate(text: string): boolean {
  return text.includes("{{");
}

export function parseTemplate(text: string): ParsedTemplate {
  const parts: TemplatePart[] = [];
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf("{{", i);
    if (open === -1) {
      parts.push({ text: text.slice(i) });
      break;
    }
    if (open > i) parts.push({ text: text.slice(i, open) });
    const close = findClose(text, open + 2);
    if (close === -1) {
      throw new TemplateError(`"{{" is not closed with "}}"`, shown(text.slice(open)), open + 1);
    }
    parts.push(parseAction(text, open, close));
    i = close + 2;
  }
  const merged = mergeText(parts);
  const only = merged.length === 1 ? merged[0]! : undefined;
  return only && "ref" in only ? { parts: merged, whole: only.ref } : { parts: merged };
}

/** The index of the "}}" closing the action that starts at `from`, skipping string literals. */
function findClose(text: string, from: number): number {
  let i = from;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      i = stringEnd(text, i);
      if (i === -1) return -1;
      continue;
    }
    if (c === "}" && text[i + 1] === "}") return i;
    i++;
  }
  return -1;
}

/** The index just past the JSON string literal starting at `start`, or -1 when it never ends. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === '"') return i + 1;
  }
  return -1;
}

function parseAction(text: string, open: number, close: number): TemplatePart {
  const action = text.slice(open, close + 2);
  const fail = (at: number, message: string): never => {
    throw new TemplateError(message, shown(action), at + 1);
  };
  let i = open + 2;
  while (i < close && /\s/.test(text[i]!)) i++;
  let end = close;
  while (end > i && /\s/.test(text[end - 1]!)) end--;
  if (i === end) fail(i, `empty template; ${SHAPES}`);
  const expr = text.slice(i, end);
  if (expr.startsWith('"')) {
    const stop = stringEnd(text, i);
    if (stop !== end) fail(stop === -1 ? i : stop, `a string literal must be the whole template, as in {{ "{{" }}`);
    try {
      return { text: JSON.parse(expr) as string };
    } catch {
      return fail(i, `invalid string literal ${expr}; write it as a JSON string`);
    }
  }
  if (expr[0] !== ".") fail(i, `expected "." to start a reference; ${SHAPES}`);
  let at = i + 1;
  const readName = (what: string): string => {
    const start = at;
    while (at < end && NAME_CHAR.test(text[at]!)) at++;
    const name = text.slice(start, at);
    if (!NAME_PATTERN.test(name)) fail(start, `expected ${what}${name === "" ? "" : `, not "${name}"`}`);
    return name;
  };
  const expectDot = (after: string, what: string): void => {
    if (text[at] !== ".") fail(at, `expected "." and ${what} after "${after}"`);
    at++;
  };
  const root = readName(`"inputs" or "nodes"`);
  if (root === "inputs") {
    expectDot(".inputs", "an input name");
    const name = readName("an input name");
    if (at !== end) fail(at, `an input reference ends after its name: {{ .inputs.${name} }} (inputs have no fields)`);
    return { ref: { kind: "input", name, source: expr.slice(1) } };
  }
  if (root !== "nodes") fail(i + 1, `expected "inputs" or "nodes" after ".", not "${root}"; ${SHAPES}`);
  expectDot(".nodes", "a node id");
  const node = readName("a node id");
  const output = at;
  if (text.slice(at, at + 7) !== ".output" || (at + 7 < end && NAME_CHAR.test(text[at + 7]!))) {
    fail(output, `expected ".output" after ".nodes.${node}", as in {{ .nodes.${node}.output.<path> }}`);
  }
  at += 7;
  const path: PathSegment[] = [];
  while (at < end) {
    const c = text[at]!;
    if (c === ".") {
      at++;
      const start = at;
      while (at < end && KEY_CHAR.test(text[at]!)) at++;
      if (at === start) fail(start, `expected a field name after "."`);
      path.push(text.slice(start, at));
    } else if (c === "[") {
      at++;
      if (text[at] === '"') {
        const stop = stringEnd(text, at);
        if (stop === -1 || stop > end) fail(at, `unterminated string in "[…]"`);
        let key: string;
        try {
          key = JSON.parse(text.slice(at, stop)) as string;
        } catch {
          return fail(at, `invalid string in "[…]"; write it as a JSON string`);
        }
        path.push(key);
        at = stop;
      } else {
        const start = at;
        while (at < end && /[0-9]/.test(text[at]!)) at++;
        const digits = text.slice(start, at);
        if (!/^(0|[1-9][0-9]*)$/.test(digits)) fail(start, `expected an array index (digits) or a quoted key in "[…]"`);
        path.push(Number(digits));
      }
      if (text[at] !== "]") fail(at, `expected "]"`);
      at++;
    } else {
      fail(at, `unexpected ${JSON.stringify(c)} in the path; fields are written .name, array elements [0]`);
    }
  }
  return { ref: { kind: "node", node, path, source: expr.slice(1) } };
}

function mergeText(parts: TemplatePart[]): TemplatePart[] {
  const out: TemplatePart[] = [];
  for (const part of parts) {
    const last = out.at(-1);
    if ("text" in part && last && "text" in last) out[out.length - 1] = { text: last.text + part.text };
    else if (!("text" in part) || part.text !== "") out.push(part);
  }
  return out;
}

function shown(template: string): string {
  return template.length > MAX_SHOWN ? `${template.slice(0, MAX_SHOWN - 1)}…` : template;
}

/** What a reference resolves to at run time; `undefined` when a field is missing. */
export type Resolver = (ref: Reference) => unknown;

/**
 * A template's value: the referenced value itself for a whole-string reference, text otherwise.
 * A missing field is an empty value (the empty string), as docs/workflows.md#templates states.
 */
export function renderTemplate(template: ParsedTemplate, resolve: Resolver, asText = false): unknown {
  if (template.whole && !asText) {
    const value = resolve(template.whole);
    return value === undefined ? "" : value;
  }
  let out = "";
  for (const part of template.parts) out += "text" in part ? part.text : textOf(resolve(part.ref));
  return out;
}

function textOf(value: unknown): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value) ?? "";
}

/** The value at `path` in `root`, reading own properties only; `undefined` when any step is missing. */
export function valueAt(root: unknown, path: readonly PathSegment[]): unknown {
  let current = root;
  for (const segment of path) {
    if (Array.isArray(current)) {
      const index = typeof segment === "number" ? segment : /^(0|[1-9][0-9]*)$/.test(segment) ? Number(segment) : -1;
      if (index < 0 || index >= current.length) return undefined;
      current = current[index];
    } else if (current !== null && typeof current === "object") {
      const key = String(segment);
      if (!Object.hasOwn(current, key)) return undefined;
      current = (current as Record<string, unknown>)[key];
    } else {
      return undefined;
    }
  }
  return current;
}

/** Sets the value at `at` (which exists: it is where a template was found) in params being rendered. */
export function setValueAt(root: Record<string, unknown>, at: readonly PathSegment[], value: unknown): void {
  let current: unknown = root;
  for (let i = 0; i < at.length - 1; i++) current = (current as Record<string, unknown>)[at[i] as string];
  const last = at[at.length - 1]!;
  if (Array.isArray(current)) current[last as number] = value;
  else setKey(current as Record<string, unknown>, String(last), value);
}
