// "Did you mean …" for every layer: the engine's unknown-tool message, option and argument
// checks, agent and workflow definitions. Kept apart from tools/ so the engine (which runs in the
// sandbox worker) and the CLI can suggest names without depending on the tool layer.

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
