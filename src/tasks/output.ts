// Reading task output safely: byte offsets checked against UTF-8 boundaries, a page cut to its tail
// (50 KB / 2,000 lines) and the head preview of a small output, so a page never floods a program
// and never splits a character; the spill file a truncated page points to; and the scans of a
// log's end that a task's finish reads. Reads only: the task log (task-log.ts) is the one writer.
// docs/tasks.md#ptc_task_output-the-page-and-its-tail.
import { join } from "node:path";
import { appendPrivate, ensurePrivateDir, PrivateTempDir, replaceFileAtomic } from "../safe-fs.js";
import { TaskError } from "./errors.js";
import type { TaskStore } from "./store.js";
import type { TaskRecord } from "./types.js";

/** Tail limits for one `ptc_task_output` page: bounded so a page never floods the sandbox. */
export const OUTPUT_TAIL_BYTES = 50 * 1024;
export const OUTPUT_TAIL_LINES = 2000;
/** The head preview kept for small outputs (and in `details`). */
export const PREVIEW_BYTES = 2048;
/** Outputs up to this size are "small": they get a preview; larger ones only a tail and a path. */
export const SMALL_OUTPUT_BYTES = OUTPUT_TAIL_BYTES;

function isContinuationByte(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/** Refuses a `since_bytes` offset that is past the end or inside a multi-byte character. */
export function checkSinceBytes(taskId: string, since: number, total: number, byteAt: (offset: number) => number): void {
  if (!Number.isSafeInteger(since) || since < 0) {
    throw new TaskError("invalid_argument", `"since_bytes" must be a non-negative integer byte offset, got ${String(since)}`, taskId);
  }
  if (since > total) {
    throw new TaskError(
      "task_output_range",
      `"since_bytes" ${since} is past the end of task ${taskId}'s output (${total} bytes); pass a value from 0 to ${total}, e.g. the output_bytes of the previous read`,
      taskId,
    );
  }
  if (since < total && isContinuationByte(byteAt(since))) {
    let start = since;
    while (start > 0 && isContinuationByte(byteAt(start))) start--;
    throw new TaskError(
      "task_output_range",
      `"since_bytes" ${since} falls inside a multi-byte UTF-8 character of task ${taskId}'s output; pass a character boundary such as ${start}, or the output_bytes of the previous read`,
      taskId,
    );
  }
}

/** Advances `start` past continuation bytes so a slice never begins mid-character. */
export function alignForward(buf: Buffer, start: number): number {
  let i = start;
  while (i < buf.length && isContinuationByte(buf[i]!)) i++;
  return i;
}

/** Moves `end` back so a slice never ends mid-character. */
export function alignBackward(buf: Buffer, end: number): number {
  if (end >= buf.length) return buf.length;
  let i = end;
  while (i > 0 && isContinuationByte(buf[i]!)) i--;
  return i;
}

export interface TailResult {
  text: string;
  truncated: boolean;
  /** The page was cut inside a line: its first line is the end of a longer one. */
  startsMidLine?: boolean;
}

/**
 * Keeps the last 50 KB / 2,000 lines of a page, never splitting a character. Lines permitting, the
 * page starts on a line: a partial first line is dropped when that costs at most half the 50 KB.
 * A longer line crossing the cut (a minified bundle, one huge JSON line) keeps its last bytes
 * instead, so a long last line is never dropped whole.
 */
export function tailTruncate(page: Buffer): TailResult {
  let start = 0;
  let truncated = false;
  let startsMidLine = false;
  if (page.length > OUTPUT_TAIL_BYTES) {
    truncated = true;
    start = alignForward(page, page.length - OUTPUT_TAIL_BYTES);
    if (page[start - 1] !== 0x0a) {
      const nl = page.indexOf(0x0a, start);
      if (nl !== -1 && nl + 1 < page.length && nl + 1 - start <= OUTPUT_TAIL_BYTES / 2) start = nl + 1;
      else startsMidLine = true;
    }
  }
  let text = page.subarray(start).toString("utf8");
  const body = text.endsWith("\n") ? text.slice(0, -1) : text;
  let lines = 0;
  for (let i = 0; i < body.length; i++) if (body.charCodeAt(i) === 10) lines++;
  if (lines + 1 > OUTPUT_TAIL_LINES) {
    truncated = true;
    startsMidLine = false;
    let cut = body.length;
    for (let kept = 0; kept < OUTPUT_TAIL_LINES; kept++) cut = body.lastIndexOf("\n", cut - 1);
    text = text.slice(cut + 1);
  }
  return startsMidLine ? { text, truncated, startsMidLine } : { text, truncated };
}

/** The first ≤ 2,048 bytes of an output, cut on a character boundary. */
export function headPreview(head: Buffer): string {
  const end = alignBackward(head, Math.min(head.length, PREVIEW_BYTES));
  return head.subarray(0, end).toString("utf8");
}

/** Preview of an arbitrary string for `details`, bounded in UTF-8 bytes. */
export function previewString(text: string, maxBytes = PREVIEW_BYTES): string {
  const buf = Buffer.from(text, "utf8");
  if (buf.length <= maxBytes) return text;
  return buf.subarray(0, alignBackward(buf, maxBytes)).toString("utf8");
}

export interface OutputPage {
  record: TaskRecord;
  /** The page from `sinceBytes`, tail-truncated. */
  output: string;
  /** Total bytes of the log (the next `since_bytes`). */
  outputBytes: number;
  truncated: boolean;
  /** A truncated page whose first line is the end of a longer one (a long last line kept). */
  startsMidLine?: boolean;
  fullPath?: string;
  preview?: string;
}

/**
 * The page of a task's log from `sinceBytes`: its tail, the spill path when the tail is cut, and
 * the head preview of a small log. `record` is the task as its reader knows it.
 */
export function readOutputPage(store: TaskStore, spill: OutputSpill, record: TaskRecord, sinceBytes = 0): OutputPage {
  const id = record.id;
  const total = store.outputSize(id);
  const since = sinceBytes;
  // A UTF-8 character is at most 4 bytes: this window holds every byte the boundary check reads.
  const windowStart = Math.max(0, since - 4);
  let window: Buffer | undefined;
  checkSinceBytes(id, since, total, (offset) => {
    window ??= store.readOutput(id, windowStart, Math.min(total, since + 1));
    return window[offset - windowStart]!;
  });
  // Only the tail is ever returned: one byte past the 50 KB cut is all tailTruncate needs to find
  // the same cut it would find in the whole page, so a huge log is never read whole.
  const page = store.readOutput(id, Math.max(since, total - (OUTPUT_TAIL_BYTES + 1)), total);
  const tail = tailTruncate(page);
  const result: OutputPage = { record: { ...record, outputBytes: total }, output: tail.text, outputBytes: total, truncated: tail.truncated };
  if (tail.startsMidLine) result.startsMidLine = true;
  if (tail.truncated) result.fullPath = spill.path(store, id, total);
  // "Small" = the whole log would fit one untruncated page; large logs get a tail and a path only.
  if (total > 0 && total <= SMALL_OUTPUT_BYTES) {
    const whole = since === 0 ? page : store.readOutput(id, 0, total);
    if (since === 0 ? !tail.truncated : !tailTruncate(whole).truncated) result.preview = headPreview(whole.subarray(0, PREVIEW_BYTES + 4));
  }
  return result;
}

/**
 * Where a truncated page's whole log can be read: the store's own file, or — for a log with no
 * file (in memory, in Redis) — a spill file in `<dataDir>/spill` (or a private temp dir removed
 * by `remove`), extended with what arrived since the last read (appended, never rewritten, so
 * polling a growing log stays cheap). Its directory is private (0700) and its file never
 * followed as a link: no one else reads or redirects it.
 */
export class OutputSpill {
  private readonly dir: string | PrivateTempDir;
  /** Bytes of each log already copied to its spill file. */
  private readonly spilled = new Map<string, number>();

  constructor(dataDir: string | undefined) {
    this.dir = dataDir ? join(dataDir, "spill") : new PrivateTempDir("codemode-tasks");
  }

  path(store: TaskStore, id: string, total: number): string {
    const own = store.outputPath(id);
    if (own) return own;
    const dir = typeof this.dir === "string" ? ensurePrivateDir(this.dir) : this.dir.path;
    const spill = join(dir, `${id}.log`);
    const written = this.spilled.get(id) ?? 0;
    if (written === 0) replaceFileAtomic(spill, store.readOutput(id, 0, total));
    else if (total > written) appendPrivate(spill, store.readOutput(id, written, total));
    this.spilled.set(id, Math.max(written, total));
    return spill;
  }

  /** Removes a private temp dir (a data dir's spill stays, for readers of the paths it gave). */
  remove(): void {
    if (typeof this.dir !== "string") this.dir.remove();
  }
}

const SCAN_CHUNK_BYTES = 64 * 1024;

/** Whether the log holds anything but whitespace between `start` and `end`, scanned backwards in chunks. */
export function hasFinalOutput(store: TaskStore, id: string, start: number, end: number): boolean {
  for (let to = end; to > start; to -= SCAN_CHUNK_BYTES) {
    const chunk = store.readOutput(id, Math.max(start, to - SCAN_CHUNK_BYTES), to);
    if (/\S/.test(chunk.toString("latin1"))) return true;
  }
  return false;
}

/** The last `bytes` of the log between `start` and `end`, as text (where a prompt-json report sits). */
export function outputTail(store: TaskStore, id: string, start: number, end: number, bytes: number): string {
  return store.readOutput(id, Math.max(start, end - bytes), end).toString("utf8");
}
