// The one cut every model-visible text gets when it is over its byte budget: a program's run
// output and a tool's `content` alike keep their head and their tail, joined by a marker that
// says how much was cut and names the file holding the whole text
// (docs/tool-contract.md#the-output-budget-one-cut-for-every-model-visible-text). Writing that file is the
// caller's part (codemode/output.ts); the cut, the marker and what survives it are decided here.
import { takeHead, takeTail } from "../text.js";

/** Default cap on model-visible bytes per result (docs/limits.md). */
export const DEFAULT_OUTPUT_BUDGET = 40_000;
/** Below this, the truncation marker itself would not fit. */
export const MIN_OUTPUT_BUDGET = 256;
/** Of the bytes left beside the marker, the head gets this share (at least the pinned part) and the tail the rest. */
const HEAD_SHARE = 0.6;

export function validateBudget(value: unknown, field: string): number {
  if (value === undefined) return DEFAULT_OUTPUT_BUDGET;
  if (value === Infinity) return Infinity;
  if (typeof value !== "number" || !Number.isInteger(value) || value < MIN_OUTPUT_BUDGET) {
    throw new TypeError(`${field} must be an integer number of bytes ≥ ${MIN_OUTPUT_BUDGET} (or Infinity), received ${typeof value === "number" ? String(value) : typeof value}`);
  }
  return value;
}

export interface BoundText {
  text: string;
  truncated: boolean;
  totalBytes: number;
  /** The file holding the whole text, when it was cut and saved. */
  fullOutputPath?: string;
}

/**
 * Holds a text to a byte budget. `pinnedBytes` leading bytes (a status and a usage line) are kept
 * whole whenever the budget can hold them. The runtime's own (codemode's `callTool`) saves the
 * whole text to a spill file; `boundText` is the same cut without a file.
 */
export type BoundOutput = (text: string, budget: number, pinnedBytes?: number) => BoundText;

/** Where the whole text is, as the marker states it. */
export function spillNote(path: string | undefined, cutAtBytes?: number, failure?: { code: string; savedBytes: number }): string {
  if (path === undefined || (failure !== undefined && failure.savedBytes === 0)) return `the full output could not be saved${failure ? ` (${failure.code})` : ""}`;
  if (failure !== undefined) return `the first ${failure.savedBytes} bytes of the full output: ${path} (the rest could not be saved: ${failure.code})`;
  return `full output: ${path}${cutAtBytes !== undefined ? `, cut at ${cutAtBytes} bytes` : ""}`;
}

/** What `boundText` says when nobody gave it a place to save the whole text. */
export const NOT_SAVED_NOTE = "the full output was not saved";

/**
 * The cut itself. `head` and `tail` are where the kept parts come from (the whole text, or for a
 * stream the first and last parts kept in memory); `totalBytes` is the size of the whole text.
 * The result never exceeds `budget` bytes, never splits a character, and keeps the first
 * `pinnedBytes` of the head whole when they fit beside the marker.
 */
export function cutToBudget(source: { head: string; tail: string; totalBytes: number }, budget: number, note: string, pinnedBytes = 0): string {
  const total = source.totalBytes;
  const full = (cut: number) => `\n\n[… ${cut} of ${total} bytes of output cut; ${note} …]\n\n`;
  const short = (cut: number) => `\n[… ${cut} of ${total} bytes of output cut …]\n`;
  // Sized with the largest count it could state; a long note gives way before the text does.
  let markerFor = full;
  if (Buffer.byteLength(full(total)) > budget / 2) markerFor = short;
  const available = Math.max(0, budget - Buffer.byteLength(markerFor(total)));
  const headRoom = Math.min(available, Math.max(Math.floor(available * HEAD_SHARE), pinnedBytes));
  const head = takeHead(source.head, headRoom);
  const tail = takeTail(source.tail, available - Buffer.byteLength(head));
  const cut = total - Buffer.byteLength(head) - Buffer.byteLength(tail);
  return head + markerFor(cut) + tail;
}

/** The cut without a spill file: the marker says the whole text was not saved. */
export const boundText: BoundOutput = (text, budget, pinnedBytes = 0) => {
  const totalBytes = Buffer.byteLength(text, "utf8");
  if (totalBytes <= budget) return { text, truncated: false, totalBytes };
  return { text: cutToBudget({ head: text, tail: text, totalBytes }, budget, NOT_SAVED_NOTE, pinnedBytes), truncated: true, totalBytes };
};

const PINNED = Symbol.for("codemode-runtime.pinnedText");

/** Model text whose leading part survives any cut of the output budget (see `pinnedText`). */
export interface PinnedText {
  readonly pinned: string;
  readonly rest: string;
}

/**
 * What a `toModelOutput` returns when its first lines must survive any cut: `pinned` (a status
 * and a usage line, say) is kept whole whenever the budget can hold it, and the cut falls in
 * `rest` (a message, a report, a log). The model reads `pinned`, a newline, then `rest`.
 */
export function pinnedText(pinned: string, rest = ""): PinnedText {
  if (typeof pinned !== "string" || typeof rest !== "string") {
    throw new TypeError(`pinnedText: "pinned" and "rest" must be strings, received ${typeof pinned} and ${typeof rest}`);
  }
  const value = { pinned: rest === "" ? pinned : `${pinned}\n`, rest };
  Object.defineProperty(value, PINNED, { value: true, enumerable: false });
  return Object.freeze(value);
}

export function isPinnedText(value: unknown): value is PinnedText {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[PINNED] === true;
}
