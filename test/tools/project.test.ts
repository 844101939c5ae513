import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { z } from "zod";
import { assertToolViews, assertViewSubset, defineTool, invokeTool, projectViews, ToolError, type ToolContext } from "../../src/tools/index.js";
import { compileProjector } from "../../src/tools/project.js";
import { compactSession, fullSession, newCalls, sessionStatusTool, type FullSession } from "./sample-tools.js";

const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "c", runId: "r", depth: 0 });

const str = fc.string({ maxLength: 6 });
const junk = fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
const withJunk = <T extends object>(arb: fc.Arbitrary<T>) => fc.tuple(arb, junk).map(([value, extra]) => Object.assign(Object.create(Object.prototype) as object, extra, value) as T);

const interaction = withJunk(fc.record({ interaction_id: str, kind: str, title: str, provider_request_id: str }, { requiredKeys: ["interaction_id", "kind", "title"] }));
const fullRecord: fc.Arbitrary<FullSession> = fc.record({
  session: withJunk(
    fc.record(
      {
        id: str,
        name: str,
        state: fc.constantFrom("active" as const, "stopped" as const, "archived" as const),
        branch: str,
        runtime: withJunk(
          fc.record(
            { status: str, generation: fc.integer(), selection_revision: fc.integer(), acp_caps: fc.array(str, { maxLength: 3 }) },
            { requiredKeys: ["status", "selection_revision", "acp_caps"] },
          ),
        ),
        pending_interactions: fc.array(interaction, { maxLength: 3 }),
        stop_reason: str,
        archived_at: fc.option(str, { nil: null }),
        lineage: fc.record({ root_session_id: str, permission_policy: fc.record({ tools: fc.array(str, { maxLength: 3 }) }) }),
        diagnostics: fc.dictionary(str, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      },
      { requiredKeys: ["id", "name", "state", "runtime", "pending_interactions", "archived_at", "lineage"] },
    ),
  ),
});

function keysWithin(value: unknown, schema: Record<string, unknown>, path = "$"): void {
  // Every key in a projection is one the view's JSON Schema declares.
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) keysWithin(item, (schema.items ?? {}) as Record<string, unknown>, `${path}[${i}]`);
    return;
  }
  if (value !== null && typeof value === "object") {
    const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    for (const key of Object.keys(value)) {
      if (schema.additionalProperties !== undefined && schema.additionalProperties !== false && !Object.hasOwn(props, key)) continue;
      expect(Object.hasOwn(props, key), `${path}.${key} is declared`).toBe(true);
      keysWithin((value as Record<string, unknown>)[key], props[key]!, `${path}.${key}`);
    }
  }
}

describe("view projection, property-based", () => {
  it("compact ⊆ full at the same path with the same value, for generated records with unknown keys mixed in", async () => {
    let current: FullSession | undefined;
    const tool = sessionStatusTool(newCalls(), () => current);
    const compactJson = z.toJSONSchema(compactSession, { io: "output" }) as Record<string, unknown>;
    const fullJson = z.toJSONSchema(fullSession, { io: "output" }) as Record<string, unknown>;
    await fc.assert(
      fc.asyncProperty(fullRecord, async (record) => {
        current = record;
        // development: true makes invokeTool run the same subset check on every call as well.
        const compact = (await invokeTool(tool, { session_id: "s" }, { ctx: ctx(), development: true })).structuredContent!;
        const full = (await invokeTool(tool, { session_id: "s", result_view: "full" }, { ctx: ctx(), development: true })).structuredContent!;
        assertViewSubset(compact, full);
        expect(JSON.parse(JSON.stringify(compact))).toStrictEqual(compact);
        expect(JSON.parse(JSON.stringify(full))).toStrictEqual(full);
        keysWithin(compact, compactJson);
        keysWithin(full, fullJson);
        expect(compactSession.safeParse(compact).success).toBe(true);
        expect(fullSession.safeParse(full).success).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("unknown keys never change a projection", () => {
    const project = compileProjector(fullSession);
    const strip = (r: FullSession) => fullSession.parse(JSON.parse(JSON.stringify(r)));
    fc.assert(
      fc.property(fullRecord, (record) => {
        expect(project(record)).toStrictEqual(project(strip(record)));
      }),
      { numRuns: 200 },
    );
  });

  it("assertViewSubset accepts any pruning of a value and rejects any changed leaf", () => {
    const prune = (value: unknown, keep: () => boolean): unknown => {
      if (Array.isArray(value)) return value.map((v) => prune(v, keep));
      if (value !== null && typeof value === "object") {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(value)) if (keep()) Object.defineProperty(out, k, { value: prune(v, keep), enumerable: true });
        return out;
      }
      return value;
    };
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.infiniteStream(fc.boolean()), (full, bits) => {
        const it = bits[Symbol.iterator]();
        expect(() =>
          assertViewSubset(
            prune(full, () => it.next().value as boolean),
            full,
          ),
        ).not.toThrow();
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), fc.string(), { minKeys: 1 }), (full) => {
        const key = Object.keys(full)[0]!;
        const changed = { [key]: `${full[key]}!` };
        expect(() => assertViewSubset(changed, full)).toThrow();
      }),
      { numRuns: 100 },
    );
  });
});

describe("projectViews / assertToolViews", () => {
  it("project both views of a record without running the tool", () => {
    const calls = newCalls();
    const tool = sessionStatusTool(calls);
    fc.assert(
      fc.property(fullRecord, (record) => {
        assertToolViews(tool, record);
        const { compact, full } = projectViews(tool, record);
        expect(compactSession.parse(compact)).toStrictEqual(compact);
        expect(fullSession.parse(full)).toStrictEqual(full);
      }),
      { numRuns: 100 },
    );
    expect(calls.count).toBe(0);
  });

  it("name the tool and the path when a record breaks the promise", () => {
    // Unions the definition cannot pair: the promise depends on the record.
    const tool = defineTool({
      name: "drifting",
      description: "Compact keeps a key that the full union drops.",
      input: z.object({}),
      views: { compact: z.object({ n: z.union([z.object({ a: z.number(), b: z.number() }), z.number()]) }), full: z.object({ n: z.union([z.object({ a: z.number() }), z.number()]) }) },
      execute: () => ({ n: 0 }),
    });
    expect(() => assertToolViews(tool, { n: { a: 1, b: 2 } })).toThrow(new Error('tool "drifting": compact view has $.n.b, the full view does not'));
    expect(() => assertToolViews(tool, { n: 2 })).not.toThrow();
    expect(() => projectViews(tool, { n: "x" })).toThrow(ToolError);
    const single = defineTool({ name: "single", description: "d", input: z.object({}), output: z.object({}), execute: () => ({}) });
    expect(() => projectViews(single, {})).toThrow(new TypeError('projectViews: tool "single" has no result views'));
  });
});

describe("projection rules", () => {
  it("drops keys a strip or strict object does not declare, keeps them for a loose object", () => {
    const schema = z.object({
      strip: z.object({ a: z.number() }),
      strict: z.strictObject({ a: z.number() }),
      loose: z.looseObject({ a: z.number() }),
    });
    const record = { strip: { a: 1, b: 2 }, strict: { a: 1, b: 2 }, loose: { a: 1, b: 2 }, other: true };
    expect(compileProjector(schema)(record)).toStrictEqual({ strip: { a: 1 }, strict: { a: 1 }, loose: { a: 1, b: 2 } });
  });

  it("picks the first union option the value satisfies and projects with it", () => {
    const schema = z.object({
      event: z.discriminatedUnion("kind", [z.object({ kind: z.literal("file"), path: z.string() }), z.object({ kind: z.literal("url"), href: z.string() })]),
      either: z.union([z.object({ n: z.number() }), z.string()]),
    });
    const project = compileProjector(schema);
    expect(project({ event: { kind: "url", href: "h", path: "unused" }, either: "s" })).toStrictEqual({ event: { kind: "url", href: "h" }, either: "s" });
    expect(project({ event: { kind: "file", path: "p", size: 3 }, either: { n: 1, m: 2 } })).toStrictEqual({ event: { kind: "file", path: "p" }, either: { n: 1 } });
  });

  it("projects records, tuples, intersections and recursive schemas", () => {
    type Node = { name: string; children: Node[] };
    const node: z.ZodType<Node> = z.lazy(() => z.object({ name: z.string(), children: z.array(node) }));
    const schema = z.object({
      counts: z.record(z.string(), z.object({ n: z.number() })),
      pair: z.tuple([z.object({ a: z.number() }), z.string()]),
      both: z.intersection(z.object({ a: z.number() }), z.object({ b: z.number() })),
      tree: node,
    });
    const record = {
      counts: { x: { n: 1, extra: 1 } },
      pair: [{ a: 1, z: 0 }, "s"],
      both: { a: 1, b: 2, c: 3 },
      tree: { name: "root", secret: 1, children: [{ name: "leaf", children: [], secret: 2 }] },
    };
    Object.defineProperty(record.counts, "__proto__", { value: { n: 2, extra: 0 }, enumerable: true });
    const out = compileProjector(schema)(record) as Record<string, Record<string, unknown>>;
    expect(Object.getPrototypeOf(out.counts)).toBe(Object.prototype);
    expect(Object.keys(out.counts!)).toStrictEqual(["x", "__proto__"]);
    expect(out.counts!.x).toStrictEqual({ n: 1 });
    expect(Object.getOwnPropertyDescriptor(out.counts, "__proto__")!.value).toStrictEqual({ n: 2 });
    expect(out.pair).toStrictEqual([{ a: 1 }, "s"]);
    expect(out.both).toStrictEqual({ a: 1, b: 2 });
    expect(out.tree).toStrictEqual({ name: "root", children: [{ name: "leaf", children: [] }] });
  });

  it("treats null as absent for optional and defaulted keys that cannot hold null", async () => {
    const tool = defineTool({
      name: "nulls",
      description: "Record written with nulls for absent fields.",
      input: z.object({}),
      output: z.object({ a: z.string().optional(), b: z.number().default(5), c: z.string().nullable(), d: z.string().nullish() }),
      execute: () => ({ a: null, b: null, c: null, d: null }) as never,
    });
    const result = await invokeTool(tool, {}, { ctx: ctx() });
    expect(result.structuredContent).toStrictEqual({ b: 5, c: null, d: null });
    expect(Object.hasOwn(result.structuredContent!, "a")).toBe(false);
  });

  it("names the whole record when it is not an object", async () => {
    const tool = defineTool({ name: "nothing", description: "Returns nothing.", input: z.object({}), output: z.object({ a: z.string() }), execute: () => undefined as never });
    await expect(invokeTool(tool, {}, { ctx: ctx() })).rejects.toThrow('tool "nothing" returned a record that does not match its output schema: record must be object, received undefined');
  });

  it("reads class instances by their own enumerable keys, as JSON would", () => {
    class Row {
      constructor(
        readonly id: string,
        readonly hidden: string,
      ) {}
    }
    const schema = z.object({ rows: z.array(z.object({ id: z.string() })) });
    expect(compileProjector(schema)({ rows: [new Row("a", "h")] })).toStrictEqual({ rows: [{ id: "a" }] });
  });

  it("copies open (unknown) values as JSON: Dates become strings, undefined disappears, -0 becomes 0", () => {
    const schema = z.object({ meta: z.unknown(), n: z.number(), list: z.array(z.unknown()) });
    const out = compileProjector(schema)({ meta: { at: new Date(0), gone: undefined, f: () => 1 }, n: -0, list: [undefined, 1] });
    expect(out).toStrictEqual({ meta: { at: "1970-01-01T00:00:00.000Z" }, n: 0, list: [null, 1] });
    expect(Object.is((out as { n: number }).n, 0)).toBe(true);
  });

  it("never aliases the record: editing structuredContent leaves the record as it was", async () => {
    const record = { meta: { tags: ["a"] } };
    const tool = defineTool({
      name: "aliasing",
      description: "Returns a shared record.",
      input: z.object({}),
      output: z.object({ meta: z.object({ tags: z.array(z.string()) }) }),
      execute: () => record,
    });
    const result = await invokeTool(tool, {}, { ctx: ctx() });
    (result.structuredContent!.meta as { tags: string[] }).tags.push("b");
    expect(record).toStrictEqual({ meta: { tags: ["a"] } });
  });
});
