// Small text helpers shared across the host side: how sizes and received values are named in
// error messages, and the cuts of text. Every cut lives here, in two units: UTF-8 bytes
// (takeHead, takeTail: what a budget counts) and UTF-16 characters (headChars, tailChars: what a
// message or preview is capped at). None of them ever splits a character. What marks a cut ("…",
// a marker naming a spill file) is the caller's; tools/budget.ts builds the output budget's cut on
// takeHead and takeTail.

/** "812 bytes", "3.0 KiB", "8.0 MiB": the one way sizes are shown, in messages and in tables. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return bytes === 1 ? "1 byte" : `${bytes} bytes`;
  // Below 1023.95 KiB, so that rounding never shows "1024.0 KiB".
  if (bytes < 1023.95 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** A size over a limit and the limit, as formatBytes shows them, or in bytes when that would show the same size twice. */
export function formatBytesOver(size: number, limit: number): [size: string, limit: string] {
  return formatBytes(size) === formatBytes(limit) ? [`${size} bytes`, `${limit} bytes`] : [formatBytes(size), formatBytes(limit)];
}

/** "850ms", "4.2s", "3m05s": the one way durations are shown. Rounded once, so 59.97 s is "1m00s", never "60.0s". */
export function formatDuration(ms: number): string {
  if (ms < 999.5) return `${Math.round(ms)}ms`;
  if (ms < 59_950) return `${(ms / 1000).toFixed(1)}s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
}

/** The words describeReceived uses: JavaScript's by default; a YAML or JSON file's reader may want its own. */
export interface ValueWords {
  array: string;
  object: string;
  /** Before `number 0`, `boolean true`: "the " or nothing. */
  article: string;
}

const JS_WORDS: ValueWords = { array: "an array", object: "an object", article: "the " };
/** A YAML document's words: lists and mappings. */
export const YAML_WORDS: ValueWords = { array: "a list", object: "a mapping", article: "the " };

/**
 * How an error message names a value it did not expect: `the string "x"`, `the number 0`,
 * `an array` (or `a list`, with YAML_WORDS). The one describer of received values.
 */
export function describeReceived(value: unknown, words: ValueWords = JS_WORDS): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return words.array;
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + "…" : value)}`;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") return `${words.article}${typeof value} ${String(value)}`;
  return typeof value === "object" ? words.object : typeof value;
}

/** The longest prefix of `text` that is at most `bytes` UTF-8 bytes, never splitting a character. */
export function takeHead(text: string, bytes: number): string {
  if (bytes <= 0) return "";
  if (Buffer.byteLength(text) <= bytes) return text;
  let slice = text.slice(0, bytes);
  while (Buffer.byteLength(slice) > bytes) slice = slice.slice(0, slice.length - Math.max(1, Math.ceil((Buffer.byteLength(slice) - bytes) / 3)));
  return dropLoneSurrogate(slice, "end");
}

/** The longest suffix of `text` that is at most `bytes` UTF-8 bytes, never splitting a character. */
export function takeTail(text: string, bytes: number): string {
  if (bytes <= 0) return "";
  if (Buffer.byteLength(text) <= bytes) return text;
  let slice = text.slice(Math.max(0, text.length - bytes));
  while (Buffer.byteLength(slice) > bytes) slice = slice.slice(Math.max(1, Math.ceil((Buffer.byteLength(slice) - bytes) / 3)));
  return dropLoneSurrogate(slice, "start");
}

/** The first `chars` UTF-16 units of `text`, one fewer when the last would be half a surrogate pair. */
export function headChars(text: string, chars: number): string {
  if (text.length <= chars) return text;
  return dropLoneSurrogate(text.slice(0, Math.max(0, chars)), "end");
}

/** The last `chars` UTF-16 units of `text`, one fewer when the first would be half a surrogate pair. */
export function tailChars(text: string, chars: number): string {
  if (text.length <= chars) return text;
  return chars <= 0 ? "" : dropLoneSurrogate(text.slice(text.length - chars), "start");
}

/**
 * A cut of `text` that owns its characters. V8 makes a slice a view of the string it was cut
 * from, so a 2,000-character console line kept the program's whole 4 MiB string alive (500 of
 * them ran a worker's heap out); every cut here is copied instead.
 */
function dropLoneSurrogate(text: string, side: "start" | "end"): string {
  if (text.length === 0) return text;
  if (side === "end") {
    const last = text.charCodeAt(text.length - 1);
    return detached(last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text);
  }
  const first = text.charCodeAt(0);
  return detached(first >= 0xdc00 && first <= 0xdfff ? text.slice(1) : text);
}

/** V8 copies slices shorter than this anyway. */
const SLICE_MIN_CHARS = 13;

function detached(text: string): string {
  return text.length < SLICE_MIN_CHARS ? text : Buffer.from(text, "utf16le").toString("utf16le");
}

/** The message of anything thrown, without losing non-Error throws (strings, objects, cyclic or BigInt values). */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === "string") return err;
  try {
    const json = JSON.stringify(err);
    if (typeof json === "string") return json;
  } catch {
    // Fall through: cyclic or BigInt-holding values still need a message.
  }
  return String(err);
}

type WellFormedString = string & { isWellFormed(): boolean; toWellFormed(): string };

/** Text for a model as well-formed Unicode: each lone surrogate becomes U+FFFD (native in Node 20). */
export function wellFormed(text: string): string {
  const s = text as WellFormedString;
  return s.isWellFormed() ? text : s.toWellFormed();
}

/**
 * A description's first line as one short line for a listing: cut at `maxChars` on a word
 * boundary (or at its first sentence when that fits) with "…", control characters turned into
 * spaces so a description cannot break the line it is shown on.
 */
export function summaryLine(text: string, maxChars = 100): string {
  const line = (text.trim().split(/\r?\n/, 1)[0] ?? "").replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ").trim();
  if (line.length <= maxChars) return line;
  const sentence = /^.*?[.!?](?=\s)/.exec(line.slice(0, maxChars))?.[0];
  if (sentence !== undefined && sentence.length >= maxChars / 3) return sentence;
  const cut = headChars(line, maxChars - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space >= maxChars / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
