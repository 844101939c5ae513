// read_file's two readers give one answer: a small file split whole, a large one scanned chunk by
// chunk (here with chunks of a few bytes, so lines and UTF-8 characters straddle every boundary).
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { readLineRange, readLineRangeNow } from "../../src/workspace/read.js";

const dir = mkdtempSync(join(tmpdir(), "ws-read-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("readLineRange", () => {
  it("chunk by chunk, it agrees with reading the file whole, for any content, range, caps and chunk size", async () => {
    const line = fc.string({ unit: fc.constantFrom("a", "é", "漢", "🙂", "\r", " ", "\ufffd"), maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(line, { maxLength: 30 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 35 }),
        fc.option(fc.integer({ min: 0, max: 35 }), { nil: undefined }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 9 }),
        async (lines, trailing, start, span, maxLines, maxBytes, chunkBytes) => {
          const file = join(dir, "f.txt");
          const bytes = Buffer.from(lines.join("\n") + (trailing && lines.length > 0 ? "\n" : ""));
          writeFileSync(file, bytes);
          const options = { size: bytes.length, start, ...(span === undefined ? {} : { end: start + span }), maxLines, maxBytes };
          const fd = openSync(file, "r");
          try {
            const whole = readLineRangeNow(fd, options);
            const chunked = await readLineRange(fd, {
              ...options,
              chunkBytes,
              signal: new AbortController().signal,
              onAbort: () => {
                throw new Error("aborted");
              },
            });
            expect(chunked).toStrictEqual(whole);
          } finally {
            closeSync(fd);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a first line longer than the byte cap comes back cut on a character boundary, so reading on makes progress", async () => {
    const file = join(dir, "min.js");
    // 7 bytes of "a", then "é" (2 bytes) straddling the 8-byte cap, then more; a second line after it.
    const bytes = Buffer.from(`${"a".repeat(7)}é${"b".repeat(20)}\nsecond\n`);
    writeFileSync(file, bytes);
    const fd = openSync(file, "r");
    try {
      for (const start of [1, 2]) {
        const options = { size: bytes.length, start, maxLines: 10, maxBytes: 8 };
        const expected = start === 1 ? { binary: false, lines: ["aaaaaaa"], totalLines: 2, truncated: true } : { binary: false, lines: ["second"], totalLines: 2, truncated: false };
        expect(readLineRangeNow(fd, options)).toStrictEqual(expected);
        const chunked = await readLineRange(fd, {
          ...options,
          chunkBytes: 3,
          signal: new AbortController().signal,
          onAbort: () => {
            throw new Error("aborted");
          },
        });
        expect(chunked).toStrictEqual(expected);
      }
    } finally {
      closeSync(fd);
    }
  });

  it("a NUL in the first 8 KiB makes a file binary either way", async () => {
    const file = join(dir, "bin.dat");
    const bytes = Buffer.concat([Buffer.from("text\n"), Buffer.from([0]), Buffer.from("more\n")]);
    writeFileSync(file, bytes);
    const fd = openSync(file, "r");
    try {
      const options = { size: bytes.length, start: 1, maxLines: 10, maxBytes: 100 };
      expect(readLineRangeNow(fd, options)).toStrictEqual({ binary: true });
      expect(
        await readLineRange(fd, {
          ...options,
          chunkBytes: 2,
          signal: new AbortController().signal,
          onAbort: () => {
            throw new Error("aborted");
          },
        }),
      ).toStrictEqual({ binary: true });
    } finally {
      closeSync(fd);
    }
  });
});
