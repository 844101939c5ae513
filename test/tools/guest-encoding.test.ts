// The guest's fast path for a program's call (a record projected, checked and encoded in one pass
// by its output schema's generated encoder) against the ordinary path (projection, zod, JSON):
// the same accepted values, to the guest value, and the same errors.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { z } from "zod";
import { defineTool, invokeToolForProgram, prepareCalls, ToolError, type ToolContext } from "../../src/tools/index.js";
import { guestValues, type GuestValues } from "../engine/guest-values.js";

let guest: GuestValues;
beforeAll(async () => {
  guest = await guestValues();
});
afterAll(() => guest.dispose());

const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "call-1", runId: "run-1", depth: 0 });
const caller = prepareCalls({ outputBudget: Infinity, audience: "program" });

const ABSENT = Symbol("absent");

/** An object as JSON.parse builds one: a "__proto__" key is an own property. */
function objectOf(entries: Array<[string, unknown]>): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (const [key, value] of entries) if (value !== ABSENT) Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  return object;
}

// biome-ignore lint/suspicious/noSparseArray: a hole is what this value is for
const sparse = [1, , 3];
class Box {
  size = 1;
}
/** Values that are not what any schema declares, or not plain JSON: each path must refuse or convert them alike. */
const junk = fc.constantFrom<unknown>(
  undefined,
  null,
  -0,
  2 ** 31,
  2 ** 53 + 2,
  -(2 ** 31) - 1,
  0.5,
  Number.NaN,
  Infinity,
  "",
  "\ud800",
  "x",
  true,
  new Date(0),
  sparse,
  new Box(),
  Object.create(null),
  { extra: 1 },
  [undefined],
);
const number = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(-0, 2 ** 31, 2 ** 31 - 1, 2 ** 53, 2 ** 60, 1e21, 0.1));
const text = fc.oneof(fc.string({ maxLength: 6 }), fc.string({ unit: "binary", maxLength: 4 }), fc.constantFrom("\ud800", "a\udfffb", " padded ", "a@b.co", "x".repeat(40)));

interface Node {
  schema: z.ZodType;
  value: fc.Arbitrary<unknown>;
}
const maybe = (value: fc.Arbitrary<unknown>) => fc.oneof({ weight: 4, arbitrary: value }, { weight: 1, arbitrary: junk });

const leaves: Node[] = [
  { schema: z.string(), value: text },
  { schema: z.string().min(2).max(5), value: text },
  { schema: z.string().trim(), value: text },
  { schema: z.email(), value: text },
  { schema: z.number(), value: number },
  { schema: z.number().int(), value: number },
  { schema: z.int(), value: number },
  { schema: z.number().min(0).lt(100), value: number },
  { schema: z.number().multipleOf(2), value: number },
  { schema: z.boolean(), value: fc.boolean() },
  { schema: z.null(), value: fc.constant(null) },
  { schema: z.literal("a"), value: fc.constantFrom("a", "b") },
  { schema: z.enum(["x", "y"]), value: fc.constantFrom("x", "y", "z") },
  { schema: z.any(), value: fc.jsonValue({ maxDepth: 2 }) },
  { schema: z.string().default("d"), value: text },
];

const keys = fc.constantFrom("a", "b", "id", "2", "10", "__proto__", "constructor", "é");
const { node } = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(...leaves),
    tie("node").map((inner) => ({ schema: z.array(inner.schema), value: fc.array(maybe(inner.value), { maxLength: 4 }) })),
    tie("node").map((inner) => ({ schema: inner.schema.optional(), value: fc.oneof(inner.value, fc.constant(undefined)) })),
    tie("node").map((inner) => ({ schema: inner.schema.nullable(), value: fc.oneof(inner.value, fc.constant(null)) })),
    fc.tuple(tie("node"), tie("node")).map(([a, b]) => ({ schema: z.union([a.schema, b.schema]), value: fc.oneof(a.value, b.value) })),
    tie("node").map((inner) => ({ schema: z.record(z.string(), inner.schema), value: fc.array(fc.tuple(keys, maybe(inner.value)), { maxLength: 3 }).map(objectOf) })),
    fc.tuple(fc.uniqueArray(fc.tuple(keys, tie("node")), { selector: ([key]) => key, maxLength: 4 }), fc.constantFrom("strip", "strict", "loose")).map(([fields, mode]) => {
      const shape = Object.fromEntries(fields.map(([key, field]) => [key, field.schema]));
      const object = mode === "strict" ? z.strictObject(shape) : mode === "loose" ? z.looseObject(shape) : z.object(shape);
      const value = fc
        .tuple(
          fc.tuple(
            ...fields.map(([key, field]) => fc.tuple(fc.constant(key), fc.oneof({ weight: 6, arbitrary: field.value }, { weight: 1, arbitrary: fc.constant(ABSENT) }, { weight: 1, arbitrary: junk }))),
          ),
          fc.option(fc.tuple(keys, junk)),
        )
        .map(([entries, extra]) => objectOf(extra ? [...entries, extra] : entries));
      return { schema: object, value };
    }),
  ),
}));

type Outcome = { ok: true; value: unknown; encoded?: Uint8Array } | { ok: false; code: string; message: string };

async function outcome(promise: Promise<{ value: unknown; encoded?: Uint8Array }>): Promise<Outcome> {
  try {
    return { ok: true, ...(await promise) };
  } catch (err) {
    expect(err).toBeInstanceOf(ToolError);
    return { ok: false, code: (err as ToolError).code, message: (err as ToolError).message };
  }
}

async function bothPaths(output: z.ZodObject, record: unknown): Promise<{ fast: Outcome; ordinary: Outcome }> {
  const tool = defineTool({ name: "t", description: "t", input: z.object({}), output, execute: async () => record as never });
  const ordinary = await outcome(invokeToolForProgram(tool, {}, { ctx: ctx() }).then((value) => ({ value })));
  const fast = await outcome(caller.forGuest(tool, {}, { ctx: ctx() }, true).then((result) => ({ value: result.value(), ...(result.encoded ? { encoded: result.encoded.bytes } : {}) })));
  return { fast, ordinary };
}

describe("the guest's one-pass encoding of a record", () => {
  it("gives the guest the value the ordinary path gives, or refuses; errors are the ordinary path's", async () => {
    let encoded = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        node.chain((n) => fc.tuple(fc.constant(n.schema), n.value)),
        async ([schema, value]) => {
          runs++;
          const { fast, ordinary } = await bothPaths(z.object({ v: schema }), { v: value, host_only: 1 });
          if (!ordinary.ok) {
            expect(fast).toStrictEqual(ordinary);
            return;
          }
          expect(fast.ok).toBe(true);
          if (!fast.ok) return;
          // (By their JSON: toStrictEqual reads a "constructor" key as the class.)
          expect(JSON.stringify(fast.value)).toBe(JSON.stringify(ordinary.value));
          if (fast.encoded) {
            encoded++;
            expect(guest.difference(JSON.stringify([ordinary.value]), fast.encoded)).toBe("");
          }
        },
      ),
      { numRuns: 400 },
    );
    // The fast path is taken for most accepted records, not only for the trivial ones.
    expect(encoded).toBeGreaterThan(runs / 5);
  });

  it("pins the edge cases: -0, 2^31, large integers, lone surrogates, __proto__ and integer keys, defaults, optional nulls, nested arrays", async () => {
    const schema = z.object({
      n: z.number(),
      big: z.number(),
      int: z.number().int(),
      s: z.string(),
      __proto__: z.string(),
      "7": z.boolean(),
      withDefault: z.string().default("d"),
      optional: z.string().optional(),
      nested: z.array(z.array(z.number())),
    });
    const record = objectOf([
      ["n", -0],
      ["big", 2 ** 31],
      ["int", 2 ** 53 - 1],
      ["s", "a\ud800b"],
      ["__proto__", "own"],
      ["7", true],
      ["optional", null],
      ["nested", [[1, -0], [], [2 ** 31]]],
      ["extra", "dropped"],
    ]);
    const { fast, ordinary } = await bothPaths(schema, record);
    expect(ordinary).toMatchObject({ ok: true });
    expect(fast.ok && fast.encoded).toBeTruthy();
    if (!fast.ok || !ordinary.ok || !fast.encoded) return;
    expect(guest.difference(JSON.stringify([ordinary.value]), fast.encoded)).toBe("");
    expect(Object.hasOwn(ordinary.value as object, "optional")).toBe(false);
    expect((ordinary.value as { withDefault: string }).withDefault).toBe("d");
  });

  it("refuses what zod refuses, and the error is zod's own, word for word", async () => {
    const schema = z.object({ id: z.number().int(), tags: z.array(z.string()) });
    for (const record of [{ id: 2 ** 53, tags: [] }, { id: 1, tags: ["a", 2] }, { tags: [] }, { id: 1.5, tags: [] }]) {
      const { fast, ordinary } = await bothPaths(schema, record);
      expect(ordinary.ok).toBe(false);
      expect(fast).toStrictEqual(ordinary);
    }
  });
});
