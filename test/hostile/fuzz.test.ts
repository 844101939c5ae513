// Property-based fuzzing of the sandbox wall. Random JSON values (with NULs, lone surrogates,
// "__proto__" keys, deep nesting) and random non-JSON guest expressions cross into tools, out of
// tools, through store/load, text() and return values. Each crossing either round-trips exactly
// (JSON semantics, as V8 computes them for the same expression) or fails with a clear error; the
// host never throws, never hangs, and its prototypes stay untouched.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, defineTool, z, type Codemode, type RunResult } from "../../src/index.js";
import { expectPrototypesUnchanged, hostFaults } from "./harness.js";

const RUNS = 300;
const TIMEOUT_MS = 2000;

/** Characters that have broken bridges before, mixed with any UTF-16 code unit. */
const unit = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom("\u0000", "\ud800", "\udfff", "\u2028", "\ufeff", '"', "\\", "\n", "\u{1F600}", "__proto__") },
  { weight: 4, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
);
const key = fc.oneof(fc.string({ unit, maxLength: 6 }), fc.constantFrom("__proto__", "constructor", "prototype", "toJSON", "then", "result_view_x"));
const json: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.string({ unit, maxLength: 20 }),
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(key, tie("value"), { maxKeys: 5 }),
  ),
})).value;

/** JSON as the host hands it on: "__proto__" keys are dropped from what a program sends. */
function dropProto(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (k, v) => (k === "__proto__" ? undefined : v));
}

/** A JS source literal that evaluates to `value` in any engine. */
function literal(value: unknown): string {
  return `JSON.parse(${JSON.stringify(JSON.stringify(value))})`;
}

/** Guest expressions that are not all JSON: BigInt, symbols, functions, cycles, proxies, getters… */
const leaf = fc.oneof(
  json.map(literal),
  fc.constantFrom(
    "1n",
    'Symbol("s")',
    "() => 1",
    "undefined",
    "NaN",
    "-0",
    "-Infinity",
    "new Date(0)",
    "new Map([[1, 2]])",
    "new Set([1])",
    "/re/g",
    "new Uint8Array([1, 2, 300])",
    "(() => { const a = { k: 1 }; a.self = a; return a })()",
    "new Proxy({ a: 1 }, {})",
    'new Proxy({}, { ownKeys() { throw new RangeError("trap") } })',
    '({ get x() { throw new Error("getter") } })',
    '({ toJSON() { return "j" } })',
    "({ toJSON() { return undefined } })",
    "({ toJSON: () => 1n })",
    "Object.create(null)",
    "[1, , 3]",
    "Object.assign(Object.create({ inherited: 1 }), { own: 2 })",
    'new Error("e")',
    "new Boolean(false)",
    'new String("s")',
    "Object(1n)",
  ),
);
const expression: fc.Arbitrary<string> = fc.letrec((tie) => ({
  expr: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.array(tie("expr"), { maxLength: 4 }).map((items) => `[${items.join(", ")}]`),
    fc.array(fc.tuple(key, tie("expr")), { maxLength: 4 }).map((entries) => `({ ${entries.map(([k, v]) => `[${JSON.stringify(k)}]: ${v}`).join(", ")} })`),
  ),
})).expr;

/** What V8 makes of JSON.stringify on the same expression: the oracle. */
function v8Json(expr: string): { json?: string; threw?: boolean; thenable?: boolean; emptied?: string } {
  const value = new Function(`return (${expr})`)();
  if (value !== null && typeof value === "object" && typeof (value as { then?: unknown }).then === "function") return { thenable: true };
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    return { threw: true };
  }
  return json?.includes("{}") ? { json, ...emptiedBy(value) } : { json };
}

/** The key and kind of the first Map, Set or promise JSON meets in `value` (it writes each as {}), in JSON's own order. */
function emptiedBy(value: unknown): { emptied?: string } {
  let found: string | undefined;
  try {
    JSON.stringify(value, function (this: Record<string, unknown>, key, item) {
      if (found === undefined && item instanceof Map) found = `${JSON.stringify(key)} is a Map`;
      if (found === undefined && item instanceof Set) found = `${JSON.stringify(key)} is a Set`;
      if (found === undefined && item instanceof Promise) found = `${JSON.stringify(key)} is a promise`;
      return found === undefined ? item : undefined;
    });
  } catch {
    // As in the sandbox: a value that converted once and throws now is not named.
  }
  return found === undefined ? {} : { emptied: found };
}

let nextValue: unknown;
const tools = [
  defineTool({ name: "echo", description: "Returns its input.", input: z.object({}).passthrough(), output: z.object({}).passthrough(), execute: async (input) => input }),
  defineTool({ name: "give", description: "Returns the next fuzzed value.", input: z.object({}), output: z.object({}).passthrough(), execute: async () => ({ v: nextValue }) }),
];

describe("fuzzing the crossing", () => {
  let cm: Codemode;
  let sessions = 0;
  beforeAll(async () => {
    cm = await createCodemode({ tools, limits: { timeoutMs: TIMEOUT_MS } });
  });
  afterAll(async () => {
    await cm?.close();
    expect(hostFaults).toEqual([]);
  });

  async function run(code: string, session?: string): Promise<RunResult> {
    const started = performance.now();
    const result = await cm.run(code, session ? { session } : {});
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 1000);
    return result;
  }

  it("JSON values round-trip into a tool and back ('__proto__' keys dropped on the way in)", async () => {
    await fc.assert(
      fc.asyncProperty(json, async (value) => {
        const result = await run(`return await tools.echo({ v: ${literal(value)} })`);
        expect(result.structuredContent.status, JSON.stringify(result.structuredContent)).toBe("ok");
        expect(JSON.stringify(result.structuredContent.value)).toBe(JSON.stringify(dropProto({ v: value })));
      }),
      { numRuns: RUNS },
    );
    expectPrototypesUnchanged();
  });

  it("JSON values a tool returns reach the program exactly, without touching its prototypes", async () => {
    await fc.assert(
      fc.asyncProperty(json, async (value) => {
        nextValue = value;
        const result = await run(`const r = await tools.give({}); return [r, typeof ({}).polluted, Object.getPrototypeOf(r) === Object.prototype]`);
        expect(result.structuredContent.status, JSON.stringify(result.structuredContent)).toBe("ok");
        const [received, polluted, proto] = result.structuredContent.value as [unknown, string, boolean];
        expect(JSON.stringify(received)).toBe(JSON.stringify({ v: value }));
        expect([polluted, proto]).toEqual(["undefined", true]);
      }),
      { numRuns: RUNS },
    );
    expectPrototypesUnchanged();
  });

  it("any host value a tool returns crosses as its JSON or rejects the call with a message, never crashing the host", async () => {
    const anything = fc.anything({
      withBigInt: true,
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withObjectString: true,
      withSparseArray: true,
      withTypedArray: true,
      stringUnit: unit,
      maxDepth: 4,
    });
    await fc.assert(
      fc.asyncProperty(anything, async (value) => {
        nextValue = value;
        let oracle: string | undefined;
        let threw = false;
        try {
          oracle = JSON.stringify({ v: value });
        } catch {
          threw = true;
        }
        const result = await run(`try { return { ok: await tools.give({}) } } catch (e) { return { name: e.name, message: e.message } }`);
        expect(result.structuredContent.status, JSON.stringify(result.structuredContent)).toBe("ok");
        const got = result.structuredContent.value as { ok?: unknown; name?: string; message?: string };
        if (threw) {
          expect(got.ok, JSON.stringify(got)).toBeUndefined();
          expect(got.message).toMatch(/\S/);
        } else {
          expect(JSON.stringify(got.ok), JSON.stringify(got)).toBe(oracle);
        }
      }),
      { numRuns: RUNS },
    );
    expectPrototypesUnchanged();
  });

  it("store/load round-trips JSON values within a run and into the next run of the session", async () => {
    await fc.assert(
      fc.asyncProperty(
        json,
        key.filter((k) => k !== ""),
        async (value, name) => {
          const session = `fuzz-store-${sessions++}`;
          const stored = await run(`store(${JSON.stringify(name)}, ${literal(value)}); return load(${JSON.stringify(name)})`, session);
          expect(stored.structuredContent.status, JSON.stringify(stored.structuredContent)).toBe("ok");
          expect(JSON.stringify(stored.structuredContent.value)).toBe(JSON.stringify(value));
          const loaded = await run(`return [load(${JSON.stringify(name)})]`, session);
          expect(JSON.stringify(loaded.structuredContent.value)).toBe(JSON.stringify([value]));
        },
      ),
      { numRuns: RUNS / 2 },
    );
  });

  it("text() shows strings as they are and other JSON values as their JSON", async () => {
    await fc.assert(
      fc.asyncProperty(json, async (value) => {
        const result = await run(`text(${literal(value)}); text("|end")`);
        // Each text() call is its own line of output.
        // A model only ever reads well-formed text: lone surrogates arrive as U+FFFD.
        const expected = ((typeof value === "string" ? value : JSON.stringify(value)) + "\n|end").toWellFormed();
        if (Buffer.byteLength(expected) < 30_000) expect(result.content[0].text).toBe(expected);
      }),
      { numRuns: RUNS },
    );
  });

  it("any guest value sent to a tool either crosses as V8's JSON of it or is refused with a clear TypeError", async () => {
    await fc.assert(
      fc.asyncProperty(expression, async (expr) => {
        const oracle = v8Json(`{ v: ${expr} }`);
        const result = await run(`try { return { ok: await tools.echo({ v: ${expr} }) } } catch (e) { return { name: e.name, message: e.message } }`);
        expect(result.structuredContent.status, JSON.stringify(result.structuredContent)).toBe("ok");
        const value = result.structuredContent.value as { ok?: unknown; name?: string; message?: string };
        if (oracle.threw) {
          expect(value.name, JSON.stringify(value)).toBe("TypeError");
          expect(value.message).toMatch(/^tools\.echo\(\): the value must be JSON-serialisable \(.+\)$/);
        } else if (oracle.emptied) {
          // What JSON would empty to {} is refused, naming it, rather than arriving as {}.
          expect(value.name, JSON.stringify(value)).toBe("TypeError");
          expect(value.message).toContain(`tools.echo(): the value's ${oracle.emptied}, which JSON turns into {}: `);
        } else {
          expect(JSON.stringify(value.ok)).toBe(JSON.stringify(dropProto(JSON.parse(oracle.json!))));
        }
      }),
      { numRuns: RUNS },
    );
    expectPrototypesUnchanged();
  });

  it("any returned value is kept as V8's JSON of it, or dropped with a warning saying why", async () => {
    await fc.assert(
      fc.asyncProperty(expression, async (expr) => {
        const oracle = v8Json(expr);
        const result = await run(`return ${expr}`);
        if (oracle.thenable) {
          // Returning a thenable adopts it, as in any async function; this one never settles.
          expect(result.structuredContent.error).toEqual({
            kind: "timeout",
            message: "the program is waiting for a promise that nothing can settle (no tool call, timer or job is pending)",
            hint: "an await is waiting on a promise that nothing resolves (a new Promise whose resolve is never called?): resolve it, or await the tool call itself",
          });
          return;
        }
        expect(result.structuredContent.status, JSON.stringify(result.structuredContent)).toBe("ok");
        if (oracle.threw) {
          expect(result.structuredContent).not.toHaveProperty("value");
          expect(result.details.warnings.join("\n")).toMatch(/the return value could not be serialised: .+/);
        } else if (oracle.json === undefined) {
          expect(result.structuredContent).not.toHaveProperty("value");
        } else {
          expect(JSON.stringify(result.structuredContent.value)).toBe(oracle.json);
        }
      }),
      { numRuns: RUNS },
    );
    expectPrototypesUnchanged();
  });
});
