// The text helpers every other module uses: the one byte formatter and the one duration formatter;
// the cuts, in bytes (a budget) and in characters (a cap), none of which may split a character.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { describeReceived, formatBytes, formatDuration, headChars, tailChars, takeHead, takeTail, YAML_WORDS } from "../src/text.js";

const text = fc.string({ unit: fc.constantFrom("a", "é", "€", "😀", "\n", "\ud800", "\udc00"), maxLength: 60 });
const loneAtEnd = (s: string) => /[\ud800-\udbff]$/.test(s);
const loneAtStart = (s: string) => /^[\udc00-\udfff]/.test(s);
/** Whether cutting `s` at `at` separates the two halves of a surrogate pair (a lone half in `s` is its own character). */
const splitsPair = (s: string, at: number) => loneAtEnd(s.slice(0, at)) && loneAtStart(s.slice(at));

describe("cuts in bytes", () => {
  it("keep at most the budget, never split a character, and take the longest such cut", () => {
    fc.assert(
      fc.property(text, fc.integer({ min: -2, max: 200 }), (s, bytes) => {
        const head = takeHead(s, bytes);
        const tail = takeTail(s, bytes);
        expect(s.startsWith(head) && s.endsWith(tail)).toBe(true);
        expect(Buffer.byteLength(head)).toBeLessThanOrEqual(Math.max(0, bytes));
        expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(Math.max(0, bytes));
        if (Buffer.byteLength(s) <= bytes) expect([head, tail]).toStrictEqual([s, s]);
        expect(splitsPair(s, head.length)).toBe(false);
        expect(splitsPair(s, s.length - tail.length)).toBe(false);
        // One unit more would not fit, or would split a pair. (At a lone surrogate of the input the
        // cut cannot tell it from half a pair it made, and may keep one unit less.)
        if (!s.isWellFormed()) return;
        if (head !== s) expect(Buffer.byteLength(s.slice(0, head.length + 1)) > bytes || splitsPair(s, head.length + 1)).toBe(true);
        if (tail !== s) expect(Buffer.byteLength(s.slice(s.length - tail.length - 1)) > bytes || splitsPair(s, s.length - tail.length - 1)).toBe(true);
      }),
    );
  });

  it("cut a four-byte character whole or not at all", () => {
    expect([takeHead("a😀b", 4), takeHead("a😀b", 5), takeTail("a😀b", 4), takeTail("a😀b", 5)]).toStrictEqual(["a", "a😀", "b", "😀b"]);
  });
});

describe("cuts in characters", () => {
  it("keep at most `chars` UTF-16 units and never leave half a surrogate pair at the cut", () => {
    fc.assert(
      fc.property(text, fc.integer({ min: -2, max: 80 }), (s, chars) => {
        const head = headChars(s, chars);
        const tail = tailChars(s, chars);
        expect(s.startsWith(head) && s.endsWith(tail)).toBe(true);
        if (s.length <= chars) expect([head, tail]).toStrictEqual([s, s]);
        else {
          expect(head.length).toBeLessThanOrEqual(Math.max(0, chars));
          expect(tail.length).toBeLessThanOrEqual(Math.max(0, chars));
          expect(head.length).toBeGreaterThanOrEqual(Math.max(0, chars - 1));
          expect(tail.length).toBeGreaterThanOrEqual(Math.max(0, chars - 1));
          if (head.length < chars) expect(loneAtEnd(s.slice(0, chars))).toBe(true);
          if (tail.length < chars && chars > 0) expect(loneAtStart(s.slice(s.length - chars))).toBe(true);
        }
      }),
    );
  });

  it("drop the half of a pair the cut would keep", () => {
    expect([headChars("ab😀c", 3), headChars("ab😀c", 4), tailChars("a😀bc", 3), tailChars("a😀bc", 4)]).toStrictEqual(["ab", "ab😀", "bc", "😀bc"]);
  });
});

describe("describeReceived", () => {
  it("names a value in JavaScript's words, or in a YAML file's", () => {
    const values = [null, undefined, [1], { a: 1 }, "x".repeat(50), 7, true, 10n];
    expect(values.map((v) => describeReceived(v))).toStrictEqual([
      "null",
      "undefined",
      "an array",
      "an object",
      `the string "${"x".repeat(40)}…"`,
      "the number 7",
      "the boolean true",
      "the bigint 10",
    ]);
    expect(values.map((v) => describeReceived(v, YAML_WORDS)).slice(2, 4)).toStrictEqual(["a list", "a mapping"]);
    expect(describeReceived(1, { array: "an array", object: "an object", article: "" })).toBe("number 1");
  });
});

describe("formatBytes", () => {
  it("names sizes in bytes, KiB and MiB and never rounds up to the next unit's worth", () => {
    expect([0, 1, 2, 1023, 1024, 1536, 1023 * 1024, 1048575, 1048576, 16 * 1048576].map(formatBytes)).toEqual([
      "0 bytes",
      "1 byte",
      "2 bytes",
      "1023 bytes",
      "1.0 KiB",
      "1.5 KiB",
      "1023.0 KiB",
      "1.0 MiB",
      "1.0 MiB",
      "16.0 MiB",
    ]);
  });
});

describe("formatDuration", () => {
  it("shows ms below a second, tenths below a minute and m/ss past it, rounding once", () => {
    expect([0, 850, 999.4, 999.6, 4200, 59_940, 59_970, 60_000, 119_600, 185_000].map(formatDuration)).toEqual(["0ms", "850ms", "999ms", "1.0s", "4.2s", "59.9s", "1m00s", "1m00s", "2m00s", "3m05s"]);
  });
});
