/**
 * Tool names become property names in programs (`tools.my_tool`) and function names in generated
 * declarations, so they must be identifiers that are legal in both places.
 */

// Words that cannot name a function or namespace in a `.d.ts` (strict mode included).
const RESERVED = new Set([
  "arguments", "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default",
  "delete", "do", "else", "enum", "eval", "export", "extends", "false", "finally", "for", "function",
  "if", "implements", "import", "in", "instanceof", "interface", "let", "new", "null", "package",
  "private", "protected", "public", "return", "static", "super", "switch", "this", "throw", "true",
  "try", "typeof", "var", "void", "while", "with", "yield",
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

function editDistance(a: string, b: string): number {
  const prev = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/**
 * The candidates nearest to `name`, for "did you mean" messages. Substring matches rank first
 * because models often drop or add a namespace prefix.
 */
export function closestNames(name: string, candidates: readonly string[], limit = 3): string[] {
  if (typeof name !== "string") throw new TypeError(`closestNames: "name" must be a string, received ${typeof name}`);
  if (!Array.isArray(candidates)) throw new TypeError(`closestNames: "candidates" must be an array of strings`);
  if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`closestNames: "limit" must be a positive integer, received ${String(limit)}`);
  const needle = name.toLowerCase();
  const scored = [...new Set(candidates)].map((candidate) => {
    const hay = candidate.toLowerCase();
    const contains = needle !== "" && (hay.includes(needle) || needle.includes(hay));
    return { candidate, score: editDistance(needle, hay) - (contains ? 100 : 0) };
  });
  scored.sort((x, y) => x.score - y.score || x.candidate.localeCompare(y.candidate));
  return scored.slice(0, limit).map((s) => s.candidate);
}

/**
 * Whether `candidate` is close enough to `name` to be offered as "did you mean": a random
 * closest name misleads more than none.
 */
export function isCloseName(name: string, candidate: string): boolean {
  const a = name.toLowerCase();
  const b = candidate.toLowerCase();
  if (a === b) return true;
  if (Math.min(a.length, b.length) >= 3 && (a.includes(b) || b.includes(a))) return true;
  // Two edits is one swapped pair of letters ("itmes"), the commonest typo; short names allow one.
  const longest = Math.max(a.length, b.length);
  return editDistance(a, b) <= (longest <= 3 ? 1 : Math.max(2, Math.floor(longest / 3)));
}
