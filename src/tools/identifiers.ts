/**
 * Tool names become property names in programs (`tools.my_tool`) and function names in generated
 * declarations, so they must be identifiers that are legal in both places.
 */

// Words that cannot name a function or namespace in a `.d.ts` (strict mode included).
const RESERVED = new Set([
  "arguments",
  "await",
  "break",
  "case",
  "catch",
  "class",
  "const",
  "continue",
  "debugger",
  "default",
  "delete",
  "do",
  "else",
  "enum",
  "eval",
  "export",
  "extends",
  "false",
  "finally",
  "for",
  "function",
  "if",
  "implements",
  "import",
  "in",
  "instanceof",
  "interface",
  "let",
  "new",
  "null",
  "package",
  "private",
  "protected",
  "public",
  "return",
  "static",
  "super",
  "switch",
  "this",
  "throw",
  "true",
  "try",
  "typeof",
  "var",
  "void",
  "while",
  "with",
  "yield",
]);

/** `my-tool` → `my_tool`, `2fa` → `_2fa`, `delete` → `delete_`. */
export function toIdentifier(name: string): string {
  if (typeof name !== "string" || name === "") {
    throw new TypeError(`toIdentifier: "name" must be a non-empty string, received ${name === "" ? "an empty string" : typeof name}`);
  }
  let id = name.replace(/[^A-Za-z0-9_$]/g, "_");
  if (/^[0-9]/.test(id)) id = `_${id}`;
  if (RESERVED.has(id)) id = `${id}_`;
  return id;
}

export function isIdentifier(name: string): boolean {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) && !RESERVED.has(name);
}

// Closest-name suggestions moved to a module of their own (the engine uses them too); tools/ keeps
// exporting them for its callers.
export { closestNames, isCloseName } from "../closest-names.js";
