// read_file's reading: a line range out of a file of any size, in bounded chunks read off the
// event loop (the libuv thread pool), stopping when the calling program's signal aborts. Memory
// stays at one chunk plus the lines returned, however large the file; the lines before the range
// and after it are only counted (total_lines), never kept.
import { read } from "node:fs";

const CHUNK_BYTES = 256 * 1024;
/** A file whose first 8 KiB hold a NUL byte is binary (as search_files decides too). */
export const BINARY_SNIFF_BYTES = 8192;

export type LineRange = { binary: true } | { binary: false; lines: string[]; totalLines: number; truncated: boolean };

function readChunk(fd: number, buf: Buffer, position: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, buf, 0, buf.length, position, (error, bytes) => (error ? reject(error) : resolve(bytes))));
}

/**
 * Lines `start`..`end` (1-based, inclusive; `end` absent: to the end), at most `maxLines` lines
 * and `maxBytes` bytes of them (`truncated` says the range was cut there), and how many lines the
 * file has. `onAbort` is called (and must throw) when `signal` aborts between chunks.
 */
export async function readLineRange(
  fd: number,
  options: { start: number; end?: number; maxLines: number; maxBytes: number; signal: AbortSignal; onAbort: () => never },
): Promise<LineRange> {
  const { start, maxLines, maxBytes, signal } = options;
  const end = options.end ?? Infinity;
  const buf = Buffer.allocUnsafe(CHUNK_BYTES);
  const picked: string[] = [];
  let pickedBytes = 0;
  let truncated = false;
  let done = false;
  // The current line's bytes while it is in the range, kept only up to one byte past the cap.
  let parts: Buffer[] = [];
  let partBytes = 0;
  let line = 1;
  let position = 0;
  let lastByte = -1;

  const wanted = (): boolean => !done && line >= start && line <= end;
  const keep = (chunk: Buffer, from: number, to: number): void => {
    const room = maxBytes + 1 - partBytes;
    if (room <= 0 || to <= from) return;
    const piece = Buffer.from(chunk.subarray(from, Math.min(to, from + room)));
    parts.push(piece);
    partBytes += piece.length;
  };
  const finishLine = (): void => {
    const text = Buffer.concat(parts, partBytes).toString("utf8");
    parts = [];
    partBytes = 0;
    pickedBytes += Buffer.byteLength(text) + 1;
    if (picked.length >= maxLines || pickedBytes > maxBytes) {
      truncated = true;
      done = true;
      return;
    }
    picked.push(text);
  };

  for (;;) {
    if (signal.aborted) options.onAbort();
    const n = await readChunk(fd, buf, position);
    if (n === 0) break;
    const chunk = buf.subarray(0, n);
    if (position === 0 && chunk.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return { binary: true };
    position += n;
    lastByte = chunk[n - 1]!;
    let from = 0;
    while (from < n) {
      const newline = chunk.indexOf(10, from);
      if (wanted()) keep(chunk, from, newline === -1 ? n : newline);
      if (newline === -1) break;
      if (wanted()) finishLine();
      line++;
      if (line > end) done = true;
      from = newline + 1;
    }
  }
  if (signal.aborted) options.onAbort();
  // A last line without a newline is a line too; a trailing newline does not start one.
  let totalLines = line - 1;
  if (position > 0 && lastByte !== 10) {
    if (wanted()) finishLine();
    totalLines = line;
  }
  return { binary: false, lines: picked, totalLines, truncated };
}
