// Why a program failed, in words a model can act on: the fix, at the line of its own program.
//
// QuickJS names symptoms ("not a function", "cannot read property of undefined", "expecting
// '('"). Here the program is parsed with a real parser (acorn) — only after a run failed, or when
// a cheap text check found a statement that may drop a promise — to find the expression at the
// error's position, where its value came from (the variable bound to `await tools.X(...)`, a
// destructured key, a loop or callback over a result's array), and what that tool's schema says
// the value is. Which view carries a field is answered by the shared resolver (view-paths.ts).
import type { GuestError } from "../engine/protocol.js";
import { classifyViewPath, closestNames, describeTool, isCloseName, formatSegments, keysAt, topLevelKeys, type PathSegment, type ResultView, type Tool, type ToolDescriptor } from "../tools/index.js";

// ---- the parser, loaded on first use ---------------------------------------------------------

type Acorn = typeof import("acorn");
let acornLoaded: Promise<Acorn> | undefined;
const loadAcorn = (): Promise<Acorn> => (acornLoaded ??= import("acorn"));

/** An ESTree node, read loosely: diagnosis walks whatever the parser gives. */
// biome-ignore lint/suspicious/noExplicitAny: any node kind's fields are read, each checked where it is used
type N = { type: string; start: number; end: number; [key: string]: any };

const PARSE_OPTIONS = { ecmaVersion: "latest", sourceType: "script", allowReturnOutsideFunction: true, allowAwaitOutsideFunction: true, allowHashBang: true } as const;

interface Parsed {
  root: N;
  parent: Map<N, N>;
  nodes: N[];
}

function index(root: N): Parsed {
  const parent = new Map<N, N>();
  const nodes: N[] = [];
  const visit = (node: N): void => {
    nodes.push(node);
    for (const key of Object.keys(node)) {
      if (key === "loc") continue;
      const value = node[key];
      if (Array.isArray(value)) {
        for (const child of value) {
          if (!isNode(child)) continue;
          parent.set(child, node);
          visit(child);
        }
      } else if (isNode(value)) {
        parent.set(value, node);
        visit(value);
      }
    }
  };
  visit(root);
  return { root, parent, nodes };
}

function isNode(value: unknown): value is N {
  return value !== null && typeof value === "object" && typeof (value as N).type === "string" && typeof (value as N).start === "number";
}

async function parse(code: string): Promise<Parsed | undefined> {
  const acorn = await loadAcorn();
  try {
    return index(acorn.parse(code, PARSE_OPTIONS) as unknown as N);
  } catch {
    return undefined;
  }
}

// ---- positions and code frames -----------------------------------------------------------------

class Lines {
  readonly starts: number[] = [0];
  constructor(readonly code: string) {
    for (let i = 0; i < code.length; i++) if (code.charCodeAt(i) === 10) this.starts.push(i + 1);
  }
  /** Offset of a 1-based line and column. */
  offset(line: number, column: number): number {
    const start = this.starts[Math.min(Math.max(line, 1), this.starts.length) - 1]!;
    return Math.min(this.code.length, start + Math.max(column, 1) - 1);
  }
  /** 1-based line and column of an offset. */
  position(offset: number): { line: number; column: number } {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - this.starts[lo]! + 1 };
  }
  text(line: number): string {
    const start = this.starts[line - 1];
    if (start === undefined) return "";
    const end = this.starts[line] === undefined ? this.code.length : this.starts[line]! - 1;
    return this.code.slice(start, end).replace(/\r$/, "");
  }
}

const FRAME_LINE_CHARS = 160;

/** `  3 | const b = ;` and a caret under the column: the line as the user wrote it. */
export function codeFrame(code: string, line: number, column: number | undefined): string {
  const lines = new Lines(code);
  if (line < 1 || line > lines.starts.length) return "";
  let text = lines.text(line).replace(/\t/g, " ");
  let caret = Math.max(1, column ?? 1);
  // Long lines (minified code) are shown around the column.
  if (text.length > FRAME_LINE_CHARS) {
    const from = Math.max(0, Math.min(caret - 1 - FRAME_LINE_CHARS / 2, text.length - FRAME_LINE_CHARS));
    text = (from > 0 ? "…" : "") + text.slice(from, from + FRAME_LINE_CHARS) + (from + FRAME_LINE_CHARS < text.length ? "…" : "");
    caret = caret - from + (from > 0 ? 1 : 0);
  }
  // eslint-disable-next-line no-control-regex
  text = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "?");
  const gutter = String(line);
  return `${gutter} | ${text}\n${" ".repeat(gutter.length)} | ${" ".repeat(Math.max(0, caret - 1))}^`;
}

// ---- what the host knows about the run ---------------------------------------------------------

export interface DiagnoseInput {
  /** The program as it ran (after fences and types were taken out). */
  code: string;
  /** The program as the user wrote it, at the same positions (TypeScript keeps its types): what hints quote. */
  source?: string;
  error: GuestError;
  /** Tools as the program reaches them, by path. */
  tools: ReadonlyMap<string, Tool>;
  resultView?: ResultView;
  timeoutMs: number;
  maxToolCalls: number;
  /** Calls per tool path, over the whole run. */
  callsByTool: ReadonlyMap<string, number>;
  /** The last status the program saw of each task it polled. */
  taskStatuses: ReadonlyMap<string, string>;
  /** Calls that failed, with their (possibly cut) messages: an uncaught one is placed at its own call. */
  failedCalls?: ReadonlyArray<{ tool: string; args: string; error?: string }>;
}

export interface Diagnosis {
  /** Replaces the engine's message where that only named a symptom. */
  message?: string;
  /** `line`/`column` replace the engine's position (a failed call's own site, not the await that threw it). */
  relocated?: boolean;
  /** The fix, in one or two sentences. */
  hint?: string;
  line?: number;
  column?: number;
}

// ---- entry point -------------------------------------------------------------------------------

export async function diagnose(input: DiagnoseInput): Promise<Diagnosis> {
  const { error } = input;
  try {
    switch (error.kind) {
      case "syntax":
        return await syntax(input);
      case "exception":
        return await exception(input);
      case "timeout":
        return withSite(input, stalled(input));
      case "call_limit":
        return withSite(input, callLimit(input));
      case "memory":
        return {
          hint: "the program held more data at once than its memory limit allows: work through it in parts (a page, a slice or a file at a time) and keep only what the answer needs (counts, a few fields), not every record or whole texts",
        };
      case "stack":
        return { hint: "a function called itself too deeply: give the recursion a base case that is reached, or loop over the items (an array as a stack) instead of recursing" };
      default:
        return {};
    }
  } catch {
    // Diagnosis is a courtesy: a program it cannot read keeps the engine's message.
    return {};
  }
}

// ---- sandbox APIs that do not exist ------------------------------------------------------------

const NO_MODULES = "a program is one script with no modules, files or network; what the host offers is tools.* (tool_info({ tool_id }) gives a tool's contract)";

const MISSING_GLOBALS: Record<string, string> = {
  require: `there is no require() here: ${NO_MODULES}`,
  module: `there is no module object here: ${NO_MODULES}; end the program with return value`,
  exports: `there is no exports object here: ${NO_MODULES}; end the program with return value`,
  __dirname: `there is no file system here: ${NO_MODULES}`,
  __filename: `there is no file system here: ${NO_MODULES}`,
  process: "there is no process here (no environment, argv or exit): tools.* are the host's capabilities; end the program with return value",
  Buffer: "there is no Buffer here: use strings, TextEncoder-free string methods or typed arrays (Uint8Array)",
  fetch: "there is no network here: fetch() does not exist; only tools.* reach the outside",
  XMLHttpRequest: "there is no network here: only tools.* reach the outside",
  WebSocket: "there is no network here: only tools.* reach the outside",
  setInterval: "setInterval does not exist here: loop with await sleep(ms), or use setTimeout",
  clearInterval: "setInterval does not exist here: loop with await sleep(ms), or use setTimeout/clearTimeout",
  setImmediate: "setImmediate does not exist here: use await sleep(0) or setTimeout(fn, 0)",
  queueMicrotask: "queueMicrotask does not exist here: use Promise.resolve().then(fn)",
  performance: "performance does not exist here: use Date.now() for times, budget().ms_left for what is left of the deadline",
  window: "there is no window or DOM here: the program runs in a sandbox; use globalThis",
  document: "there is no document or DOM here: the program runs in a sandbox",
  localStorage: "there is no localStorage here: store(key, value) and load(key) keep JSON values between runs of a session",
  sessionStorage: "there is no sessionStorage here: store(key, value) and load(key) keep JSON values between runs of a session",
  global: "there is no global here: use globalThis",
  Deno: `this is not Deno: ${NO_MODULES}`,
  Bun: `this is not Bun: ${NO_MODULES}`,
  print: "print() does not exist: text(value) is what reaches you (console.log only goes to logs)",
  echo: "echo() does not exist: text(value) is what reaches you",
  alert: "alert() does not exist: text(value) is what reaches you",
  structuredClone: "structuredClone does not exist here: copy with JSON.parse(JSON.stringify(value))",
  TextEncoder: "TextEncoder does not exist here: work with strings",
  TextDecoder: "TextDecoder does not exist here: work with strings",
  URL: "URL does not exist here: build and split URLs with string methods",
  URLSearchParams: "URLSearchParams does not exist here: build query strings with encodeURIComponent",
  crypto: "crypto does not exist here: Math.random() is the only source of randomness",
  atob: "atob does not exist here: decode in a tool, or by hand",
  btoa: "btoa does not exist here: encode in a tool, or by hand",
  AbortController: "AbortController does not exist here: tool calls still pending when the program ends are cancelled for you",
  Intl: "Intl does not exist here: format numbers with toFixed(digits) and String(n), dates with toISOString()",
  exit: "exit() does not exist: end the program with return (return value hands back a result)",
  quit: "quit() does not exist: end the program with return (return value hands back a result)",
  Blob: "Blob does not exist here: work with strings",
  Response: "there is no network here: Response does not exist; only tools.* reach the outside",
  Request: "there is no network here: Request does not exist; only tools.* reach the outside",
  Headers: "there is no network here: Headers does not exist; only tools.* reach the outside",
};

/** The sandbox's own globals, for "did you mean" among names a program can use. */
const SANDBOX_GLOBALS = [
  "tools",
  "text",
  "console",
  "store",
  "load",
  "sleep",
  "setTimeout",
  "clearTimeout",
  "budget",
  "JSON",
  "Math",
  "Object",
  "Array",
  "Promise",
  "String",
  "Number",
  "Boolean",
  "Date",
  "Map",
  "Set",
  "RegExp",
  "Error",
  "Symbol",
  "BigInt",
  "globalThis",
];

const TYPE_NAMES = new Set(["string", "number", "boolean", "any", "unknown", "never", "object", "void", "undefined", "bigint", "symbol"]);

function toolList(tools: ReadonlyMap<string, Tool>): string {
  const paths = [...tools.keys()];
  if (paths.length === 0) return "no tools are bound";
  return `bound here: ${paths
    .slice(0, 12)
    .map((path) => `tools.${path}`)
    .join(", ")}${paths.length > 12 ? ", …" : ""}`;
}

// ---- syntax errors -----------------------------------------------------------------------------

async function syntax(input: DiagnoseInput): Promise<Diagnosis> {
  const { code, error } = input;
  const acorn = await loadAcorn();
  const lines = new Lines(code);
  // `import`/`export` are modules, which a program is not.
  const at = error.line !== undefined ? lines.offset(error.line, error.column ?? 1) : -1;
  const moduleSyntax = findModuleSyntax(acorn, code);
  if (moduleSyntax) {
    const pos = lines.position(moduleSyntax.start);
    const what = moduleSyntax.kind === "import" ? "import" : "export";
    return {
      message: `${what} is not available: ${NO_MODULES}`,
      hint:
        moduleSyntax.kind === "import"
          ? `drop the import; call host capabilities as tools.<name>(args) (${toolList(input.tools)})`
          : "drop the export; end the program with return value to hand back a result",
      ...pos,
    };
  }
  // A bracket that is never closed, closed by the wrong one, or closing nothing: say where.
  const balance = bracketBalance(acorn, code);
  if (balance?.kind === "unmatched") {
    const closed = lines.position(balance.close.start);
    const opener = quote(OPENER[balance.close.char]!);
    return {
      message: `SyntaxError: the ${quote(balance.close.char)} at line ${closed.line} closes nothing`,
      hint: `the ${quote(balance.close.char)} at line ${closed.line}, column ${closed.column} has no ${opener} before it to close: remove it, or add the missing ${opener}`,
      line: closed.line,
      column: closed.column,
    };
  }
  if (balance) {
    const opened = lines.position(balance.open.start);
    if (balance.kind === "unclosed") {
      return {
        message: `SyntaxError: the program ends inside the ${quote(balance.open.char)} opened at line ${opened.line}`,
        hint: `the ${quote(balance.open.char)} opened at line ${opened.line}, column ${opened.column} is never closed: add the missing ${quote(CLOSER[balance.open.char]!)}`,
        line: opened.line,
        column: opened.column,
      };
    }
    const closed = lines.position(balance.close!.start);
    return {
      hint: `the ${quote(balance.open.char)} opened at line ${opened.line}, column ${opened.column} is closed by ${quote(balance.close!.char)} at line ${closed.line}, column ${closed.column}: a ${quote(CLOSER[balance.open.char]!)} is missing or one bracket too many`,
      line: closed.line,
      column: closed.column,
    };
  }
  // Otherwise acorn's own wording is often the clearer one; some classes get their fix.
  try {
    acorn.parse(code, PARSE_OPTIONS);
  } catch (err) {
    const raised = err as { message?: string; pos?: number; raisedAt?: number };
    const message = String(raised.message ?? "").replace(/ \(\d+:\d+\)$/, "");
    const pos = typeof raised.pos === "number" ? lines.position(raised.pos) : undefined;
    const nearAwait = at >= 0 && /\bawait\b/.test(code.slice(Math.max(0, at - 7), at + 6));
    if (/Cannot use keyword 'await' outside an async function|'await' is only valid/i.test(message) || nearAwait) {
      return {
        hint: "await is only allowed directly in the program or in an async function: mark the enclosing function async (async (x) => { … }); in a loop over items use for (const x of items) { await … } or await Promise.all(items.map(async (x) => …)) instead of forEach",
        ...(pos ?? {}),
      };
    }
    if (/Unterminated string/i.test(message) && pos)
      return {
        hint: `the string opened at line ${pos.line}, column ${pos.column} is never closed: end it with the same quote on that line (text over several lines needs a template literal \`…\`)`,
        ...pos,
      };
    if (/Unterminated template/i.test(message) && typeof raised.pos === "number") {
      // acorn points past the last ${…} part of the template; it opened at the backtick before that.
      let opening = raised.pos;
      while (opening > 0 && !(code[opening] === "`" && code[opening - 1] !== "\\")) opening--;
      const opened = lines.position(opening);
      return { hint: `the template literal opened at line ${opened.line}, column ${opened.column} is never closed: add the closing \``, relocated: true, ...opened };
    }
    // "Unexpected token" says no more than QuickJS did; the code frame shows where.
    if (message !== "" && message !== "Unexpected token" && pos) return { hint: `the parser reads it as: ${message}`, ...pos };
  }
  return {};
}

const CLOSER: Record<string, string> = { "(": ")", "[": "]", "{": "}", "${": "}" };
const OPENER: Record<string, string> = { ")": "(", "]": "[", "}": "{" };

function quote(char: string): string {
  return `"${char}"`;
}

function findModuleSyntax(acorn: Acorn, code: string): { kind: "import" | "export"; start: number } | undefined {
  if (!/(^|[\s;}])(import|export)\b/.test(code)) return undefined;
  try {
    const program = acorn.parse(code, { ...PARSE_OPTIONS, sourceType: "module" }) as unknown as N;
    for (const statement of program.body as N[]) {
      if (statement.type === "ImportDeclaration") return { kind: "import", start: statement.start };
      if (statement.type.startsWith("Export")) return { kind: "export", start: statement.start };
    }
  } catch {
    // Not valid as a module either: look for the keyword starting a statement.
    const match = /(^|[\n;}])\s*(import\s+[\w{*$]|import\s*["']|export\s+(default|const|let|var|function|class|async|\{|\*))/.exec(code);
    if (match) return { kind: match[2]!.startsWith("import") ? "import" : "export", start: match.index + match[0].indexOf(match[2]!) };
  }
  return undefined;
}

interface Bracket {
  char: string;
  start: number;
}

/** The first bracket that does not match, by acorn's tokens (strings, templates, regexps and comments read right). */
function bracketBalance(acorn: Acorn, code: string): { kind: "unclosed" | "mismatch"; open: Bracket; close?: Bracket } | { kind: "unmatched"; open?: undefined; close: Bracket } | undefined {
  const lines = new Lines(code);
  // Each line's indentation and where its first non-blank character is, computed once (a
  // minified program is one long line: per-token slicing of it was quadratic).
  const indents = lines.starts.map((start) => {
    let i = start;
    while (i < code.length && (code[i] === " " || code[i] === "\t")) i++;
    return i;
  });
  const lineOf = (offset: number): number => lines.position(offset).line;
  const indent = (offset: number): number => {
    const line = lineOf(offset);
    return indents[line - 1]! - lines.starts[line - 1]!;
  };
  const startsLine = (offset: number): boolean => indents[lineOf(offset) - 1] === offset;
  const stack: Bracket[] = [];
  /** The first pair whose closer sits on its own line indented unlike its opener: where a closer was likely dropped. */
  let suspect: Bracket | undefined;
  try {
    for (const token of acorn.tokenizer(code, PARSE_OPTIONS)) {
      const label = token.type.label;
      if (label === "(" || label === "[" || label === "{" || label === "${") stack.push({ char: label, start: token.start });
      else if (label === ")" || label === "]" || label === "}") {
        const open = stack.pop();
        // A closer with nothing open: QuickJS reads it as the end of the program's own wrapper.
        if (!open) return { kind: "unmatched", close: { char: label, start: token.start } };
        if (CLOSER[open.char] !== label) return { kind: "mismatch", open, close: { char: label, start: token.start } };
        if (!suspect && startsLine(token.start) && lineOf(open.start) !== lineOf(token.start) && indent(token.start) !== indent(open.start)) suspect = open;
      }
    }
  } catch {
    // An unterminated string or the like: not a bracket problem.
    return undefined;
  }
  if (stack.length === 0) return undefined;
  return { kind: "unclosed", open: suspect ?? stack[stack.length - 1]! };
}

// ---- exceptions --------------------------------------------------------------------------------

async function exception(input: DiagnoseInput): Promise<Diagnosis> {
  const { error, code } = input;
  const message = error.message;
  const site = await failedCallSite(input);
  if (site) return site;
  const reference = /^ReferenceError: '([^']+)' is not defined$/.exec(message);
  if (reference) return referenceError(input, reference[1]!);
  const module = /^ReferenceError: could not load module '([^']*)'/.exec(message);
  if (module) {
    const parsed = await parse(code);
    const found = parsed?.nodes.find((node) => node.type === "ImportExpression");
    const pos = found ? new Lines(code).position(found.start) : {};
    return { message: `import() is not available: ${NO_MODULES}`, hint: `drop the import of "${module[1]}"; call host capabilities as tools.<name>(args) (${toolList(input.tools)})`, ...pos };
  }
  const readOnly = /^TypeError: '([^']+)' is read-only$/.exec(message);
  if (readOnly) {
    const hint = `${readOnly[1]} is declared with const: declare it with let to assign to it again`;
    // QuickJS places this error at a later statement than the assignment; find the assignment.
    const parsed = await parse(code);
    const assignment = parsed && constAssignment(parsed, readOnly[1]!);
    return assignment ? { hint, relocated: true, ...new Lines(code).position(assignment.start) } : { hint };
  }
  if (error.line === undefined) return thrownWithoutStack(input);
  const parsed = await parse(code);
  if (!parsed) return {};
  const analysis = new Analysis(input, parsed);
  const offset = analysis.lines.offset(error.line, error.column ?? 1);
  if (/^TypeError: cannot read property (?:'[^']*' )?of (undefined|null)$/.test(message)) return analysis.missingValue(offset, /null$/.test(message));
  if (/^TypeError: .*not iterable$/.test(message)) return analysis.notIterable(offset);
  if (/^TypeError: .*not a constructor$/.test(message)) return analysis.notAConstructor(offset);
  if (/^TypeError: (.* )?not a function$/.test(message)) return analysis.notAFunction(offset);
  if (/^TypeError: cannot convert to object$/.test(message)) return analysis.notAnObject(offset);
  if (/^SyntaxError: /.test(message)) return analysis.jsonParse(offset);
  return {};
}

/**
 * An exception with no position is a value that is not an Error (`throw "bad input"`,
 * `reject({ code: 1 })`): QuickJS gives it no stack. It was thrown by the program's own `throw`,
 * `Promise.reject(…)` or a `reject(…)` call, so the one whose literal is the message, or the only
 * one there is, is where it came from.
 */
async function thrownWithoutStack(input: DiagnoseInput): Promise<Diagnosis> {
  const { error, code } = input;
  const parsed = await parse(code);
  if (!parsed) return {};
  const argument = (node: N): N | undefined => {
    if (node.type === "ThrowStatement") return node.argument;
    if (node.type !== "CallExpression" || node.arguments.length !== 1) return undefined;
    const callee = node.callee as N;
    const rejects =
      (callee.type === "Identifier" && /^rej/i.test(callee.name)) ||
      (callee.type === "MemberExpression" && !callee.computed && callee.object.type === "Identifier" && callee.object.name === "Promise" && callee.property.name === "reject");
    return rejects ? node.arguments[0] : undefined;
  };
  const sites = parsed.nodes.filter((node) => argument(node) !== undefined && !isErrorConstruction(argument(node)!));
  const literal = sites.filter((node) => {
    const value = argument(node)!;
    return value.type === "Literal" && String(value.value) === error.message;
  });
  const site = literal.length === 1 ? literal[0] : sites.length === 1 ? sites[0] : undefined;
  const value = site && argument(site)!;
  const fix =
    value?.type === "ObjectExpression"
      ? "throw an Error with the fields on it instead, e.g. throw Object.assign(new Error(message), { code })"
      : `throw new Error(${value?.type === "Literal" && typeof value.value === "string" ? JSON.stringify(value.value) : "message"}) instead`;
  const hint = `the program threw a value that is not an Error, which carries no line or stack: ${fix}`;
  return site ? { hint, ...new Lines(code).position(site.start) } : { hint };
}

/** `new Error(…)`, `Error(…)`, `new TypeError(…)`: a value that gets its own stack. */
function isErrorConstruction(node: N): boolean {
  return (node.type === "NewExpression" || node.type === "CallExpression") && node.callee.type === "Identifier" && /Error$/.test(node.callee.name);
}

/** The first assignment (=, +=, ++ …) to `name` after a `const name` declaration of the program. */
function constAssignment(parsed: Parsed, name: string): N | undefined {
  const declared = parsed.nodes.find(
    (node) => node.type === "VariableDeclaration" && node.kind === "const" && (node.declarations as N[]).some((d) => d.id.type === "Identifier" && d.id.name === name),
  );
  if (!declared) return undefined;
  const target = (node: N): N | undefined => (node.type === "AssignmentExpression" ? node.left : node.type === "UpdateExpression" ? node.argument : undefined);
  return parsed.nodes.filter((node) => node.start > declared.start && target(node)?.type === "Identifier" && target(node)!.name === name).sort((a, b) => a.start - b.start)[0];
}

/**
 * A tool's rejection gets its stack where the program first throws it, its `await` (no capture
 * per call: that cost ~2 µs on every call). When that await is not the call itself (a promise
 * awaited later, one call of a Promise.all), the failure is placed at the call that failed: the
 * one call of that tool in the statement that threw it, or in the whole program.
 */
async function failedCallSite(input: DiagnoseInput): Promise<Diagnosis | undefined> {
  const { error } = input;
  const text = error.name && error.message.startsWith(`${error.name}: `) ? error.message.slice(error.name.length + 2) : error.message;
  const failed = input.failedCalls?.find((call) => call.error !== undefined && (call.error.endsWith("…") ? text.startsWith(call.error.slice(0, -1)) : text === call.error));
  if (!failed) return undefined;
  const parsed = await parse(input.code);
  if (!parsed) return undefined;
  const analysis = new Analysis(input, parsed);
  const calls = parsed.nodes.filter((node) => node.type === "CallExpression" && analysis.toolPath(node.callee) === failed.tool);
  let chosen: N | undefined;
  if (error.line !== undefined) {
    const offset = analysis.lines.offset(error.line, error.column ?? 1);
    const statement = parsed.nodes
      .filter((node) => /Statement$|Declaration$/.test(node.type) && node.type !== "BlockStatement" && node.start <= offset && offset <= node.end)
      .sort((a, b) => a.end - a.start - (b.end - b.start))[0];
    let inside = statement ? calls.filter((call) => call.start >= statement.start && call.end <= statement.end) : [];
    // Several calls of the tool there (a Promise.all): the one whose literal argument has the failed call's keys.
    if (inside.length > 1) inside = inside.filter((call) => sameKeys(call.arguments[0], failed.args));
    if (inside.length === 1) chosen = inside[0];
    else if (inside.length > 1) return undefined;
  }
  chosen ??= calls.length === 1 ? calls[0] : undefined;
  if (!chosen) return undefined;
  const at = analysis.lines.position(chosen.callee.end);
  if (at.line === error.line && at.column === error.column) return undefined;
  return { relocated: true, ...at };
}

/** Whether an argument written as an object literal has exactly the keys of a call's JSON arguments. */
function sameKeys(argument: N | undefined, json: string): boolean {
  if (argument?.type !== "ObjectExpression") return false;
  let sent: unknown;
  try {
    sent = JSON.parse(json);
  } catch {
    return false;
  }
  if (!sent || typeof sent !== "object" || Array.isArray(sent)) return false;
  const written = (argument.properties as N[]).map((property) => (property.type === "Property" && !property.computed ? (property.key.name ?? String(property.key.value)) : undefined));
  if (written.includes(undefined)) return false;
  const keys = Object.keys(sent);
  return keys.length === written.length && keys.every((key) => written.includes(key));
}

function referenceError(input: DiagnoseInput, name: string): Diagnosis {
  const known = MISSING_GLOBALS[name];
  if (known !== undefined) return { hint: known };
  const tool = [...input.tools.keys()].find((path) => path === name || path.endsWith(`.${name}`));
  if (tool) return { hint: `${name} is a tool: call it as await tools.${tool}(args)` };
  if (TYPE_NAMES.has(name)) return { hint: `${name} is a TypeScript type, not a value: remove the type argument (f<${name}>(…) → f(…)) or the annotation that uses it` };
  const declared = declaredNames(input.code);
  const candidates = [...new Set([...declared, ...SANDBOX_GLOBALS])];
  const closest = closestNames(name, candidates, 1)[0];
  if (closest !== undefined && isCloseName(name, closest)) return { hint: `${name} is not defined: did you mean ${closest}?` };
  return {
    hint: `${name} is not defined: declare it (const ${name} = …) before this line; the sandbox's own globals are tools, text, console, store, load, sleep, setTimeout, clearTimeout and budget`,
  };
}

/** A misspelling of a built-in name: the same letters swapped ("lenght"), or one letter off. */
function typo(name: string, builtin: string): boolean {
  const sorted = (word: string) => [...word.toLowerCase()].sort().join("");
  if (sorted(name) === sorted(builtin)) return true;
  return levenshteinOne(name.toLowerCase(), builtin.toLowerCase());
}

function levenshteinOne(a: string, b: string): boolean {
  if (a === b) return true;
  if (a.length === b.length) {
    let diff = 0;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i] && ++diff > 1) return false;
    return true;
  }
  const [short, long] = a.length < b.length ? [a, b] : [b, a];
  for (let i = 0; i < long.length; i++) if (long.slice(0, i) + long.slice(i + 1) === short) return true;
  return false;
}

function declaredNames(code: string): string[] {
  const names = new Set<string>();
  for (const match of code.matchAll(/\b(?:const|let|var|function|class)\s+([A-Za-z_$][\w$]*)/g)) names.add(match[1]!);
  return [...names];
}

/** Where a value in the program came from: a tool's result (or a path inside it). */
interface Origin {
  tool: string;
  call: N;
  segments: PathSegment[];
  /** The call was not awaited: the value is the promise, not the result. */
  promise: boolean;
  /** `await tools.x().key`: the await applied to a property of the promise. */
  awaitedMember?: boolean;
}

/** Properties of built-in values a misspelling most often aims at. */
const COMMON_PROPERTIES = [
  "length",
  "size",
  "name",
  "message",
  "keys",
  "values",
  "entries",
  "toString",
  "prototype",
  "constructor",
  "push",
  "map",
  "filter",
  "forEach",
  "reduce",
  "join",
  "split",
  "trim",
  "slice",
  "includes",
  "indexOf",
  "replace",
  "toUpperCase",
  "toLowerCase",
  "startsWith",
  "endsWith",
  "padStart",
  "padEnd",
  "toFixed",
  "sort",
  "concat",
  "find",
  "some",
  "every",
  "flat",
  "flatMap",
  "then",
  "catch",
  "finally",
];

/** Array methods whose result has the array's shape, and those that give one of its items. */
const SAME_ARRAY = new Set(["filter", "sort", "toSorted", "slice", "reverse", "toReversed", "concat"]);
const ONE_ITEM = new Set(["find", "findLast", "at", "pop", "shift"]);

const ITEM_CALLBACKS = new Set(["map", "forEach", "filter", "find", "findIndex", "findLast", "findLastIndex", "some", "every", "flatMap", "sort", "toSorted"]);
const ARRAY_METHODS = new Set([...ITEM_CALLBACKS, "reduce", "slice", "join", "includes", "indexOf", "at", "concat", "length", "entries", "keys", "values", "push", "reverse"]);

class Analysis {
  readonly lines: Lines;
  constructor(
    private readonly input: DiagnoseInput,
    private readonly parsed: Parsed,
  ) {
    this.lines = new Lines(input.code);
  }

  private text(node: N): string {
    const source = (this.input.source ?? this.input.code).slice(node.start, node.end);
    return source.length > 60 ? `${source.slice(0, 57)}…` : source;
  }

  /** The expression as the operand of a member access: parenthesised unless it is a name, access or call. */
  private operand(node: N): string {
    const shown = this.text(node);
    return ["Identifier", "MemberExpression", "CallExpression", "ThisExpression"].includes(node.type) ? shown : `(${shown})`;
  }

  /** The name at the root of `node`, when it holds the unawaited promise of an async function the program declares. */
  private asyncPromise(node: N): { holder: string; name: string; line: number } | undefined {
    let root = node;
    while (root.type === "MemberExpression") root = root.object;
    if (root.type !== "Identifier") return undefined;
    const declarator = this.parsed.nodes.find(
      (candidate) => candidate.type === "VariableDeclarator" && candidate.id.type === "Identifier" && candidate.id.name === root.name && candidate.start < root.start,
    );
    const init = declarator?.init as N | undefined;
    if (init?.type !== "CallExpression" || init.callee.type !== "Identifier") return undefined;
    const name = init.callee.name as string;
    const isAsync = this.parsed.nodes.some(
      (candidate) =>
        (candidate.type === "FunctionDeclaration" && candidate.async && candidate.id?.name === name) ||
        (candidate.type === "VariableDeclarator" && candidate.id.type === "Identifier" && candidate.id.name === name && candidate.init?.async === true),
    );
    return isAsync ? { holder: root.name as string, name, line: this.lines.position(init.start).line } : undefined;
  }

  /** Nodes containing `offset`, innermost first. */
  private around(offset: number, test: (node: N) => boolean): N[] {
    return this.parsed.nodes.filter((node) => node.start <= offset && offset <= node.end && test(node)).sort((a, b) => a.end - a.start - (b.end - b.start));
  }

  /** `x.y` when `callee` is `tools.x.y`. */
  toolPath(callee: N): string | undefined {
    return this.toolPathOf(callee);
  }

  private toolPathOf(callee: N): string | undefined {
    const names: string[] = [];
    let node = callee;
    while (node.type === "MemberExpression" && !node.computed && node.property.type === "Identifier") {
      names.unshift(node.property.name as string);
      node = node.object;
    }
    if (node.type !== "Identifier" || node.name !== "tools" || names.length === 0) return undefined;
    return names.join(".");
  }

  /** The tool result (or path in it) an expression evaluates to, as far as the code says. */
  origin(expr: N | undefined, depth = 0): Origin | undefined {
    if (!expr || depth > 20) return undefined;
    switch (expr.type) {
      case "AwaitExpression": {
        const inner = this.origin(expr.argument, depth + 1);
        // `await tools.x().items` awaits a property of the promise, not the result.
        if (!inner) return undefined;
        return inner.promise && inner.segments.length > 0 ? { ...inner, awaitedMember: true } : { ...inner, promise: false };
      }
      case "CallExpression": {
        const path = this.toolPathOf(expr.callee);
        if (path !== undefined && this.input.tools.has(path)) return { tool: path, call: expr, segments: [], promise: true };
        // r.items.filter(…) is still r.items' shape; r.items.find(…) one of its items.
        const method = expr.callee.type === "MemberExpression" && !expr.callee.computed ? (expr.callee.property.name as string) : undefined;
        if (method && SAME_ARRAY.has(method)) return this.origin(expr.callee.object, depth + 1);
        if (method && ONE_ITEM.has(method)) return this.extend(this.origin(expr.callee.object, depth + 1), [0]);
        return undefined;
      }
      case "ChainExpression":
        return this.origin(expr.expression, depth + 1);
      case "LogicalExpression":
        return this.origin(expr.left, depth + 1);
      case "MemberExpression": {
        const base = this.origin(expr.object, depth + 1);
        return base && { ...base, segments: [...base.segments, this.segment(expr)] };
      }
      case "Identifier":
        return this.binding(expr, depth);
      default:
        return undefined;
    }
  }

  private segment(member: N): PathSegment {
    if (!member.computed && member.property.type === "Identifier") return member.property.name as string;
    if (member.property.type === "Literal" && (typeof member.property.value === "string" || typeof member.property.value === "number")) return member.property.value as PathSegment;
    return 0;
  }

  /** The declaration of `use` that is in scope at it (the nearest earlier one, by position). */
  private binding(use: N, depth: number): Origin | undefined {
    const name = use.name as string;
    let best: { node: N; origin: () => Origin | undefined } | undefined;
    const consider = (node: N, origin: () => Origin | undefined): void => {
      if (node.start > use.start) return;
      if (!this.inScope(node, use)) return;
      if (!best || node.start > best.node.start) best = { node, origin };
    };
    for (const node of this.parsed.nodes) {
      if (node.type === "VariableDeclarator") {
        this.patternNames(node.id, []).forEach(([found, path]) => {
          if (found !== name) return;
          const loop = this.parsed.parent.get(this.parsed.parent.get(node)!);
          if (loop && (loop.type === "ForOfStatement" || loop.type === "ForInStatement") && loop.left === this.parsed.parent.get(node)) {
            consider(node, () => this.extend(this.origin(loop.right, depth + 1), [0, ...path]));
          } else {
            consider(node, () => this.extend(this.origin(node.init, depth + 1), path));
          }
        });
      } else if (node.type === "AssignmentExpression" && node.left.type === "Identifier" && node.left.name === name && node.operator === "=") {
        consider(node, () => this.origin(node.right, depth + 1));
      } else if ((node.type === "ArrowFunctionExpression" || node.type === "FunctionExpression") && node.params.length > 0) {
        const call = this.parsed.parent.get(node);
        if (call?.type !== "CallExpression" || call.arguments[0] !== node || call.callee.type !== "MemberExpression") continue;
        const method = call.callee.property.name as string | undefined;
        const param = method === "reduce" ? node.params[1] : ITEM_CALLBACKS.has(method ?? "") ? node.params[0] : undefined;
        if (!param) continue;
        this.patternNames(param, []).forEach(([found, path]) => {
          if (found === name && use.start >= node.start && use.end <= node.end) consider(node, () => this.extend(this.origin(call.callee.object, depth + 1), [0, ...path]));
        });
      }
    }
    return best?.origin();
  }

  private extend(origin: Origin | undefined, path: PathSegment[]): Origin | undefined {
    if (!origin || (origin.promise && origin.segments.length === 0)) return origin;
    return { ...origin, segments: [...origin.segments, ...path] };
  }

  /** Names a binding pattern introduces, each with its path inside the bound value. */
  private patternNames(pattern: N | null | undefined, path: PathSegment[]): [string, PathSegment[]][] {
    if (!pattern) return [];
    switch (pattern.type) {
      case "Identifier":
        return [[pattern.name as string, path]];
      case "ObjectPattern":
        return (pattern.properties as N[]).flatMap((property) => {
          if (property.type !== "Property") return [];
          const key = !property.computed && property.key.type === "Identifier" ? (property.key.name as string) : property.key.type === "Literal" ? String(property.key.value) : undefined;
          return key === undefined ? [] : this.patternNames(property.value, [...path, key]);
        });
      case "ArrayPattern":
        return (pattern.elements as (N | null)[]).flatMap((element, i) => this.patternNames(element, [...path, i]));
      case "AssignmentPattern":
        return this.patternNames(pattern.left, path);
      default:
        return [];
    }
  }

  /** A declaration is in scope at a use when its enclosing block or function contains the use. */
  private inScope(declaration: N, use: N): boolean {
    let scope = this.parsed.parent.get(declaration);
    while (scope && !["BlockStatement", "Program", "ArrowFunctionExpression", "FunctionExpression", "FunctionDeclaration", "ForOfStatement", "ForStatement", "ForInStatement"].includes(scope.type)) {
      scope = this.parsed.parent.get(scope);
    }
    return !scope || (scope.start <= use.start && use.end <= scope.end);
  }

  private describe(origin: Origin): { descriptor: ToolDescriptor; view: ResultView } {
    const descriptor = describeTool(this.input.tools.get(origin.tool)!);
    const args = origin.call.arguments?.[0];
    const full =
      args?.type === "ObjectExpression" &&
      (args.properties as N[]).some((p) => p.type === "Property" && (p.key.name === "result_view" || p.key.value === "result_view") && p.value.type === "Literal" && p.value.value === "full");
    return { descriptor, view: full ? "full" : (this.input.resultView ?? "compact") };
  }

  private schemaOf(descriptor: ToolDescriptor, view: ResultView): Record<string, unknown> | undefined {
    return descriptor.output_views ? descriptor.output_views[view].schema : descriptor.output_schema;
  }

  private callLine(origin: Origin): number {
    return this.lines.position(origin.call.start).line;
  }

  /** `{ tasks, next_cursor }`: the top-level keys a tool's result has. */
  private shape(origin: Origin): string {
    const { descriptor, view } = this.describe(origin);
    const keys = topLevelKeys(this.schemaOf(descriptor, view));
    return keys.length > 0 ? `{ ${keys.join(", ")} }` : "an object";
  }

  private arrayKeys(origin: Origin): string[] {
    const { descriptor, view } = this.describe(origin);
    const schema = this.schemaOf(descriptor, view);
    const properties = (schema?.properties ?? {}) as Record<string, { type?: unknown }>;
    return Object.keys(properties).filter((key) => properties[key]?.type === "array");
  }

  private promiseHint(node: N, origin: Origin): Diagnosis {
    if (origin.awaitedMember) {
      const path = formatSegments(origin.segments);
      return { hint: `.${path} is read from the promise of tools.${origin.tool}() at line ${this.callLine(origin)}, not from its result: write (await tools.${origin.tool}(…)).${path}` };
    }
    // The name that holds the promise (r in r.items), or the call itself.
    let root = node;
    while (root.type === "MemberExpression" || root.type === "ChainExpression") root = root.type === "ChainExpression" ? root.expression : root.object;
    const holder = root.type === "Identifier" ? `${root.name as string} is` : `tools.${origin.tool}(…) returns`;
    return { hint: `${holder} the promise of tools.${origin.tool}() at line ${this.callLine(origin)}, not its result: await it (const r = await tools.${origin.tool}(…))` };
  }

  /** "cannot read property 'x' of undefined": which part of the path was missing, and why. */
  missingValue(offset: number, isNull: boolean): Diagnosis {
    // The access that failed is the one whose "." or "[" is at the error's column.
    const member =
      this.around(offset, (node) => node.type === "MemberExpression" && node.object.end <= offset && node.property.start > offset)[0] ??
      this.around(offset, (node) => node.type === "MemberExpression")[0];
    if (!member) return {};
    const object = member.object as N;
    const origin = this.origin(object);
    if (!origin) {
      if (isNull) return {};
      const pending = this.asyncPromise(object);
      if (pending) return { hint: `${pending.holder} is the promise of ${pending.name}() at line ${pending.line}, an async function, not its result: await it (const x = await ${pending.name}(…))` };
      // A misspelled built-in property (s.lenght, a.lenth) reads undefined, which then fails.
      if (object.type === "MemberExpression") {
        const name = this.segment(object);
        const builtin = typeof name === "string" ? closestNames(name, COMMON_PROPERTIES, 1)[0] : undefined;
        if (builtin !== undefined && builtin !== name && typo(name as string, builtin)) return { hint: `${this.text(object)} is undefined: did you mean .${builtin}?` };
      }
      return { hint: `${this.text(object)} is undefined here: check it before reading ${this.text(member)} (for example with ?.)` };
    }
    if (origin.promise) return this.promiseHint(object, origin);
    return this.fieldHint(object, origin);
  }

  private fieldHint(node: N, origin: Origin): Diagnosis {
    const { descriptor, view } = this.describe(origin);
    const shown = this.text(node);
    const segments = origin.segments;
    const verdict = classifyViewPath(descriptor, segments, view);
    const call = `the call at line ${this.callLine(origin)}`;
    switch (verdict.verdict) {
      case "requires_full":
        return { hint: `${shown} is only in the full result of tools.${origin.tool}: pass result_view: "full" in ${call}` };
      case "no_schema":
        return { hint: `tools.${origin.tool} declares no output type, so nothing promises ${formatSegments(segments) || "this value"}: look at what it returned first (text(value))` };
      case "unresolvable": {
        const missing = segments[verdict.missingSegment];
        const before = formatSegments(segments.slice(0, verdict.missingSegment));
        if (verdict.missingSegment === 0) {
          const keys = topLevelKeys(this.schemaOf(descriptor, view));
          const name = String(missing);
          const mcpShape = ["content", "text", "structuredContent", "result", "data", "output", "value", "body", "response"].includes(name);
          const closest = keys.length > 0 ? closestNames(name, keys, 1)[0] : undefined;
          const fix = mcpShape
            ? `a tool resolves to its structured result itself (not an MCP result with content or text): read its keys directly${keys[0] ? `, e.g. .${keys[0]}` : ""}`
            : closest !== undefined && isCloseName(name, closest)
              ? `did you mean .${closest}?`
              : `read one of its keys`;
          return { hint: `tools.${origin.tool} resolves to ${this.shape(origin)}, which has no "${name}": ${fix}` };
        }
        const keys = keysAt(this.schemaOf(descriptor, view), segments.slice(0, verdict.missingSegment));
        const closest = keys.length > 0 ? closestNames(String(missing), keys, 1)[0] : undefined;
        const fix =
          closest !== undefined && isCloseName(String(missing), closest) ? `did you mean .${closest}?` : keys.length > 0 ? `its keys are ${keys.join(", ")}` : "its schema does not declare it";
        return { hint: `${before} in the result of tools.${origin.tool} has no ${JSON.stringify(String(missing))}: ${fix}` };
      }
      default: {
        const last = segments[segments.length - 1];
        if (typeof last === "number" && node.type === "MemberExpression") {
          const list = this.text(node.object);
          return { hint: `${list} has no item [${last}] in this result of tools.${origin.tool} (it may be shorter, or empty): check ${list}.length first` };
        }
        return { hint: `${shown} is optional in the result of tools.${origin.tool} and this result has none: check it before use (${shown}?.…)` };
      }
    }
  }

  /** `new tools.x(…)`: a tool is a function to call, not a class. */
  notAConstructor(offset: number): Diagnosis {
    const created = this.around(offset, (node) => node.type === "NewExpression")[0];
    const tool = created && this.toolPathOf(created.callee);
    if (tool === undefined || !this.input.tools.has(tool)) return {};
    return { message: `TypeError: tools.${tool} is not a constructor`, hint: `tools.${tool} is a function, not a class: call it without new, as await tools.${tool}({ … })` };
  }

  notIterable(offset: number): Diagnosis {
    // Promise.all(a, b) instead of Promise.all([a, b]).
    const combinator = this.around(
      offset,
      (node) => node.type === "CallExpression" && /^Promise\.(all|allSettled|race|any)$/.test(this.input.code.slice(node.callee.start, node.callee.end).replace(/\s/g, "")),
    )[0];
    const first = combinator?.arguments[0] as N | undefined;
    if (combinator && first && first.type !== "ArrayExpression" && (combinator.arguments.length > 1 || this.origin(first)?.promise)) {
      const name = this.input.code.slice(combinator.callee.start, combinator.callee.end).replace(/\s/g, "");
      const items = (combinator.arguments as N[]).map((argument) => this.text(argument)).join(", ");
      return { hint: `${name} takes one array of promises: ${name}([${items.length > 80 ? "…" : items}])` };
    }
    const iterates = (node: N): boolean =>
      node.type === "ForOfStatement" ||
      (node.type === "VariableDeclarator" && node.id.type === "ArrayPattern") ||
      node.type === "SpreadElement" ||
      node.type === "CallExpression" ||
      node.type === "NewExpression";
    // QuickJS points at the iterated value, or at the start of a destructuring declaration.
    const line = this.lines.position(offset).line;
    const holder =
      this.around(offset, iterates)[0] ??
      this.parsed.nodes.find((node) => iterates(node) && node.type !== "CallExpression" && node.type !== "NewExpression" && this.lines.position(node.start).line === line);
    if (!holder) return {};
    const iterated: N | undefined =
      holder.type === "ForOfStatement" ? holder.right : holder.type === "VariableDeclarator" ? holder.init : holder.type === "SpreadElement" ? holder.argument : holder.arguments?.[0];
    return this.objectNotArray(iterated, holder.type === "ForOfStatement" ? (holder.await ? "for await" : "for…of") : "iterate");
  }

  private objectNotArray(node: N | undefined, how: string, method?: string): Diagnosis {
    if (!node) return {};
    const origin = this.origin(node);
    if (!origin) return {};
    if (origin.promise) return this.promiseHint(node, origin);
    const shown = this.text(node);
    if (origin.segments.length > 0) return this.fieldHint(node, origin);
    const arrays = this.arrayKeys(origin);
    const use = arrays.length > 0 ? `${this.operand(node)}.${arrays[0]}` : undefined;
    const fix =
      how === "for await"
        ? `the result is already here: for (const item of ${use ?? `Object.values(${shown})`})`
        : method
          ? use
            ? `use ${use}.${method}(…)`
            : `it has no array; read its keys`
          : use
            ? `iterate ${use}`
            : `iterate Object.entries(${shown})`;
    return { hint: `${shown} is the object tools.${origin.tool} resolves to (${this.shape(origin)}), not an array: ${fix}` };
  }

  notAFunction(offset: number): Diagnosis {
    const forAwait = this.around(offset, (node) => node.type === "ForOfStatement" && node.await === true)[0];
    if (forAwait) return this.objectNotArray(forAwait.right, "for await");
    const call = this.around(offset, (node) => node.type === "CallExpression")[0];
    if (!call) return {};
    const callee = call.callee as N;
    // tools.<namespace>(…): a namespace is not a tool.
    const path = this.toolPathOf(callee);
    if (path !== undefined && !this.input.tools.has(path)) {
      const inside = [...this.input.tools.keys()].filter((candidate) => candidate.startsWith(`${path}.`));
      if (inside.length > 0)
        return {
          hint: `tools.${path} is a namespace of tools, not a tool: call one of ${inside
            .slice(0, 8)
            .map((p) => `tools.${p}`)
            .join(", ")}`,
        };
    }
    if (callee.type !== "MemberExpression") return {};
    const method = this.segment(callee);
    const object = callee.object as N;
    // tools.x.run(…), tools.x.invoke(…): the tool is the function itself.
    const tool = this.toolPathOf(object);
    if (tool !== undefined && this.input.tools.has(tool)) return { hint: `tools.${tool} is the tool itself, a function: call it as await tools.${tool}({ … }) (it has no ${String(method)}())` };
    const origin = this.origin(object);
    if (!origin) return {};
    if (origin.promise) return this.promiseHint(object, origin);
    if (typeof method === "string" && ARRAY_METHODS.has(method)) return this.objectNotArray(object, "method", method);
    if (origin.segments.length > 0) return this.fieldHint(callee, { ...origin, segments: [...origin.segments, method] });
    return { hint: `tools.${origin.tool} resolves to ${this.shape(origin)}; it has no method ${String(method)}()` };
  }

  /** Object.keys(x) and the like of undefined: where x came from. */
  notAnObject(offset: number): Diagnosis {
    const call = this.around(offset, (node) => node.type === "CallExpression" && node.arguments.length > 0)[0];
    const argument = call?.arguments[0] as N | undefined;
    if (!argument) return {};
    const origin = this.origin(argument);
    if (!origin) return { hint: `${this.text(argument)} is undefined or null here: check it before passing it to ${this.text(call!.callee)}()` };
    if (origin.promise) return this.promiseHint(argument, origin);
    return this.fieldHint(argument, origin);
  }

  /** A runtime SyntaxError at a JSON.parse call: parsing what already is an object, or nothing. */
  jsonParse(offset: number): Diagnosis {
    const call = this.around(offset, (node) => node.type === "CallExpression" && this.input.code.slice(node.callee.start, node.callee.end).replace(/\s/g, "") === "JSON.parse")[0];
    if (!call) return {};
    const argument = call.arguments[0] as N | undefined;
    const origin = this.origin(argument);
    if (!origin || !argument) return { hint: `JSON.parse got text that is not JSON: look at it first with text(${argument ? this.text(argument) : "value"})` };
    if (origin.promise) return this.promiseHint(argument, origin);
    const tool = this.input.tools.get(origin.tool)!;
    if (origin.segments.length === 0 && tool.hasOutput) {
      return { hint: `${this.text(argument)} is already an object (tools.${origin.tool} resolves to parsed JSON: ${this.shape(origin)}): use it directly, without JSON.parse` };
    }
    if (origin.segments.length > 0) return this.fieldHint(argument, origin);
    return { hint: `tools.${origin.tool} resolved to text that is not JSON: look at it first with text(${this.text(argument)})` };
  }
}

// ---- runs stopped by a limit -------------------------------------------------------------------

function busiest(callsByTool: ReadonlyMap<string, number>): [string, number] | undefined {
  let best: [string, number] | undefined;
  for (const entry of callsByTool) if (!best || entry[1] > best[1]) best = entry;
  return best;
}

function statuses(input: DiagnoseInput): string {
  const seen = [...input.taskStatuses].slice(-10);
  if (seen.length === 0) return "";
  return `; the last statuses it saw: ${seen.map(([id, status]) => `${id} ${status}`).join(", ")}${input.taskStatuses.size > 10 ? ", …" : ""}`;
}

function stalled(input: DiagnoseInput): Diagnosis {
  const stall = input.error.stall;
  if (!stall) {
    if (/nothing can settle/.test(input.error.message))
      return { hint: "an await is waiting on a promise that nothing resolves (a new Promise whose resolve is never called?): resolve it, or await the tool call itself" };
    return {};
  }
  const deadline = `its ${input.timeoutMs} ms deadline`;
  if (stall.busyMs >= input.timeoutMs / 2 || (stall.waits === 0 && stall.busyMs > 0)) {
    return {
      message: `the program ran past ${deadline} without yielding: synchronous code ran for the last ${stall.busyMs} ms (a loop that never awaits, or a busy-wait), so no timer or tool result could come in`,
      hint: "to wait, use await sleep(ms) instead of spinning; to stop in time, check budget().ms_left in long loops",
    };
  }
  const top = busiest(input.callsByTool);
  if (top && top[1] >= 3) {
    return {
      message: `the program was still polling when ${deadline} passed: it called tools.${top[0]} ${top[1]} times${statuses(input)}`,
      // Tasks have a way to be waited for that costs one call and cannot outlast the deadline.
      hint:
        input.taskStatuses.size > 0
          ? "wait for the tasks in one call instead of polling: await tools.ptc_task_wait({ task_ids }) returns when they have ended, or shortly before the deadline with timed_out: true"
          : "poll with await sleep(ms) between calls and stop before the deadline (budget().ms_left), or return what you have and check again in a later run",
    };
  }
  const waiting = [
    stall.pendingCalls > 0 ? `${stall.pendingCalls} tool call${stall.pendingCalls === 1 ? "" : "s"}` : "",
    stall.pendingTimers > 0 ? `${stall.pendingTimers} timer${stall.pendingTimers === 1 ? "" : "s"} or sleep` : "",
  ]
    .filter(Boolean)
    .join(" and ");
  return {
    message: `the program ran past ${deadline} while waiting${waiting ? ` for ${waiting}` : ""}`,
    hint: "stop before the deadline (check budget().ms_left), wait less, or pass a larger timeout",
  };
}

function callLimit(input: DiagnoseInput): Diagnosis {
  const top = busiest(input.callsByTool);
  if (!top) return {};
  const poll = top[1] >= input.maxToolCalls / 2;
  return {
    hint: poll
      ? `${top[1]} of the calls went to tools.${top[0]}${statuses(input)}: when polling, wait between calls with await sleep(1000); check budget().tool_calls_left to stop in time`
      : `check budget().tool_calls_left to stop in time, or do the work in fewer calls`,
  };
}

/**
 * Where a stopped run most likely spent its time, for a run the engine cannot place: the call site
 * of the tool it polled, a loop that never awaits (busy), or a promise nothing resolves.
 */
async function withSite(input: DiagnoseInput, diagnosis: Diagnosis): Promise<Diagnosis> {
  if (diagnosis.hint === undefined && diagnosis.message === undefined) return diagnosis;
  const parsed = await parse(input.code);
  if (!parsed) return diagnosis;
  const lines = new Lines(input.code);
  const stall = input.error.stall;
  let site: N | undefined;
  if (input.error.kind === "timeout" && stall && stall.busyMs > 0 && (stall.busyMs >= input.timeoutMs / 2 || stall.waits === 0)) {
    const contains = (node: N, type: string): boolean => parsed.nodes.some((inner) => inner.type === type && inner.start >= node.start && inner.end <= node.end);
    site = parsed.nodes.find((node) => ["WhileStatement", "DoWhileStatement", "ForStatement"].includes(node.type) && !contains(node, "AwaitExpression"));
  } else if (/nothing can settle/.test(input.error.message)) {
    site = parsed.nodes.find((node) => node.type === "NewExpression" && node.callee.type === "Identifier" && node.callee.name === "Promise");
  } else {
    const top = busiest(input.callsByTool);
    const analysis = new Analysis(input, parsed);
    if (top) site = parsed.nodes.find((node) => node.type === "CallExpression" && analysis.origin(node)?.tool === top[0]);
  }
  if (!site) return diagnosis;
  const at = lines.position(site.start);
  const what = site.type === "CallExpression" ? "the call" : site.type === "NewExpression" ? "the promise" : "the loop";
  return { ...diagnosis, hint: `${diagnosis.hint ?? ""}${diagnosis.hint ? " " : ""}(${what} at line ${at.line})`, ...at };
}

// ---- promises nobody waits for -----------------------------------------------------------------

export interface Floating {
  /** `tools.x`, the async function's name, or the expression (`items.forEach`, `Promise.all`). */
  callee: string;
  /**
   * A tool call (maybe through .then/.catch), a tool call's promise kept in a variable (awaited
   * later, or not), a call of an async function, a forEach with an async callback, a Promise combinator.
   */
  kind: "tool" | "kept" | "async" | "forEach" | "combinator";
  line: number;
  column: number;
}

/**
 * A cheap text check: could the program have a statement that drops the promise of a tool call
 * (`tools.x(...);` on its own) or of an async function it declares? No parse: a scan for
 * `tools.` (and declared async names) at the start of a statement.
 */
export function mayDropPromises(code: string): boolean {
  if (statementStart(code, "tools.") || statementStart(code, "Promise.")) return true;
  if (code.includes("forEach") && /\.forEach\(\s*async\b/.test(code)) return true;
  if (!code.includes("async")) return false;
  for (const match of code.matchAll(/async\s+function\s*\*?\s*([A-Za-z_$][\w$]*)|([A-Za-z_$][\w$]*)\s*=\s*async\b/g)) {
    const name = match[1] ?? match[2]!;
    if (statementStart(code, `${name}(`)) return true;
  }
  return false;
}

function statementStart(code: string, needle: string): boolean {
  for (let at = code.indexOf(needle); at >= 0; at = code.indexOf(needle, at + 1)) {
    const previous = at === 0 ? 32 : code.charCodeAt(at - 1);
    // Part of a longer name or a member access (foo.tools., mytools.): not a call of ours.
    if (previous === 46 || previous === 36 || previous === 95 || (previous >= 48 && previous <= 57) || (previous >= 65 && previous <= 90) || (previous >= 97 && previous <= 122)) continue;
    let i = at - 1;
    let newline = false;
    for (; i >= 0; i--) {
      const c = code.charCodeAt(i);
      if (c === 10) newline = true;
      else if (c !== 32 && c !== 9 && c !== 13) break;
    }
    const before = i < 0 ? "" : code[i]!;
    if (before === "" || before === ";" || before === "{" || before === "}" || (before === ")" && newline)) return true;
  }
  return false;
}

/** Statements whose value is a dropped promise: a tool call or a call of an async function the program declares. */
export async function floatingCalls(code: string, tools: ReadonlyMap<string, Tool>): Promise<Floating[]> {
  const parsed = await parse(code);
  if (!parsed) return [];
  const analysis = new Analysis({ code, tools } as DiagnoseInput, parsed);
  const asyncNames = new Set<string>();
  for (const node of parsed.nodes) {
    if (node.type === "FunctionDeclaration" && node.async && node.id) asyncNames.add(node.id.name as string);
    if (node.type === "VariableDeclarator" && node.id.type === "Identifier" && (node.init?.type === "ArrowFunctionExpression" || node.init?.type === "FunctionExpression") && node.init.async)
      asyncNames.add(node.id.name as string);
  }
  const out: Floating[] = [];
  const member = (call: N): string | undefined => (call.callee.type === "MemberExpression" && !call.callee.computed ? (call.callee.property.name as string) : undefined);
  for (const node of parsed.nodes) {
    if (node.type === "VariableDeclarator" && node.init?.type === "CallExpression") {
      const origin = analysis.origin(node.init);
      if (origin?.promise && origin.segments.length === 0) out.push({ callee: `tools.${origin.tool}`, kind: "kept", ...analysis.lines.position(node.init.start) });
      continue;
    }
    if (node.type !== "ExpressionStatement" || node.expression.type !== "CallExpression") continue;
    let call = node.expression as N;
    const position = analysis.lines.position(call.start);
    // tools.x().then(…).catch(…): the chain still drops the promise of the call.
    while (["then", "catch", "finally"].includes(member(call) ?? "") && call.callee.object.type === "CallExpression") call = call.callee.object;
    const origin = analysis.origin(call);
    if (origin?.promise && origin.segments.length === 0) out.push({ callee: `tools.${origin.tool}`, kind: "tool", ...position });
    else if (call.callee.type === "Identifier" && asyncNames.has(call.callee.name as string)) out.push({ callee: call.callee.name as string, kind: "async", ...position });
    else if (member(call) === "forEach" && (call.arguments[0]?.type === "ArrowFunctionExpression" || call.arguments[0]?.type === "FunctionExpression") && call.arguments[0].async) {
      out.push({ callee: `${code.slice(call.callee.start, call.callee.end)}`, kind: "forEach", ...position });
    } else if (
      call.callee.type === "MemberExpression" &&
      call.callee.object.type === "Identifier" &&
      call.callee.object.name === "Promise" &&
      ["all", "allSettled", "race", "any"].includes(member(call) ?? "")
    ) {
      out.push({ callee: `Promise.${member(call)}`, kind: "combinator", ...position });
    }
  }
  return out;
}
