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

  it("keeps at most 50 KB of whole lines and whole characters", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "grapheme", maxLength: 300 }), { minLength: 1, maxLength: 600 }), (parts) => {
        const page = Buffer.from(parts.join("\n"), "utf8");
        const r = tailTruncate(page);
        expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(OUTPUT_TAIL_BYTES);
        // The tail is a true suffix of the page: nothing was re-encoded or split.
        expect(page.toString("utf8").endsWith(r.text)).toBe(true);
        expect(r.truncated).toBe(Buffer.byteLength(r.text) < page.length);
      }),
      { numRuns: 40 },
    );
  });

  it("previews at most 2,048 bytes without splitting a character", () => {
    const head = Buffer.from("€".repeat(1000));
    const p = headPreview(head);
    expect(Buffer.byteLength(p)).toBe(2046);
    expect(p).toBe("€".repeat(682));
  });
});
