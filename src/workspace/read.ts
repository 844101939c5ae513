// read_file's reading: a line range out of a file of any size, in bounded chunks read off the
// event loop (the libuv thread pool), stopping when the calling program's signal aborts. Memory
// stays at one chunk plus the lines returned, however large the file; the lines before the range
// and after it are only counted (total_lines), never kept. A file of one chunk is read at once
// and split whole (readLineRangeNow); both give the same answer (test/workspace/read.test.ts).
import { read, readSync } from "node:fs";

const CHUNK_BYTES = 256 * 1024;
/** A file whose first 8 KiB hold a NUL byte is binary (as search_files decides too). */
export const BINARY_SNIFF_BYTES = 8192;

export type LineRange = { binary: true } | { binary: false; lines: string[]; totalLines: number; truncated: boolean };

export interface RangeOptions {
  /** The file's size when it was opened: a file that grows meanwhile is read as it was. */
  size: number;
  start: number;
  end?: number;
  maxLines: number;
  maxBytes: number;
}

/** Splits chunks into lines, keeping those in the range (within the caps) and counting all. */
class LineScanner {
  private readonly end: number;
  private readonly picked: string[] = [];
  private pickedBytes = 0;
  private truncated = false;
  private done = false;
  // The current line's bytes while it is in the range, kept only up to one byte past the cap.
  private parts: Buffer[] = [];
  private partBytes = 0;
  private line = 1;
  private position = 0;
  private lastByte = -1;
  binary = false;

  constructor(private readonly options: RangeOptions) {
    this.end = options.end ?? Infinity;
  }

  private wanted(): boolean {
    return !this.done && this.line >= this.options.start && this.line <= this.end;
  }

  private keep(chunk: Buffer, from: number, to: number): void {
    const room = this.options.maxBytes + 1 - this.partBytes;
    if (room <= 0 || to <= from) return;
    const piece = Buffer.from(chunk.subarray(from, Math.min(to, from + room)));
    this.parts.push(piece);
    this.partBytes += piece.length;
  }

  private finishLine(): void {
    const text = Buffer.concat(this.parts, this.partBytes).toString("utf8");
    this.parts = [];
    this.partBytes = 0;
    this.pickLine(text);
  }

  private pickLine(text: string): void {
    this.pickedBytes += Buffer.byteLength(text) + 1;
    if (this.picked.length >= this.options.maxLines || this.pickedBytes > this.options.maxBytes) {
      // A first line over the cap alone comes back cut, so reading on makes progress.
      if (this.picked.length === 0) this.picked.push(headOfLine(text, this.options.maxBytes));
      this.truncated = true;
      this.done = true;
      return;
    }
    this.picked.push(text);
  }

  /** Feeds the next chunk of the file (a view: it is copied where kept). */
  feed(chunk: Buffer): void {
    if (this.position < BINARY_SNIFF_BYTES && chunk.subarray(0, BINARY_SNIFF_BYTES - this.position).includes(0)) this.binary = true;
    if (this.binary || chunk.length === 0) return;
    this.position += chunk.length;
    this.lastByte = chunk[chunk.length - 1]!;
    let from = 0;
    while (from < chunk.length) {
      const newline = chunk.indexOf(10, from);
      if (this.wanted()) {
        // A line that starts and ends in this chunk is decoded from it; one that spans chunks is kept in pieces.
        if (newline !== -1 && this.partBytes === 0 && newline - from <= this.options.maxBytes) this.pickLine(chunk.toString("utf8", from, newline));
        else {
          this.keep(chunk, from, newline === -1 ? chunk.length : newline);
          if (newline !== -1) this.finishLine();
        }
      }
      if (newline === -1) break;
      this.line++;
      if (this.line > this.end) this.done = true;
      from = newline + 1;
    }
  }

  finish(): LineRange {
    if (this.binary) return { binary: true };
    // A last line without a newline is a line too; a trailing newline does not start one.
    let totalLines = this.line - 1;
    if (this.position > 0 && this.lastByte !== 10) {
      if (this.wanted()) this.finishLine();
      totalLines = this.line;
    }
    return { binary: false, lines: this.picked, totalLines, truncated: this.truncated };
  }
}

/**
 * The first `maxBytes` bytes of a line longer than the cap, cut on a character boundary: the
 * range's one line, cut, instead of none (a minified file's only line could never be read, and
 * "read on with start_line 1" sent the reader back to it forever).
 */
function headOfLine(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text);
  let end = Math.min(maxBytes, bytes.length);
  // Back up over continuation bytes (10xxxxxx) to the start of the character the cap falls in.
  if (end < bytes.length) while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.toString("utf8", 0, end);
}

function readChunk(fd: number, buf: Buffer, position: number, length: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, buf, 0, length, position, (error, bytes) => (error ? reject(error) : resolve(bytes))));
}

/** Whether a file is small enough to be read at once (a page-cache copy of at most one chunk). */
export const readsAtOnce = (size: number): boolean => size <= CHUNK_BYTES;

/** Lines `start`..`end` of a file that reads at once (see readsAtOnce): decoded and split whole, as the scanner would. */
export function readLineRangeNow(fd: number, options: RangeOptions): LineRange {
  const buf = Buffer.allocUnsafe(options.size);
  let filled = 0;
  while (filled < buf.length) {
    const n = readSync(fd, buf, filled, buf.length - filled, filled);
    if (n === 0) break;
    filled += n;
  }
  const bytes = buf.subarray(0, filled);
  if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return { binary: true };
  const text = bytes.toString("utf8");
  const all = text.length === 0 ? [] : text.replace(/\n$/, "").split("\n");
  const lines: string[] = [];
  let kept = 0;
  let truncated = false;
  for (let i = options.start - 1; i < Math.min(options.end ?? all.length, all.length); i++) {
    kept += Buffer.byteLength(all[i]!) + 1;
    if (lines.length >= options.maxLines || kept > options.maxBytes) {
      if (lines.length === 0) lines.push(headOfLine(all[i]!, options.maxBytes));
      truncated = true;
      break;
    }
    lines.push(all[i]!);
  }
  return { binary: false, lines, totalLines: all.length, truncated };
}

/**
 * Lines `start`..`end` (1-based, inclusive; `end` absent: to the end), at most `maxLines` lines
 * and `maxBytes` bytes of them (`truncated` says the range was cut there), and how many lines the
 * file has, read chunk by chunk on the thread pool. `onAbort` is called (and must throw) when
 * `signal` aborts between chunks.
 */
export async function readLineRange(
  fd: number,
  options: RangeOptions & { signal: AbortSignal; onAbort: () => never /** for tests: chunk boundaries anywhere */; chunkBytes?: number },
): Promise<LineRange> {
  const scanner = new LineScanner(options);
  const buf = Buffer.allocUnsafe(options.chunkBytes ?? CHUNK_BYTES);
  for (let position = 0; position < options.size && !scanner.binary; ) {
    if (options.signal.aborted) options.onAbort();
    const n = await readChunk(fd, buf, position, Math.min(buf.length, options.size - position));
    if (n === 0) break;
    scanner.feed(buf.subarray(0, n));
    position += n;
  }
  if (options.signal.aborted) options.onAbort();
  return scanner.finish();
}
