// Tool results in QuickJS's own object format: the guest must get exactly the value the JSON
// path gives it (JSON.parse of JSON.stringify), for any plain JSON value and for values of a
// declared shape; anything else is refused so the caller takes the JSON path.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { z } from "zod";
import type { QuickJSContext } from "quickjs-emscripten";
import { BJSON_VERSION, MAX_BJSON_DEPTH, bjsonSelfTest, decodeInGuest, encodePlainJson, encoderFor, type BjsonEncoding } from "../../src/engine/bjson.js";
import { newWasmInstance, pagesFor } from "../../src/engine/wasm-instance.js";
import { guestValues, type GuestValues } from "./guest-values.js";

let guest: GuestValues;
let context: QuickJSContext;

beforeAll(async () => {
  guest = await guestValues();
  context = guest.context;
});

afterAll(() => guest.dispose());

/** The difference between the guest's value through each path ("" when none), and the JSON-length check. */
function bothPaths(value: unknown, encoding: BjsonEncoding): string {
  const json = JSON.stringify(value);
  const exact = Buffer.byteLength(json);
  expect(encoding.jsonBytesAtMost).toBeGreaterThanOrEqual(exact);
  // Exact but for doubles, each counted at the longest a double's JSON can be.
  expect(encoding.jsonBytesAtMost - exact).toBe(doublesSlack(value));
  return guest.difference(json, encoding.bytes);
}

/** What the bound adds for the doubles in `value` (JSON.stringify order; keys with undefined values are left out). */
function doublesSlack(value: unknown): number {
  if (typeof value === "number") return (value | 0) === value ? 0 : 25 - String(value).length;
  if (value === null || typeof value !== "object") return 0;
  let total = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) total += doublesSlack(item);
  return total;
}

// ---- values --------------------------------------------------------------------------------------

/** Objects built with defineProperty, as JSON.parse builds them (so a "__proto__" key is an own property). */
function objectOf(entries: Array<[string, unknown]>): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [key, value] of entries) Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  return object;
}

const specialKeys = ["__proto__", "constructor", "toString", "0", "1", "10", "01", "-1", "2147483646", "2147483647", "2147483648", "4294967294", "4294967295", "", "é", "\u2603", "\ud800", "a\u0000b"];
const key = fc.oneof(fc.string({ maxLength: 8 }), fc.string({ unit: "binary", maxLength: 4 }), fc.constantFrom(...specialKeys));
const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-0, 0, -1.0000313825228672e-6, 2 ** 31, -(2 ** 31), 2 ** 31 - 1, -(2 ** 31) - 1, 2 ** 53, Number.MAX_VALUE, Number.MIN_VALUE, 1e21, 1e-7, 0.1),
);
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.string({ unit: "grapheme" }),
  fc.constantFrom("\ud800", "\udfff", "a\ud800b", "\u0000", '"\\', "\u2028", "x".repeat(40), "é".repeat(40), "\u2603".repeat(40)),
);
const leaf = fc.oneof(text, number, fc.boolean(), fc.constant(null));
const { json } = fc.letrec((tie) => ({
  json: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, tie("array"), tie("object")),
  array: fc.array(tie("json"), { maxLength: 6 }),
  object: fc.array(fc.tuple(key, tie("json")), { maxLength: 6 }).map(objectOf),
}));

describe("the format of this build", () => {
  it("is version 5, byte for byte what the engine's own writer makes of the same value", () => {
    expect(BJSON_VERSION).toBe(5);
    expect(bjsonSelfTest(context)).toBeUndefined();
  });

  it("writes integers as zigzag LEB128 and integer keys as tagged integers", () => {
    expect([...encodePlainJson(-7)!.bytes]).toStrictEqual([5, 0, 5, 13]);
    expect([...encodePlainJson(objectOf([["5", true]]))!.bytes]).toStrictEqual([5, 0, 8, 0x81, 0x80, 0x80, 0x80, 0x00, 11, 4]);
  });
});

describe("the guest gets the value the JSON path gives it", () => {
  it("for any plain JSON value (property test)", () => {
    fc.assert(
      fc.property(json, (value) => {
        const encoding = encodePlainJson(value);
        expect(encoding).toBeDefined();
        expect(bothPaths(value, encoding!)).toBe("");
      }),
      { numRuns: 300 },
    );
  });

  it("for -0, 2^31, lone surrogates, __proto__ and integer keys, and keys JSON leaves out", () => {
    const cases: unknown[] = [
      -0,
      [-0, 0, 2 ** 31, -(2 ** 31), 2 ** 31 - 1, 2 ** 32, 1e21, 5e-324],
      // The longest JSON a double takes (25 bytes): the crossing bound must not undercount it.
      [-1.0000313825228672e-6, -2.2250738585072014e-308],
      ["\ud800", "\udc00x", "x\ud83d", "\ud83d\ude00", "\u0000", "é", "\u00ff\u0100"],
      objectOf([
        ["__proto__", { polluted: true }],
        ["constructor", 1],
      ]),
      objectOf([
        ["b", 1],
        ["10", 2],
        ["2", 3],
        ["a", 4],
        ["4294967295", 5],
        ["2147483648", 6],
        ["01", 7],
      ]),
      { kept: 1, dropped: undefined, alsoKept: [1] },
      Object.assign(Object.create(null), { nullPrototype: true }),
    ];
    for (const value of cases) expect(bothPaths(value, encodePlainJson(value)!)).toBe("");
  });

  it(`for nesting up to ${MAX_BJSON_DEPTH} levels, and refuses deeper values (they take the JSON path)`, () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < MAX_BJSON_DEPTH; i++) deep = i % 2 ? [deep] : { d: deep };
    expect(bothPaths(deep, encodePlainJson(deep)!)).toBe("");
    expect(encodePlainJson([deep])).toBeUndefined();
  });

  it("for a large array and a 10,000-row result of a schema", () => {
    const large = Array.from({ length: 100_000 }, (_, i) => i * 1.5);
    expect(bothPaths(large, encodePlainJson(large)!)).toBe("");
    const schema = z.object({ rows: z.array(z.object({ id: z.number().int(), name: z.string(), score: z.number(), tags: z.array(z.string()), note: z.string().optional() })) });
    const rows = schema.parse({ rows: Array.from({ length: 10_000 }, (_, i) => ({ id: i, name: `row ${i} ☃`, score: i / 7, tags: ["a", "b"], ...(i % 3 ? { note: "n" } : {}) })) });
    expect(bothPaths(rows, encoderFor(schema)(rows)!)).toBe("");
  });
});

describe("encoders generated per output schema", () => {
  const row = z.object({
    id: z.number().int(),
    name: z.string(),
    flag: z.boolean(),
    maybe: z.string().optional(),
    nothing: z.number().nullable(),
    kind: z.enum(["a", "b"]),
    three: z.literal(3),
    pair: z.tuple([z.string(), z.number()]),
    more: z.tuple([z.string()], z.number()),
    counts: z.record(z.string(), z.number()),
    either: z.union([z.string(), z.array(z.number())]),
    open: z.any(),
    later: z.lazy(() => z.string()),
    piped: z.string().pipe(z.string()),
    defaulted: z.number().default(1),
  });
  const schema = z.object({ rows: z.array(row), loose: z.looseObject({ known: z.string() }) });
  const rowValue = fc.record({
    id: fc.integer(),
    name: text,
    flag: fc.boolean(),
    maybe: fc.option(text, { nil: undefined }),
    nothing: fc.option(number, { nil: null }),
    kind: fc.constantFrom("a" as const, "b" as const),
    three: fc.constant(3 as const),
    pair: fc.tuple(text, number),
    more: fc.tuple(text).chain(([first]) => fc.array(number, { maxLength: 3 }).map((rest) => [first, ...rest] as [string, ...number[]])),
    counts: fc.array(fc.tuple(key, number), { maxLength: 4 }).map((entries) => objectOf(entries) as Record<string, number>),
    either: fc.oneof(text, fc.array(number, { maxLength: 3 })),
    open: json,
    later: text,
    piped: text,
    defaulted: number,
  });

  it("encode what zod lets through exactly as the JSON path (property test)", () => {
    const encode = encoderFor(schema);
    fc.assert(
      fc.property(fc.array(rowValue, { maxLength: 5 }), fc.array(fc.tuple(key, json), { maxLength: 3 }), (rows, extra) => {
        const loose = objectOf([["known", "k"], ...extra.filter(([name]) => name !== "known")]);
        const value = schema.parse({ rows, loose });
        const encoding = encode(value);
        expect(encoding).toBeDefined();
        expect(bothPaths(value, encoding!)).toBe("");
      }),
      { numRuns: 200 },
    );
  });

  it("are generated once per schema", () => {
    expect(encoderFor(schema)).toBe(encoderFor(schema));
  });

  it("refuse values that are not of the declared shape", () => {
    const encode = encoderFor(z.object({ id: z.number(), name: z.string(), tags: z.array(z.string()), kind: z.enum(["a"]) }));
    const good = { id: 1, name: "n", tags: ["t"], kind: "a" };
    expect(encode(good)).toBeDefined();
    for (const bad of [
      { ...good, id: "1" },
      { ...good, name: 5 },
      { ...good, tags: ["t", 1] },
      { ...good, tags: "t" },
      { ...good, kind: "b" },
      { ...good, extra: 1 },
      { id: 1, name: "n", tags: [] },
      [good],
      null,
    ]) {
      expect(encode(bad)).toBeUndefined();
    }
  });

  it("take back what a union's failed option wrote before trying the next one", () => {
    const schema = z.object({
      item: z.union([z.object({ kind: z.string(), size: z.string(), only: z.string().optional() }), z.object({ kind: z.string(), size: z.number(), other: z.string() })]),
    });
    const value = schema.parse({ item: { kind: "box", size: 3, other: "o" } });
    const encoding = encoderFor(schema)(value)!;
    expect(bothPaths(value, encoding)).toBe("");
    // Only the atoms the second option used are in the table: item, kind, size, other.
    expect(encoding.bytes[1]).toBe(4);
  });

  it("keep recursive schemas recursive", () => {
    interface Tree {
      name: string;
      children: Tree[];
    }
    const tree: z.ZodType<Tree> = z.lazy(() => z.object({ name: z.string(), children: z.array(tree) }));
    const value: Tree = {
      name: "root",
      children: [
        { name: "leaf", children: [] },
        { name: "branch", children: [{ name: "deep", children: [] }] },
      ],
    };
    expect(bothPaths(value, encoderFor(tree)(value)!)).toBe("");
    expect(encoderFor(tree)({ name: "root", children: [{ name: 1, children: [] }] })).toBeUndefined();
  });
});

describe("what is refused (the caller takes the JSON path)", () => {
  class Point {
    x = 1;
  }
  // biome-ignore lint/suspicious/noSparseArray: a hole is the case under test
  const sparse = [1, , 3];
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  it.each([
    ["undefined", undefined],
    ["NaN", NaN],
    ["Infinity", [Infinity]],
    ["a Date", { at: new Date(0) }],
    ["a Map", new Map()],
    ["a class instance", new Point()],
    ["a sparse array", sparse],
    ["an undefined element", [undefined]],
    ["a BigInt", { n: 1n }],
    ["a function", { f: () => 1 }],
    ["a symbol", { s: Symbol("s") }],
    ["an own toJSON", { toJSON: () => "x" }],
    ["a cycle", cyclic],
  ])("%s", (_, value) => {
    expect(encodePlainJson(value)).toBeUndefined();
  });

  it("anything while a host prototype has an enumerable property or a toJSON", () => {
    const prototype = Object.prototype as Record<string, unknown>;
    prototype.polluted = 1;
    try {
      expect(encodePlainJson({ a: 1 })).toBeUndefined();
      expect(encoderFor(z.object({ a: z.number() }))({ a: 1 })).toBeUndefined();
    } finally {
      delete prototype.polluted;
    }
    Object.defineProperty(Object.prototype, "toJSON", { value: () => "x", configurable: true, writable: true });
    try {
      expect(encodePlainJson({ a: 1 })).toBeUndefined();
    } finally {
      delete prototype.toJSON;
    }
    expect(encodePlainJson({ a: 1 })).toBeDefined();
  });
});

describe("decoding in the guest", () => {
  it("reports malformed, truncated and wrong-version bytes as guest errors, not crashes", () => {
    const good = encodePlainJson({ a: [1, 2, "three"] })!.bytes;
    const broken = [good.slice(0, good.length - 3), Uint8Array.from([4, 0, 1]), Uint8Array.from([5, 0, 99]), Uint8Array.from([5, 0, 8, 1, 6, 1])];
    const messages = broken.map((bytes) => {
      const decoded = decodeInGuest(context, bytes);
      if ("value" in decoded) decoded.value.dispose();
      if (!("error" in decoded)) return "";
      const error = context.dump(decoded.error) as { name: string; message: string };
      decoded.error.dispose();
      return `${error.name}: ${error.message}`;
    });
    expect(messages[1]).toBe("SyntaxError: invalid version (4 expected=5)");
    expect(messages.every((message) => message.length > 0)).toBe(true);
    const after = decodeInGuest(context, good);
    expect("value" in after && context.dump(after.value)).toStrictEqual({ a: [1, 2, "three"] });
    if ("value" in after) after.value.dispose();
  });

  it("fails a value larger than the instance's memory cap as out of memory, without writing outside the heap, and the instance stays usable", async () => {
    const small = await newWasmInstance(pagesFor(8 * 1024 * 1024));
    const smallRuntime = small.module.newRuntime();
    const smallContext = smallRuntime.newContext();
    const statics = new Uint8Array(small.memory.buffer).slice(0, 64 * 1024);
    const huge = encodePlainJson(Array.from({ length: 40 }, (_, i) => String(i).repeat(1024 * 1024)))!;
    expect(decodeInGuest(smallContext, huge.bytes)).toStrictEqual({ outOfMemory: true });
    expect(Buffer.compare(Buffer.from(statics), Buffer.from(small.memory.buffer, 0, 64 * 1024))).toBe(0);
    // Fits in memory as bytes, not as the value it decodes to: QuickJS's own out-of-memory error.
    const large = encodePlainJson(Array.from({ length: 12 }, (_, i) => "x".repeat(1024 * 1024) + i))!;
    const decoded = decodeInGuest(smallContext, large.bytes);
    expect("error" in decoded).toBe(true);
    if ("error" in decoded) {
      expect(JSON.stringify(smallContext.dump(decoded.error))).toMatch(/out of memory|null/);
      decoded.error.dispose();
    }
    if ("value" in decoded) decoded.value.dispose();
    const after = decodeInGuest(smallContext, encodePlainJson({ ok: true })!.bytes);
    expect("value" in after && smallContext.dump(after.value)).toStrictEqual({ ok: true });
    if ("value" in after) after.value.dispose();
    smallContext.dispose();
    smallRuntime.dispose();
  });
});
