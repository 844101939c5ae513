// One line splitter for every line protocol the host reads from a child (the command driver's
// jsonl and Claude stream-json, an upstream MCP server's stdio): it never holds more than
// `maxLineBytes` of one line. `readline` (and the MCP SDK's read buffer) kept a whole line in
// memory: a child printing 700 MB without a newline ended in an uncaught `RangeError: Invalid
// string length` that took the host and every task down.

/** What is known of a line that was over the limit: its first bytes, its last bytes, its size. */
export interface OverlongLine {
  /** The first `maxLineBytes` bytes (possibly ending mid-character). */
  head: Buffer;
  /** The last bytes of the line (at most `tailBytes`), for protocols that need its end. */
  tail: Buffer;
  /** The whole line's length in bytes, newline excluded. */
  bytes: number;
}

export interface LineSplitterOptions {
  maxLineBytes: number;
  /** How much of an overlong line's end is kept (default 4 KiB). */
  tailBytes?: number;
  onLine(line: string): void;
  onOverlong(line: OverlongLine): void;
}

/**
 * Splits a byte stream on "\n" (a "\r" before it is dropped). Lines within the limit are
 * decoded as UTF-8 and handed to `onLine`; a longer line is reported once, when it ends, through
 * `onOverlong`, and everything between its head and its tail is skipped as it streams past.
 */
export class LineSplitter {
  private readonly maxLineBytes: number;
  private readonly tailBytes: number;
  private parts: Buffer[] = [];
  private size = 0;
  private overlong = false;
  private total = 0;
  private tail: Buffer = Buffer.alloc(0);

  constructor(private readonly options: LineSplitterOptions) {
    if (!Number.isSafeInteger(options.maxLineBytes) || options.maxLineBytes < 1) throw new RangeError(`maxLineBytes must be a positive integer, got ${String(options.maxLineBytes)}`);
    this.maxLineBytes = options.maxLineBytes;
    this.tailBytes = options.tailBytes ?? 4096;
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      this.take(chunk.subarray(start, nl === -1 ? chunk.length : nl));
      if (nl === -1) return;
      this.endLine();
      start = nl + 1;
    }
  }

  /** The stream ended: a last line without a newline is still a line. */
  end(): void {
    if (this.size > 0 || this.overlong) this.endLine();
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (!this.overlong && this.size + piece.length <= this.maxLineBytes) {
      this.parts.push(piece);
      this.size += piece.length;
      return;
    }
    if (!this.overlong) {
      const room = this.maxLineBytes - this.size;
      this.parts.push(piece.subarray(0, room));
      this.size += room;
      this.overlong = true;
      this.total = this.size - room;
    }
    this.total += piece.length;
    const keep = piece.length >= this.tailBytes ? piece.subarray(piece.length - this.tailBytes) : Buffer.concat([this.tail, piece]);
    this.tail = Buffer.from(keep.subarray(Math.max(0, keep.length - this.tailBytes)));
  }

  private endLine(): void {
    const joined = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.size);
    const overlong = this.overlong;
    const total = this.total;
    const tail = this.tail;
    this.parts = [];
    this.size = 0;
    this.overlong = false;
    this.total = 0;
    this.tail = Buffer.alloc(0);
    if (overlong) {
      this.options.onOverlong({ head: Buffer.from(joined), tail, bytes: total });
      return;
    }
    const end = joined.length > 0 && joined[joined.length - 1] === 0x0d ? joined.length - 1 : joined.length;
    this.options.onLine(joined.toString("utf8", 0, end));
  }
}
