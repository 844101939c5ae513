/** Default cap on model-visible bytes per result (SPEC §5). */
export const DEFAULT_OUTPUT_BUDGET = 40_000;
/** Below this, the truncation marker itself would not fit. */
export const MIN_OUTPUT_BUDGET = 256;

export function validateBudget(value: unknown, field: string): number {
  if (value === undefined) return DEFAULT_OUTPUT_BUDGET;
  if (value === Infinity) return Infinity;
  if (typeof value !== "number" || !Number.isInteger(value) || value < MIN_OUTPUT_BUDGET) {
    throw new TypeError(`${field} must be an integer number of bytes ≥ ${MIN_OUTPUT_BUDGET} (or Infinity), received ${typeof value === "number" ? String(value) : typeof value}`);
  }
  return value;
}

/**
 * Keeps the head of `text` and states what was cut, so the result never exceeds `budget` UTF-8
 * bytes in total, marker included; the cut never splits a character.
 */
export function boundText(text: string, budget: number): { text: string; truncated: boolean; totalBytes: number } {
  const totalBytes = Buffer.byteLength(text, "utf8");
  if (totalBytes <= budget) return { text, truncated: false, totalBytes };
  const bytes = Buffer.from(text, "utf8");
  // The marker's own length depends on the number it prints; sizing it with the total is an upper bound.
  const markerFor = (shown: number) => `\n[… output truncated: showing ${shown} of ${totalBytes} bytes]`;
  let end = Math.max(0, budget - Buffer.byteLength(markerFor(totalBytes), "utf8"));
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString("utf8") + markerFor(end), truncated: true, totalBytes };
}
