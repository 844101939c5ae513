import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { checkSinceBytes, headPreview, tailTruncate, OUTPUT_TAIL_BYTES, OUTPUT_TAIL_LINES } from "../../src/tasks/output.js";

describe("output paging helpers", () => {
  const buf = Buffer.from("aé€😀z", "utf8"); // 1 + 2 + 3 + 4 + 1 bytes
  const at = (o: number) => buf[o]!;

  it("accepts every character boundary and the end", () => {
    for (const o of [0, 1, 3, 6, 10, 11]) expect(() => checkSinceBytes("T", o, buf.length, at)).not.toThrow();
  });

  it("refuses an offset inside a multi-byte character, naming the boundary before it", () => {
    expect(() => checkSinceBytes("T", 2, buf.length, at)).toThrow(
      '"since_bytes" 2 falls inside a multi-byte UTF-8 character of task T\'s output; pass a character boundary such as 1, or the output_bytes of the previous read',
    );
    expect(() => checkSinceBytes("T", 8, buf.length, at)).toThrow("pass a character boundary such as 6,");
  });

  it("refuses an offset past the end with the valid range", () => {
    expect(() => checkSinceBytes("T", 12, buf.length, at)).toThrow(
      '"since_bytes" 12 is past the end of task T\'s output (11 bytes); pass a value from 0 to 11, e.g. the output_bytes of the previous read',
    );
  });

  it("keeps small pages whole", () => {
    expect(tailTruncate(Buffer.from("one\ntwo\n"))).toStrictEqual({ text: "one\ntwo\n", truncated: false });
  });

  it("keeps the last 2,000 lines", () => {
    const text = Array.from({ length: 2500 }, (_, i) => `l${i}`).join("\n") + "\n";
    const r = tailTruncate(Buffer.from(text));
    expect(r.truncated).toBe(true);
    const lines = r.text.split("\n").filter(Boolean);
    expect(lines.length).toBe(OUTPUT_TAIL_LINES);
    expect(lines[0]).toBe("l500");
    expect(lines.at(-1)).toBe("l2499");
  });

  it("keeps the last 50 KB of a long last line, cut on a character boundary and marked", () => {
    // 61,445 bytes: one 60 KB line, then "end". Dropping the cut line whole would leave 4 bytes.
    expect(tailTruncate(Buffer.from("x".repeat(60 * 1024) + "\nend\n"))).toStrictEqual({ text: "x".repeat(50 * 1024 - 5) + "\nend\n", truncated: true, startsMidLine: true });
    // The cut lands inside a two-byte character: it moves to the next character.
    expect(tailTruncate(Buffer.from("é".repeat(40_000) + "\n"))).toStrictEqual({ text: "é".repeat(25_599) + "\n", truncated: true, startsMidLine: true });
    // No newline at all: still the last 50 KB.
    expect(tailTruncate(Buffer.from("ab".repeat(30_000)))).toStrictEqual({ text: "ab".repeat(25_600), truncated: true, startsMidLine: true });
  });

  it("starts on a line when the cut line is short, or when the cut falls on a line start", () => {
    const lines = (n: number, width: number) => Array.from({ length: n }, (_, i) => `${String(i).padStart(width - 1, "0")}\n`).join("");
    // 100-byte lines: the cut falls exactly on a line start; nothing more is dropped.
    const even = tailTruncate(Buffer.from(lines(1000, 100)));
    expect([even.text.length, even.text.split("\n")[0], even.startsMidLine]).toStrictEqual([51_200, "488".padStart(99, "0"), undefined]);
    // 300-byte lines: the cut line's last 200 bytes are dropped, the page starts with the next line.
    const short = tailTruncate(Buffer.from(lines(200, 300)));
    expect([short.text.length, short.text.split("\n")[0], short.startsMidLine]).toStrictEqual([51_000, "30".padStart(299, "0"), undefined]);
  });

  it("keeps at most 50 KB of whole characters, whole lines unless the cut line is longer than half of it", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "grapheme", maxLength: 3000 }), { minLength: 1, maxLength: 300 }), (parts) => {
        const whole = parts.join("\n");
        const page = Buffer.from(whole, "utf8");
        const r = tailTruncate(page);
        expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(OUTPUT_TAIL_BYTES);
        // The tail is a true suffix of the page: nothing was re-encoded or split.
        expect(whole.endsWith(r.text)).toBe(true);
        expect(r.truncated).toBe(Buffer.byteLength(r.text) < page.length);
        const before = whole.slice(0, whole.length - r.text.length);
        // Mid-line exactly when the text before the page does not end a line.
        expect(r.startsMidLine === true).toBe(r.truncated && before !== "" && !before.endsWith("\n"));
        // A dropped partial line never costs more than half the window (less a character's alignment).
        if (r.truncated && !r.startsMidLine) expect(Buffer.byteLength(r.text)).toBeGreaterThanOrEqual(OUTPUT_TAIL_BYTES / 2 - 3);
      }),
      { numRuns: 60 },
    );
  });

  it("previews at most 2,048 bytes without splitting a character", () => {
    const head = Buffer.from("€".repeat(1000));
    const p = headPreview(head);
    expect(Buffer.byteLength(p)).toBe(2046);
    expect(p).toBe("€".repeat(682));
  });
});
