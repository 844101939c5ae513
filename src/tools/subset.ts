// The per-result check that a compact view is a subset of the full one: run on the subtrees the
// schemas could not prove (view-schemas.ts), on every call with `development: true`, and by
// assertToolViews for a host's own tests.
import { describeValue } from "./errors.js";

function child(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/**
 * The result-view promise (docs/tool-contract.md#result-views-compact--full-always-checked): every
 * field of a compact result is in the full result at the same path with the same value. Arrays
 * must have the same length (a compact list that silently drops rows would mislead a caller) and
 * their items are compared pairwise. Throws an Error naming the first path that breaks it.
 */
export function assertViewSubset(compact: unknown, full: unknown, path = "$"): void {
  if (typeof path !== "string") throw new TypeError(`assertViewSubset: "path" must be a string, received ${describeValue(path)}`);
  if (Array.isArray(compact)) {
    if (!Array.isArray(full)) throw new Error(`compact view has an array at ${path}, the full view has ${describeValue(full)}`);
    if (compact.length !== full.length) {
      throw new Error(`compact view has ${compact.length} items at ${path}, the full view has ${full.length}`);
    }
    for (const [i, item] of compact.entries()) assertViewSubset(item, full[i], child(path, i));
    return;
  }
  if (compact !== null && typeof compact === "object") {
    if (full === null || typeof full !== "object" || Array.isArray(full)) {
      throw new Error(`compact view has an object at ${path}, the full view has ${describeValue(full)}`);
    }
    for (const key of Object.keys(compact)) {
      const at = child(path, key);
      if (!Object.hasOwn(full, key)) throw new Error(`compact view has ${at}, the full view does not`);
      assertViewSubset((compact as Record<string, unknown>)[key], (full as Record<string, unknown>)[key], at);
    }
    return;
  }
  if (!Object.is(compact, full) && !(compact === 0 && full === 0)) {
    throw new Error(`compact view has ${JSON.stringify(compact) ?? String(compact)} at ${path}, the full view has ${JSON.stringify(full) ?? String(full)}`);
  }
}
