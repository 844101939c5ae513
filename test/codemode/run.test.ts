import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { createCodemode, defineTool, z, type Codemode } from "../../src/index.js";

const add = defineTool({
  name: "add",
  description: "Add two numbers",
  input: z.object({ a: z.number(), b: z.number() }),
  output: z.object({ sum: z.number() }),
  execute: async ({ a, b }) => ({ sum: a + b, internal: "dropped by the projection" }),
});

let active = 0;
let maxActive = 0;
const events: string[] = [];
const wait = {
  name: "wait",
  description: "Waits input.ms milliseconds, then answers with its label",
  execute: async (input: { ms?: number; label?: string }) => {
    active++;
    maxActive = Math.max(maxActive, active);
    events.push(`start ${input.label}`);
    await new Promise((resolve) => setTimeout(resolve, input.ms ?? 0));
    events.push(`end ${input.label}`);
    active--;
    return `done ${input.label}`;
  },
};

const aborted: string[] = [];
const hang = {
  name: "hang",
  description: "Never answers until cancelled",
  execute: (input: { label?: string }, ctx: { signal: AbortSignal }) =>
    new Promise<string>((_, reject) => {
      ctx.signal.addEventListener("abort", () => {
        aborted.push(String(input.label));
        reject(new Error("cancelled"));
      });
    }),
};

const fail = {
  name: "fail",
  description: "Always fails",
  execute: async (input: { long?: boolean }) => {
    throw new Error(input.long ? "x".repeat(5000) + " END" : "disk is full");
  },
};

let cm: Codemode;
beforeAll(async () => {
  cm = await createCodemode({ tools: [add, wait, hang, fail] });
});
afterAll(async () => {
  await cm.close();
});

function text(result: { content: { text: string }[] }): string {
  return result.content.map((block) => block.text).join("\n");
}

describe("run(): results", () => {
  it("resolves a tool to its structuredContent and keeps the return value", async () => {
    const result = await cm.run(`const r = await tools.add({ a: 1, b: 2 }); text(r); return { sum: r.sum, keys: Object.keys(r) }`);
    expect(result.structuredContent).toStrictEqual({
      status: "ok",
      value: { sum: 3, keys: ["sum"] },
      tool_calls: 1,
      duration_ms: result.structuredContent.duration_ms,
    });
    expect(typeof result.structuredContent.duration_ms).toBe("number");
    // The return value is not shown because the program printed; the model is told where it is.
    expect(result.content).toStrictEqual([
      { type: "text", text: '{"sum":3}\n\nWarnings:\n- the return value (24 bytes of JSON) is not shown because the program printed with text(); text() it to see it here' },
    ]);
    expect(Object.hasOwn(result, "isError")).toBe(false);
    expect(Object.hasOwn(result.structuredContent, "error")).toBe(false);
    expect(result.details.calls).toStrictEqual([{ id: 1, tool: "add", args: '{"a":1,"b":2}', status: "ok", durationMs: result.details.calls[0].durationMs }]);
    expect(JSON.parse(JSON.stringify(result))).toStrictEqual(result);
  });

  it("renders the return value into content when nothing was printed", async () => {
    const result = await cm.run(`return [1, "two"]`);
    expect(text(result)).toBe('[\n  1,\n  "two"\n]');
    expect(result.structuredContent.value).toStrictEqual([1, "two"]);
  });

  it("omits value when the program returns nothing and says there was no output", async () => {
    const result = await cm.run(`const x = 1;`);
    expect(Object.hasOwn(result.structuredContent, "value")).toBe(false);
    expect(text(result)).toBe("(no output)");
  });

  it("joins text() blocks with newlines and prints non-strings as JSON", async () => {
    const result = await cm.run(`text("a"); text({ b: 1 }); text([2]); text(null); text(3)`);
    expect(text(result)).toBe('a\n{"b":1}\n[2]\nnull\n3');
  });

  it("prints what JSON would show as {} readably: an Error, a Map, a Set, a forgotten await, a circular value", async () => {
    const result = await cm.run(
      [
        `try { null.x } catch (e) { text(e) }`,
        `text({ failed: new RangeError("too far"), list: new Map([["a", 1]]), tags: new Set(["x", "y"]), empty: {} })`,
        `text(tools.wait({ label: "x" }))`,
        `const a = {}; a.self = a; text(a)`,
        `text("count:", 2, { n: 1 })`,
        `const e = new Error("with code"); e.code = "E_X"; console.log("failed", e)`,
      ].join("\n"),
    );
    expect(text(result).split("\n\nWarnings:")[0]).toBe(
      [
        `{"name":"TypeError","message":"cannot read property 'x' of null"}`,
        `{"failed":{"name":"RangeError","message":"too far"},"list":[["a",1]],"tags":["x","y"],"empty":{}}`,
        "[a Promise: await it to get its value]",
        "[a value JSON cannot show: circular reference]",
        'count: 2 {"n":1}',
      ].join("\n"),
    );
    expect(result.details.console).toStrictEqual([{ level: "log", text: 'failed {"name":"Error","message":"with code","code":"E_X"}' }]);
  });

  it("names a promise used as its value and changes nothing for promises used as promises", async () => {
    const misuse = await cm.run(
      [`const r = tools.wait({ label: "x" });`, `const a = r.items, b = r["odd key"];`, `const s = JSON.stringify({ r });`, "text(typeof a, typeof b, s, String(r) === `${r}`)", "await r;"].join("\n"),
    );
    expect(text(misuse).split("\n\nWarnings:")[0]).toBe('undefined undefined {"r":{}} true');
    expect(misuse.details.warnings).toStrictEqual([
      "line 2: .items was read from a promise, not from the value it resolves to (it gave undefined): await the promise where it is made (const r = await tools.name(…)) or write (await promise).items",
      'line 2: ["odd key"] was read from a promise, not from the value it resolves to (it gave undefined): await the promise where it is made (const r = await tools.name(…)) or write (await promise)["odd key"]',
      "line 3: JSON.stringify met a promise, which it writes as {}: await the promise first and stringify its value",
      'line 4: a promise was turned into a string (it shows as "[a Promise: await it to get its value]"): await it first and use its value',
    ]);
    // Promises used as promises: awaited, chained, combined, duck-typed, inspected, extended.
    const fine = await cm.run(
      [
        `const p = tools.wait({ label: "y" });`,
        `const same = Object.getPrototypeOf(p) === Promise.prototype && p instanceof Promise && typeof p.then === "function" && "then" in p && !("items" in p);`,
        `const all = await Promise.all([p, Promise.resolve(2), (async () => 3)()]);`,
        `const chained = await p.then((v) => v).catch(() => 0).finally(() => {});`,
        `Promise.prototype.extra = 7; const own = Promise.resolve().extra;`,
        `text(same, all.length, chained === all[0], own, Object.prototype.toString.call(p), p.constructor === Promise, Object.keys(p).length)`,
      ].join("\n"),
    );
    expect(text(fine)).toBe("true 3 true 7 [object Promise] true 0");
    expect(fine.details.warnings).toStrictEqual([]);
    // What a program did to Promise.prototype is gone in the next run: the check is still there.
    await cm.run(`Object.setPrototypeOf(Promise.prototype, Object.prototype); delete Promise.prototype[Symbol.toPrimitive]`);
    const next = await cm.run(`const q = Promise.resolve(1); text(q.value, Promise.prototype.extra)`);
    expect(text(next).split("\n\nWarnings:")[0]).toBe("undefined undefined");
    expect(next.details.warnings).toStrictEqual([
      "line 1: .value was read from a promise, not from the value it resolves to (it gave undefined): await the promise where it is made (const r = await tools.name(…)) or write (await promise).value",
    ]);
  });

  it("keeps a returned value JSON empties of a Map, a Set or a promise as JSON wrote it, and says which key it was", async () => {
    const result = await cm.run(`return { n: 1, tags: new Set(["a"]), empty: {} }`);
    expect(result.structuredContent.value).toStrictEqual({ n: 1, tags: {}, empty: {} });
    expect(result.details.warnings).toStrictEqual(['the return value\'s "tags" is a Set, which JSON turns into {}: pass [...set]']);
    const plain = await cm.run(`return { empty: {}, list: [{}] }`);
    expect(plain.details.warnings).toStrictEqual([]);
  });

  it("reports a promise read in a loop once per place, and a few places per run", async () => {
    const result = await cm.run(`const p = Promise.resolve();\nfor (let i = 0; i < 1000; i++) p.x;\nfor (const k of ["a", "b", "c", "d", "e", "f", "g"]) p[k];`);
    expect(result.details.warnings).toStrictEqual([
      "line 2: .x was read from a promise, not from the value it resolves to (it gave undefined): await the promise where it is made (const r = await tools.name(…)) or write (await promise).x",
      ...["a", "b", "c", "d"].map(
        (k) =>
          `line 3: .${k} was read from a promise, not from the value it resolves to (it gave undefined): await the promise where it is made (const r = await tools.name(…)) or write (await promise).${k}`,
      ),
      "more promises were used as values; only the first 5 places are reported",
    ]);
  });

  it("says when setTimeout callbacks had not run by the program's end (not for cleared ones or a pending sleep)", async () => {
    const result = await cm.run(`setTimeout(() => text("later"), 200); const t = setTimeout(() => {}, 200); clearTimeout(t); sleep(500); text("now")`);
    expect(text(result).split("\n\nWarnings:")[0]).toBe("now");
    expect(result.details.warnings).toStrictEqual([
      "1 setTimeout callback had not run when the program ended and never will: to run it, await sleep(ms) (or a promise it resolves) before the program ends; clearTimeout what should not run",
    ]);
    const waited = await cm.run(`setTimeout(() => text("later"), 20); await sleep(60); text("now")`);
    expect(text(waited)).toBe("later\nnow");
    expect(waited.details.warnings).toStrictEqual([]);
  });

  it("captures console into details, not content", async () => {
    const result = await cm.run(`console.log("hello", { n: 1 }); console.error("bad"); text("visible")`);
    expect(text(result)).toBe("visible");
    expect(result.details.console).toStrictEqual([
      { level: "log", text: 'hello {"n":1}' },
      { level: "error", text: "bad" },
    ]);
  });

  it("resolves a tool without an output schema to the value it returned (a string stays a string)", async () => {
    const result = await cm.run(`return await tools.wait({ label: "x" })`);
    expect(result.structuredContent.value).toBe("done x");
  });

  it("reports a syntax error with the line and column of the user's code", async () => {
    const result = await cm.run(`const a = 1;\nconst b = ;`);
    expect(result.structuredContent.error).toStrictEqual({ kind: "syntax", message: "SyntaxError: unexpected token in expression: ';'", line: 2, column: 11 });
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(
      "Script failed (syntax): SyntaxError: unexpected token in expression: ';' (line 2, column 11)\n2 | const b = ;\n  |           ^\n\nNo tool calls were made before the failure.",
    );
  });

  it("reports an exception at its position, with line 1 columns unshifted by the wrapper", async () => {
    const first = await cm.run(`missing()`);
    expect(first.structuredContent.error).toStrictEqual({
      kind: "exception",
      message: "ReferenceError: 'missing' is not defined",
      line: 1,
      column: 1,
      hint: "missing is not defined: declare it (const missing = …) before this line; the sandbox's own globals are tools, text, console, store, load, sleep, setTimeout, clearTimeout and budget",
    });
    const third = await cm.run(`let a = 1;\nlet b = 2;\n  null.x;`);
    expect(third.structuredContent.error).toMatchObject({ kind: "exception", line: 3, column: 7 });
  });

  it("reports a thrown non-Error value at the throw that threw it, with the fix", async () => {
    const result = await cm.run(`throw "plain string"`);
    expect(result.structuredContent.error).toStrictEqual({
      kind: "exception",
      message: "plain string",
      line: 1,
      column: 1,
      hint: 'the program threw a value that is not an Error, which carries no line or stack: throw new Error("plain string") instead',
    });
    // Several throws: the one whose literal is the message; a rejection the same way.
    const which = await cm.run(`const n = 2;\nif (n === 1) throw "one";\nif (n === 2) throw "two";\nthrow "other";`);
    expect(which.structuredContent.error).toMatchObject({ message: "two", line: 3, column: 14 });
    const rejected = await cm.run(`const x = 1;\nawait Promise.reject(404);`);
    expect(rejected.structuredContent.error).toMatchObject({ message: "404", line: 2, column: 7 });
    // Two throws of values it cannot tell apart: the fix without a line, rather than a wrong one.
    const unsure = await cm.run(`const v = { a: 1 };\nif (!v) throw v;\nthrow { ...v };`);
    expect(unsure.structuredContent.error).toStrictEqual({
      kind: "exception",
      message: '{"a":1}',
      hint: "the program threw a value that is not an Error, which carries no line or stack: throw new Error(message) instead",
    });
  });

  it("ends a failed run's content with the receipt of the calls already made", async () => {
    const result = await cm.run(`await tools.add({ a: 1, b: 1 }); await tools.wait({ label: "w" }); text("before"); throw new Error("boom")`);
    expect(text(result)).toBe(
      'Script failed (exception): Error: boom (line 1, column 99)\n1 | await tools.add({ a: 1, b: 1 }); await tools.wait({ label: "w" }); text("before"); throw new Error("boom")\n  |' +
        " ".repeat(99) +
        "^\n\nbefore\n\nTool calls made before the failure (not undone):\n- tools.add: ok\n- tools.wait: ok",
    );
  });
});

describe("run(): tools from a program", () => {
  it("a tool added after runs is bound in the next run, and its approval policy stops that run (nothing a run works out once per tool set goes stale)", async () => {
    const local = await createCodemode({ tools: [add] });
    try {
      const before = await local.run(`return await tools.deploy({})`);
      expect(before.structuredContent.error?.message).toMatch(/^TypeError: tools\.deploy is not a tool/);
      let deployed = 0;
      const deploy = defineTool({
        name: "deploy",
        description: "deploys",
        approval: "required",
        input: z.object({}),
        output: z.object({ ok: z.boolean() }),
        execute: () => {
          deployed++;
          return { ok: true };
        },
      });
      local.addTools([deploy], "host");
      const result = await local.run(`return await tools.deploy({})`);
      expect(result.structuredContent.status).toBe("interrupted");
      expect(result.structuredContent.pending_approvals?.map((pending) => pending.tool)).toStrictEqual(["deploy"]);
      expect(deployed).toBe(0);
      expect((await local.run(`return await tools.add({ a: 1, b: 2 })`)).structuredContent.value).toStrictEqual({ sum: 3 });
    } finally {
      await local.close();
    }
  });

  it("runs parallel calls really in parallel", async () => {
    events.length = 0;
    maxActive = 0;
    const result = await cm.run(`return await Promise.all([1, 2, 3].map((i) => tools.wait({ ms: 100, label: String(i) })))`);
    expect(result.structuredContent.value).toStrictEqual(["done 1", "done 2", "done 3"]);
    expect(maxActive).toBe(3);
    // All three started before any ended.
    expect(events.slice(0, 3).every((event) => event.startsWith("start"))).toBe(true);
  });

  it("awaits 1,000 calls in a row", async () => {
    const result = await cm.run(`let s = 0; for (let i = 0; i < 1000; i++) s = (await tools.add({ a: s, b: 1 })).sum; return s`);
    expect(result.structuredContent).toMatchObject({ status: "ok", value: 1000, tool_calls: 1000 });
    expect(result.details.calls).toHaveLength(200);
    expect(result.details.callsOmitted).toBe(800);
  });

  it("holds calls beyond the in-flight limit in FIFO order", async () => {
    events.length = 0;
    maxActive = 0;
    const result = await cm.run(`await Promise.all([1,2,3,4,5,6].map((i) => tools.wait({ ms: 20, label: String(i) })))`, { limits: { maxInFlight: 2 } });
    expect(result.structuredContent.status).toBe("ok");
    expect(maxActive).toBe(2);
    expect(events.filter((e) => e.startsWith("start"))).toStrictEqual(["start 1", "start 2", "start 3", "start 4", "start 5", "start 6"]);
  });

  it("rejects a failed tool with name, code and message, catchable by the program", async () => {
    const result = await cm.run(`try { await tools.fail({}) } catch (e) { return { name: e.name, code: e.code, message: e.message, isError: e instanceof Error } }`);
    expect(result.structuredContent.value).toStrictEqual({ name: "ToolError", code: "tool_failed", message: "disk is full", isError: true });
  });

  it("keeps the last 2,000 characters of a long failure message", async () => {
    const result = await cm.run(`try { await tools.fail({ long: true }) } catch (e) { return e.message }`);
    const message = result.structuredContent.value as string;
    expect(message.length).toBe(2000);
    expect(message.endsWith(" END")).toBe(true);
  });

  it("rejects invalid input with a message naming the field", async () => {
    const result = await cm.run(`try { await tools.add({ a: "1", b: 2 }) } catch (e) { return { code: e.code, message: e.message } }`);
    expect(result.structuredContent.value).toMatchObject({ code: "tool_invalid_input" });
    expect((result.structuredContent.value as { message: string }).message).toContain('"a"');
  });

  it("throws a TypeError naming the closest tools for an unknown tool", async () => {
    const result = await cm.run(`await tools.ad({ a: 1 })`);
    expect(result.structuredContent.error?.kind).toBe("exception");
    expect(result.structuredContent.error?.message).toMatch(/^TypeError: tools\.ad is not a tool\. Did you mean tools\.add/);
  });

  it("treats `tools` as never thenable and read-only", async () => {
    const result = await cm.run(
      `"use strict"; const t = await tools; let threw = false; try { tools.add = 1 } catch { threw = true } return [t === tools, typeof tools.then, threw, typeof tools.add]`,
    );
    expect(result.structuredContent.value).toStrictEqual([true, "undefined", true, "function"]);
  });

  it("cancels calls still pending at the end: their signal fires and the run reports them", async () => {
    aborted.length = 0;
    const result = await cm.run(`tools.hang({ label: "left" }); text("done")`);
    expect(result.structuredContent.status).toBe("ok");
    expect(aborted).toStrictEqual(["left"]);
    expect(result.details.calls[0]).toMatchObject({ tool: "hang", status: "cancelled" });
    const warning = 'tools.hang({"label":"left"}) at line 1 was still pending and was cancelled — missing await? Write await tools.hang(…).';
    expect(result.details.warnings).toStrictEqual([warning]);
    // What the model must act on is in content too.
    expect(text(result)).toBe(`done\n\nWarnings:\n- ${warning}`);
    // Kept in a variable and never awaited: the same warning, with the call's line.
    const kept = await cm.run(`text("start");\nconst p = tools.hang({ label: "kept" });\ntext("done")`);
    expect(kept.details.warnings).toStrictEqual(['tools.hang({"label":"kept"}) at line 2 was still pending and was cancelled — missing await? Write await tools.hang(…).']);
    // Kept and awaited later: nothing to say.
    const awaited = await cm.run(`const p = tools.wait({ label: "x" });\ntext("between");\nawait p`);
    expect(awaited.details.warnings).toStrictEqual([]);
  });
});

describe("run(): a call's signal", () => {
  it("is one AbortSignal however it is read, aborted with the run's reason when the tool first reads it after the run ended, and live while the call runs", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const seen: Array<{ label: string; aborted: boolean; reason?: string; same: boolean; isSignal: boolean }> = [];
    const late = {
      name: "late",
      description: "Reads its signal only when the test lets it",
      execute: async (input: { label: string; wait?: boolean }, ctx: { signal: AbortSignal }) => {
        if (input.wait) await gate;
        const copy = { ...ctx };
        seen.push({
          label: input.label,
          aborted: ctx.signal.aborted,
          reason: (ctx.signal.reason as Error | undefined)?.message,
          same: copy.signal === ctx.signal,
          isSignal: ctx.signal instanceof AbortSignal,
        });
        return "read";
      },
    };
    const local = await createCodemode({ tools: [late] });
    try {
      const result = await local.run(`await tools.late({ label: "now" }); tools.late({ label: "later", wait: true }); text("done")`);
      expect(result.details.calls.map((call) => call.status)).toStrictEqual(["ok", "cancelled"]);
      release();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(seen).toStrictEqual([
        { label: "now", aborted: false, reason: undefined, same: true, isSignal: true },
        { label: "later", aborted: true, reason: "the program ended before this call finished", same: true, isSignal: true },
      ]);
    } finally {
      await local.close();
    }
  });
});

describe("run(): store, load and timers", () => {
  it("keeps values between runs of one session and never across sessions", async () => {
    await cm.run(`store("k", { n: 1 })`, { session: "alpha" });
    const same = await cm.run(`return load("k")`, { session: "alpha" });
    const other = await cm.run(`return load("k") === undefined`, { session: "beta" });
    expect(same.structuredContent.value).toStrictEqual({ n: 1 });
    expect(other.structuredContent.value).toBe(true);
    await cm.run(`store("k", undefined)`, { session: "alpha" });
    expect((await cm.run(`return load("k") === undefined`, { session: "alpha" })).structuredContent.value).toBe(true);
  });

  it("refuses values over 256 KiB and sessions over 1 MiB with a RangeError", async () => {
    const big = await cm.run(`try { store("big", "x".repeat(300 * 1024)) } catch (e) { return e.name + ": " + e.message }`, { session: "caps" });
    expect(big.structuredContent.value).toMatch(/^RangeError: store\("big"\): the value is 300\.0 KiB of JSON; one stored value is limited to 256\.0 KiB$/);
    const total = await cm.run(`for (let i = 0; i < 4; i++) store("k" + i, "x".repeat(250 * 1024)); try { store("k4", "x".repeat(250 * 1024)) } catch (e) { return e.name }`, { session: "caps" });
    expect(total.structuredContent.value).toBe("RangeError");
    expect((await cm.run(`return typeof load("k0")`, { session: "caps" })).structuredContent.value).toBe("string");
  });

  it("sleeps, fires timers in order and cancels cleared ones", async () => {
    const result = await cm.run(
      `const seen = []; setTimeout(() => seen.push("b"), 20); setTimeout(() => seen.push("a"), 5); const id = setTimeout(() => seen.push("never"), 10); clearTimeout(id); await sleep(40); return seen`,
    );
    expect(result.structuredContent.value).toStrictEqual(["a", "b"]);
  });

  it("exposes the deliberate absences", async () => {
    const result = await cm.run(`return [typeof require, typeof process, typeof fetch, typeof WebAssembly, typeof __codemode_host, typeof __codemode_config]`);
    expect(result.structuredContent.value).toStrictEqual(["undefined", "undefined", "undefined", "undefined", "undefined", "undefined"]);
  });
});

describe("run(): output budget", () => {
  it("keeps head and tail under the budget and spills the full text to a file", async () => {
    const result = await cm.run(`for (let i = 0; i < 5000; i++) text("line " + i)`, { limits: { outputBudget: 2000 } });
    const out = text(result);
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(2000);
    expect(out.startsWith("line 0\nline 1\n")).toBe(true);
    expect(out.endsWith("line 4999")).toBe(true);
    expect(out).toMatch(/\[… \d+ of \d+ bytes of output cut; full output: .+\.txt …\]/);
    const full = readFileSync(result.details.fullOutputPath!, "utf8");
    expect(full).toBe(Array.from({ length: 5000 }, (_, i) => `line ${i}`).join("\n"));
  });

  it("keeps a failure's header and receipt inside the budget", async () => {
    const result = await cm.run(`await tools.add({ a: 1, b: 2 }); text("y".repeat(10000)); throw new Error("late")`, { limits: { outputBudget: 1000 } });
    const out = text(result);
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(1000);
    expect(out.startsWith("Script failed (exception): Error: late")).toBe(true);
    expect(out.endsWith("Tool calls made before the failure (not undone):\n- tools.add: ok")).toBe(true);
  });
});

describe("hooks apply to a program's calls", () => {
  it("a preCall denial rejects in the program with tool_denied, and postCall sees the full record", async () => {
    const seen: unknown[] = [];
    const hooked = await createCodemode({
      tools: [add],
      hooks: {
        preCall: (event) => (event.input.a === 13 ? { deny: "unlucky numbers are not allowed" } : undefined),
        postCall: (event) => {
          seen.push(event.record);
        },
      },
    });
    try {
      const result = await hooked.run(`const ok = await tools.add({ a: 1, b: 1 }); try { await tools.add({ a: 13, b: 1 }) } catch (e) { return [ok, e.code, e.message] }`);
      expect(result.structuredContent.value).toStrictEqual([{ sum: 2 }, "tool_denied", expect.stringContaining("unlucky numbers are not allowed")]);
      expect(seen).toStrictEqual([{ sum: 2, internal: "dropped by the projection" }]);
    } finally {
      await hooked.close();
    }
  });
});

describe("API misuse rejects; script outcomes resolve", () => {
  it("rejects bad options naming the field", async () => {
    await expect(cm.run(123 as unknown as string)).rejects.toThrow("code must be a string of JavaScript, got the number 123");
    await expect(cm.run("1", { timeoutMs: 0 })).rejects.toThrow("options.timeoutMs must be an integer from 1 to 600000, got the number 0");
    await expect(cm.run("1", { timeoutMs: 700_000 })).rejects.toThrow(RangeError);
    await expect(cm.run("1", { session: "" })).rejects.toThrow(/options\.session must be/);
    await expect(cm.run("1", { bogus: 1 } as never)).rejects.toThrow("options.bogus is not a run option");
    await expect(cm.run("1", { limits: { memoryBytes: "lots" } } as never)).rejects.toThrow("options.limits.memoryBytes must be an integer");
    await expect(createCodemode({ limits: { nope: 1 } } as never)).rejects.toThrow("options.limits.nope is not a limit");
    await expect(createCodemode({ tools: [{ name: "x" }] })).rejects.toThrow(/options\.tools\[0\]/);
    await expect(createCodemode({ hooks: { beforeCall: () => undefined } } as never)).rejects.toThrow("options.hooks.beforeCall is not a hook; known hooks: approve, preCall, postCall, postError");
    await expect(createCodemode({ hooks: { preCall: 1 } } as never)).rejects.toThrow("options.hooks.preCall must be a function, got the number 1");
    await expect(createCodemode({ development: "yes" } as never)).rejects.toThrow('options.development must be a boolean, got the string "yes"');
    await expect(createCodemode({ workers: { max: 0 } })).rejects.toThrow("options.workers.max must be an integer from 1 to 256, got the number 0");
  });

  it("rejects runs on a closed instance", async () => {
    const other = await createCodemode();
    await other.close();
    await expect(other.run("1")).rejects.toThrow("this codemode instance is closed");
  });
});
