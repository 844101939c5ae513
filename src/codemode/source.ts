// What models send is not always plain JavaScript: the program may sit in a Markdown code fence
// with prose around it, or be TypeScript. Both are turned into the JavaScript they mean before
// QuickJS sees them, keeping the line numbers a model will read in errors: those of the fenced
// program, and every line and column of TypeScript as written (types are blanked in place).
//
// Costs on the common path: one substring search for a fence. Types are only stripped after
// QuickJS refused the program as a syntax error (compiling runs none of it), so a JavaScript
// program never pays for the TypeScript parser, which takes ~370 ms to load the first time.

/** A program taken out of a Markdown fence. */
export interface FenceNote {
  /** The info string of the first fenced block (`js`, `ts`…), or null when it had none. */
  language: string | null;
  /** Fenced JavaScript/TypeScript blocks that were joined into the program. */
  blocks: number;
  /** Line of the message where the program's line 1 was. */
  firstLine: number;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`\n]*$/;
const CODE_LANGUAGES = new Set(["", "js", "javascript", "mjs", "cjs", "jsx", "ts", "typescript", "mts", "cts", "tsx", "node"]);

/**
 * The program inside Markdown fences, or undefined when the text is not fenced. Every JavaScript
 * or TypeScript block (tagged so, or untagged) is kept, in order; prose and other blocks are not.
 */
export function unfence(text: string): { code: string; fence: FenceNote } | undefined {
  if (!text.includes("```") && !text.includes("~~~")) return undefined;
  const lines = text.split("\n");
  const kept: string[] = [];
  let blocks = 0;
  let language: string | null | undefined;
  let firstLine = 0;
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!.replace(/\r$/, ""));
    if (!open) continue;
    const marker = open[1]!;
    const tag = open[2]!.toLowerCase();
    let end = i + 1;
    while (end < lines.length && !isClosing(lines[end]!, marker)) end++;
    if (CODE_LANGUAGES.has(tag)) {
      if (blocks === 0) {
        language = tag === "" ? null : tag;
        firstLine = i + 2;
      }
      blocks++;
      kept.push(...lines.slice(i + 1, end));
    }
    i = end;
  }
  if (blocks === 0) return undefined;
  return { code: kept.join("\n"), fence: { language: language ?? null, blocks, firstLine } };
}

function isClosing(line: string, marker: string): boolean {
  const trimmed = line.replace(/\r$/, "").trim();
  return trimmed.length >= marker.length && trimmed[0] === marker[0] && /^(`+|~+)$/.test(trimmed);
}

/** A TypeScript construct that needs generated code, which blanking types cannot give. */
export interface Unsupported {
  construct: string;
  /** What to say instead of "TypeScript <construct> is not supported", for what is not TypeScript at all. */
  message?: string;
  line: number;
  column: number;
  fix: string;
}

export type Stripped = { code: string; changed: boolean; unsupported?: undefined } | { unsupported: Unsupported };

type TypeScript = typeof import("typescript");
let loaded: Promise<{ ts: TypeScript; blankSourceFile: typeof import("ts-blank-space").blankSourceFile }> | undefined;

function load(): NonNullable<typeof loaded> {
  loaded ??= Promise.all([import("typescript"), import("ts-blank-space")]).then(([ts, blank]) => ({
    ts: ((ts as unknown as { default?: TypeScript }).default ?? ts) as TypeScript,
    blankSourceFile: blank.blankSourceFile,
  }));
  return loaded;
}

/**
 * The program with its TypeScript types replaced by spaces (ts-blank-space, on the official
 * TypeScript parser), so every line and column stays where the user wrote it.
 */
export async function stripTypes(code: string): Promise<Stripped> {
  const { ts, blankSourceFile } = await load();
  const source = ts.createSourceFile("program.ts", code, { languageVersion: ts.ScriptTarget.ESNext }, true, ts.ScriptKind.TS);
  let first: import("typescript").Node | undefined;
  const out = blankSourceFile(source, (node) => {
    first ??= node;
  });
  if (first) return { unsupported: describeUnsupported(ts, source, first) };
  return { code: out, changed: out !== code };
}

/** `<tag …>` at `start` with its `</tag>` later in the program (or self-closing): markup, not a type. */
function looksLikeJsx(text: string, start: number): boolean {
  const open = /^<([A-Za-z][\w.-]*)(?:\s[^<>]*?)?(\/?)>/.exec(text.slice(start, start + 200));
  if (!open) return false;
  return open[2] === "/" || text.includes(`</${open[1]}>`, start);
}

function describeUnsupported(ts: TypeScript, source: import("typescript").SourceFile, node: import("typescript").Node): Unsupported {
  const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source));
  const at = { line: line + 1, column: character + 1 };
  const K = ts.SyntaxKind;
  switch (node.kind) {
    case K.EnumDeclaration:
      return { construct: "enum", ...at, fix: 'use a plain object instead, e.g. const Color = { Red: "red", Green: "green" } as const' };
    case K.ModuleDeclaration:
      return { construct: "namespace", ...at, fix: "use a plain object or top-level functions and constants instead" };
    case K.PublicKeyword:
    case K.PrivateKeyword:
    case K.ProtectedKeyword:
    case K.ReadonlyKeyword:
    case K.OverrideKeyword:
      return { construct: "parameter property", ...at, fix: "declare the field in the class body and assign it in the constructor (this.x = x)" };
    case K.ImportEqualsDeclaration:
      return { construct: "import = require()", ...at, fix: "there are no modules here; host capabilities are tools.* (call tool_info to list them)" };
    case K.ExportAssignment:
      return { construct: "export =", ...at, fix: "a program is one script: drop the export and return the value instead" };
    case K.TypeAssertionExpression:
      // <div>…</div> in a .ts program parses as an assertion of the type div.
      if (looksLikeJsx(source.text, node.getStart(source)))
        return {
          construct: "JSX",
          message: "JSX is not supported: a program is JavaScript (or TypeScript, whose types are stripped)",
          ...at,
          fix: "there is no JSX here: build the text with a template literal (`<div>${value}</div>`) or string methods",
        };
      return { construct: "<T>value type assertion", ...at, fix: "write value as T instead" };
    default:
      return { construct: ts.SyntaxKind[node.kind] ?? "this construct", ...at, fix: "wrap the `as` expression in parentheses" };
  }
}
