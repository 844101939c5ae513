// The hostile programs, each with the outcome it must have. A program either ends with a pinned
// status/kind/message, or returns a pinned value; `check` adds facts about the host side (what a
// tool received, whether a cancelled tool saw its signal). Every program is also run through the
// common checks of run-programs.ts: no host data in the result, host prototypes unchanged, the
// next benign run succeeds, wall time within the deadline + 1 s.
import { expect } from "vitest";
import type { RunResult } from "../../src/index.js";
import { log } from "./harness.js";

export type Category = "escape" | "values-in" | "values-out" | "exhaustion" | "outlive" | "tamper";

export interface Expected {
  status: "ok" | "error";
  kind?: string;
  /** Fragments the error message must contain. */
  message?: (string | RegExp)[];
  /** The program's return value (compared with toEqual). */
  value?: unknown;
  /** Fragments the model-visible text must contain. */
  text?: (string | RegExp)[];
  /** Fragments one of the warnings must contain. */
  warning?: (string | RegExp)[];
}

export interface HostileProgram {
  name: string;
  category: Category;
  code: string;
  timeoutMs?: number;
  limits?: Record<string, number>;
  /** Abort the run through its AbortSignal after this many milliseconds. */
  abortAfterMs?: number;
  expect: Expected;
  /** Host-side facts, checked after the run (and after a short settle pause when `settleMs`). */
  check?: (result: RunResult, before: { inputs: number; counter: number; aborted: number }) => void;
  settleMs?: number;
  /** A follow-up program in the same session and the value it must return. */
  after?: { code: string; value: unknown };
}

const caught = (body: string) => `try { ${body} } catch (e) { return e.name + ": " + e.message }`;
const lastInput = () => log.inputs[log.inputs.length - 1];

export const PROGRAMS: HostileProgram[] = [
  // ---- escape attempts ---------------------------------------------------------------------------
  {
    name: "constructor chain from this",
    category: "escape",
    code: `return this.constructor.constructor("return [typeof process, typeof require, typeof module, typeof Buffer]")()`,
    expect: { status: "ok", value: ["undefined", "undefined", "undefined", "undefined"] },
  },
  {
    name: "constructor chain from a function's this and from an Error",
    category: "escape",
    code: `const F = (function () { return this })().constructor.constructor; const G = new Error().constructor.constructor;
return [F("return typeof process")(), G("return typeof globalThis.process")(), F === G]`,
    expect: { status: "ok", value: ["undefined", "undefined", true] },
  },
  {
    name: "AsyncFunction and GeneratorFunction constructors",
    category: "escape",
    code: `const AF = (async () => {}).constructor; const GF = (function* () {}).constructor;
return [await AF("return typeof require")(), GF("yield typeof process")().next().value]`,
    expect: { status: "ok", value: ["undefined", "undefined"] },
  },
  {
    name: "indirect eval for QuickJS's own std/os modules",
    category: "escape",
    code: `return (0, eval)("[typeof std, typeof os, typeof scriptArgs, typeof print, typeof bjson]")`,
    expect: { status: "ok", value: ["undefined", "undefined", "undefined", "undefined", "undefined"] },
  },
  {
    name: "dynamic import of node and QuickJS modules",
    category: "escape",
    code: `const out = []; for (const m of ["fs", "node:child_process", "std", "os", "data:text/javascript,export default 1", "./program.js"]) {
  try { await import(m); out.push("loaded " + m) } catch (e) { out.push(e.name) } } return out`,
    expect: { status: "ok", value: ["ReferenceError", "ReferenceError", "ReferenceError", "ReferenceError", "ReferenceError", "ReferenceError"] },
  },
  {
    name: "static import is a syntax error, not a load",
    category: "escape",
    code: `import fs from "fs"; return fs`,
    expect: { status: "error", kind: "syntax", message: ["import is not available"], text: ["drop the import"] },
  },
  {
    name: "reaching the bridge by name",
    category: "escape",
    code: `return [typeof __codemode_host, typeof __codemode_config, typeof globalThis.__codemode_host, Object.getOwnPropertyNames(globalThis).filter((n) => /codemode|host|bridge/i.test(n))]`,
    expect: { status: "ok", value: ["undefined", "undefined", "undefined", []] },
  },
  {
    name: "globalThis enumeration shows only the guest API beyond the language",
    category: "escape",
    code: `return Object.getOwnPropertyNames(globalThis).filter((n) => !/^[A-Z]/.test(n)).sort()`,
    expect: {
      status: "ok",
      value: [
        "budget",
        "clearTimeout",
        "console",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "eval",
        "globalThis",
        "isFinite",
        "isNaN",
        "load",
        "parseFloat",
        "parseInt",
        "setTimeout",
        "sleep",
        "store",
        "text",
        "tools",
        "undefined",
        "unescape",
      ],
    },
  },
  {
    name: "no capability constructor is reachable: WebAssembly, Atomics, SharedArrayBuffer, fetch",
    category: "escape",
    code: `return [typeof WebAssembly, typeof Atomics, typeof fetch, typeof XMLHttpRequest, typeof Worker, typeof queueMicrotask === "function" ? "qm" : "none"]`,
    expect: { status: "ok", value: ["undefined", "undefined", "undefined", "undefined", "undefined", "none"] },
  },
  {
    name: "walking every object reachable from globalThis finds no host function",
    category: "escape",
    code: `const seen = new Set(); const queue = [globalThis]; const found = [];
while (queue.length) { const o = queue.shift(); if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue; seen.add(o);
  for (const k of Reflect.ownKeys(o)) { let v; try { const d = Reflect.getOwnPropertyDescriptor(o, k); v = d && ("value" in d ? d.value : d.get) } catch (e) { continue }
    if (typeof v === "function" && /host|codemode|require|process|bridge/i.test(String(v.name))) found.push(String(k)); queue.push(v) }
  try { queue.push(Reflect.getPrototypeOf(o)) } catch (e) {} }
return [found, seen.size > 100]`,
    expect: { status: "ok", value: [[], true] },
  },
  {
    name: "Symbol and Reflect tricks on the tools namespace",
    category: "escape",
    code: `return [Reflect.getPrototypeOf(tools), Reflect.defineProperty(tools, "echo", { value: 1 }), Reflect.set(tools, "echo", 1), Reflect.deleteProperty(tools, "echo"),
  Reflect.setPrototypeOf(tools, {}), typeof tools.echo, tools[Symbol.toPrimitive], tools[Symbol.iterator], tools.then, (await tools) === tools, Object.isFrozen(console)]`,
    expect: { status: "ok", value: [null, false, false, false, false, "function", null, null, null, true, true] },
  },
  {
    name: "Error.prepareStackTrace and captureStackTrace do nothing",
    category: "escape",
    code: `Error.prepareStackTrace = (e, frames) => frames.map((f) => f.getThis()); Error.stackTraceLimit = Infinity;
let s; try { null.x } catch (e) { s = e.stack } return [typeof s, typeof Error.captureStackTrace, /program\\.js:2/.test(s)]`,
    expect: { status: "ok", value: ["string", "undefined", true] },
  },
  {
    name: "stack inspection from inside a tool rejection and a timer callback",
    category: "escape",
    code: `let inTimer; setTimeout(function f() { inTimer = new Error("t").stack }, 0); await sleep(5);
let fromTool; try { await tools.fail({ kind: "x" }) } catch (e) { fromTool = e.stack }
return [inTimer, fromTool].join("\\n")`,
    expect: { status: "ok" },
  },
  {
    name: "caller/callee through a prelude-invoked callback",
    category: "escape",
    code: `let seen; setTimeout(function f() { try { seen = String(f.caller) } catch (e) { seen = e.name } }, 0); await sleep(5); return seen`,
    expect: { status: "ok", value: "undefined" },
  },
  {
    // QuickJS lets defineProperty replace even a non-configurable global; the prelude keeps its own
    // references, so this only changes what the program itself sees (and the next run is clean).
    name: "redefining the guest API globals changes only the program's own view",
    category: "escape",
    code: `const realText = text; const out = [];
for (const name of ["text", "tools", "store", "load", "sleep", "console"]) { try { Object.defineProperty(globalThis, name, { value: () => "fake" }); out.push("redefined") } catch (e) { out.push(e.name) } }
text("swallowed"); realText("shown"); return [out, tools(), typeof tools.echo]`,
    expect: { status: "ok", value: [["redefined", "redefined", "redefined", "redefined", "redefined", "redefined"], "fake", "undefined"], text: ["shown"] },
    // The note after the output says the return value is not shown.
    check: (result) => expect(result.content[0].text.split("\n\n")[0]).toBe("shown"),
  },
  {
    name: "a Proxy as the global prototype sees nothing of the prelude",
    category: "escape",
    code: `const seen = []; Object.setPrototypeOf(globalThis, new Proxy({}, { get(t, k) { seen.push(String(k)); return undefined }, has(t, k) { seen.push(String(k)); return false } }));
text("x"); console.log("y"); await sleep(1); await tools.echo({}); return seen.filter((k) => /host|codemode|bridge/i.test(k))`,
    expect: { status: "ok", value: [], text: ["x"] },
  },

  // ---- attacks through values passed to tools ----------------------------------------------------
  {
    name: "__proto__ key from JSON.parse is dropped before the tool",
    category: "values-in",
    code: `return await tools.echo(JSON.parse('{"__proto__": {"polluted": "yes"}, "a": {"__proto__": {"isAdmin": true}}}'))`,
    expect: { status: "ok", value: { a: {} } },
    check: () => {
      const input = lastInput() as Record<string, unknown>;
      expect(Object.hasOwn(input, "__proto__")).toBe(false);
      expect(Object.getPrototypeOf(input)).toBe(Object.prototype);
      expect(Object.hasOwn(input.a as object, "__proto__")).toBe(false);
    },
  },
  {
    name: "__proto__ defined as an own enumerable property",
    category: "values-in",
    code: `const o = {}; Object.defineProperty(o, "__proto__", { value: { polluted: "yes" }, enumerable: true }); return await tools.echo({ o, list: [o] })`,
    expect: { status: "ok", value: { o: {}, list: [{}] } },
  },
  {
    name: "constructor.prototype keys are plain data",
    category: "values-in",
    code: `return await tools.echo({ constructor: { prototype: { isAdmin: true } }, hasOwnProperty: 1, toString: "x", valueOf: null })`,
    expect: { status: "ok", value: { constructor: { prototype: { isAdmin: true } }, hasOwnProperty: 1, toString: "x", valueOf: null } },
  },
  {
    name: "a getter that throws",
    category: "values-in",
    code: `return await tools.echo({ get x() { throw new Error("getter!") } })`,
    expect: { status: "error", kind: "exception", message: ["TypeError: tools.echo(): the value must be JSON-serialisable (getter!)"] },
    check: (_r, before) => expect(log.inputs.length).toBe(before.inputs),
  },
  {
    name: "toJSON swaps the value",
    category: "values-in",
    code: `return await tools.echo({ a: { toJSON() { return { swapped: true } } }, b: { toJSON: 1 } })`,
    expect: { status: "ok", value: { a: { swapped: true }, b: { toJSON: 1 } } },
  },
  {
    name: "toJSON that never returns",
    category: "values-in",
    code: `return await tools.echo({ toJSON() { for (;;) {} } })`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout", message: ["300 ms deadline"] },
    check: (_r, before) => expect(log.inputs.length).toBe(before.inputs),
  },
  {
    name: "a Proxy whose traps throw",
    category: "values-in",
    code: `return await tools.echo(new Proxy({}, { ownKeys() { throw new Error("boom") } }))`,
    expect: { status: "error", kind: "exception", message: ["the value must be JSON-serialisable (boom)"] },
  },
  {
    name: "a Proxy that lies about its keys",
    category: "values-in",
    code: `return await tools.echo(new Proxy({}, { ownKeys: () => ["a", "b"], getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }), get: (t, k) => k === "toJSON" ? undefined : "v-" + String(k) }))`,
    expect: { status: "ok", value: { a: "v-a", b: "v-b" } },
  },
  {
    name: "a cyclic object",
    category: "values-in",
    code: `const a = { x: 1 }; a.self = a; return await tools.echo(a)`,
    expect: { status: "error", kind: "exception", message: ["TypeError: tools.echo(): the value must be JSON-serialisable (circular reference)"] },
  },
  {
    name: "BigInt, function, symbol and undefined arguments",
    category: "values-in",
    code: `const out = []; for (const v of [{ n: 1n }, () => 1, Symbol("s")]) { try { await tools.echo(v); out.push("sent") } catch (e) { out.push(e.name + ": " + e.message) } }
out.push(await tools.echo(undefined)); return out`,
    expect: {
      status: "ok",
      value: [
        "TypeError: tools.echo(): the value must be JSON-serialisable (Do not know how to serialize a BigInt)",
        "TypeError: tools.echo(): the value must be a JSON value, got function",
        "TypeError: tools.echo(): the value must be a JSON value, got symbol",
        {},
      ],
    },
  },
  {
    name: "values JSON drops or rewrites",
    category: "values-in",
    code: `return await tools.echo({ f() {}, [Symbol("k")]: 1, u: undefined, n: NaN, i: -Infinity, z: -0, d: new Date(0), t: new Uint8Array([7, 8]), sparse: [1, , 3], re: /x/g })`,
    expect: { status: "ok", value: { n: null, i: null, z: 0, d: "1970-01-01T00:00:00.000Z", t: { 0: 7, 1: 8 }, sparse: [1, null, 3], re: {} } },
  },
  {
    name: "lone surrogates and NUL survive the crossing both ways",
    category: "values-in",
    code: `const v = { lone: "\\ud800", rev: "\\udfff\\ud800", nul: "a\\u0000b", emoji: "\\u{1F600}", bom: "\\ufeff" };
const back = await tools.echo(v); const text = JSON.parse(await tools.echo_text(v)); return [back, text, back.nul.length]`,
    expect: {
      status: "ok",
      value: [
        { lone: "\ud800", rev: "\udfff\ud800", nul: "a\u0000b", emoji: "\u{1F600}", bom: "\ufeff" },
        { lone: "\ud800", rev: "\udfff\ud800", nul: "a\u0000b", emoji: "\u{1F600}", bom: "\ufeff" },
        3,
      ],
    },
    check: () => expect(lastInput()).toEqual({ lone: "\ud800", rev: "\udfff\ud800", nul: "a\u0000b", emoji: "\u{1F600}", bom: "\ufeff" }),
  },
  {
    name: "moderately deep nesting round-trips",
    category: "values-in",
    code: `let o = { leaf: 1 }; for (let i = 0; i < 1000; i++) o = { o }; let back = await tools.echo(o); let d = 0; while (back.o) { back = back.o; d++ } return [d, back.leaf]`,
    expect: { status: "ok", value: [1000, 1] },
  },
  {
    name: "extremely deep nesting is refused by the host, not crashed on",
    category: "values-in",
    code: `let o = {}; for (let i = 0; i < 10000; i++) o = { o }; return await tools.echo(o)`,
    timeoutMs: 3000,
    expect: { status: "error", kind: "exception", message: ["tools.echo(): the argument is nested more than 2000 levels deep; pass flatter data (the tool did not run)"] },
  },
  {
    name: "extremely deep nesting that the guest itself cannot serialise in time",
    category: "values-in",
    code: `let o = {}; for (let i = 0; i < 100000; i++) o = { o }; return await tools.echo(o)`,
    timeoutMs: 500,
    expect: { status: "error", kind: "timeout", message: ["500 ms deadline"] },
  },
  {
    name: "a 20 MB argument",
    category: "values-in",
    code: `return await tools.echo({ s: "x".repeat(20e6) })`,
    // Building 20 MB in the guest can pass a second on a loaded machine: the limit here is the crossing's.
    timeoutMs: 10_000,
    expect: { status: "error", kind: "exception", message: ["tools.echo(): the argument is", "limited to 8.0 MiB"] },
    check: (_r, before) => expect(log.inputs.length).toBe(before.inputs),
  },
  {
    name: "arguments of the wrong shape are the tool's input errors",
    category: "values-in",
    code: `const out = []; for (const v of [[1, 2], "str", null, 5]) { try { await tools.echo(v); out.push("sent") } catch (e) { out.push(e.code) } } return out`,
    expect: { status: "ok", value: ["tool_invalid_input", "tool_invalid_input", "tool_invalid_input", "tool_invalid_input"] },
  },
  {
    name: "result_view smuggled into a single-result tool",
    category: "values-in",
    code: `try { await tools.echo({ result_view: "full" }) } catch (e) { return [e.code, e.message] }`,
    expect: { status: "ok", value: ["tool_invalid_input", 'tool "echo" returns a single result and does not accept "result_view"'] },
  },

  // ---- attacks through values the host returns --------------------------------------------------
  {
    name: "a result with __proto__ and constructor.prototype keys does not pollute the guest",
    category: "values-out",
    code: `const r = await tools.evil({ kind: "proto" }); const merged = Object.assign({}, r);
return [typeof ({}).polluted, typeof ({}).isAdmin, typeof [].polluted, Object.getPrototypeOf(r) === Object.prototype, r.ok, typeof merged.isAdmin]`,
    expect: { status: "ok", value: ["undefined", "undefined", "undefined", true, 1, "undefined"] },
  },
  {
    name: "a deeply nested result",
    category: "values-out",
    code: `let r = (await tools.evil({ kind: "deep" })).v; let d = 0; while (r.n) { r = r.n; d++ } return [d, r.leaf]`,
    expect: { status: "ok", value: [500, true] },
  },
  {
    name: "a result nested past what the host can validate is a clean tool error",
    category: "values-out",
    code: caught(`await tools.evil({ kind: "deeper" }); return "arrived"`),
    expect: { status: "ok", value: "ToolError: Maximum call stack size exceeded" },
  },
  {
    name: "a 9 MiB result is refused at the wall",
    category: "values-out",
    code: caught(`await tools.evil({ kind: "big" }); return "arrived"`),
    expect: { status: "ok", value: "ToolError: tools.evil() returned 9.0 MiB of JSON; one value crossing the sandbox wall is limited to 8.0 MiB" },
  },
  {
    name: "BigInt, cyclic and throwing-getter results reject the call",
    category: "values-out",
    code: `const out = []; for (const kind of ["bigint", "cycle", "getter"]) { try { await tools.evil({ kind }); out.push("arrived") } catch (e) { out.push(e.message) } } return out`,
    expect: { status: "ok" },
    check: (result) => {
      const [bigint, cycle, getter] = result.structuredContent.value as string[];
      expect(bigint).toMatch(/BigInt/);
      expect(cycle).toMatch(/circular/i);
      expect(getter).toMatch(/getter on a host result/);
    },
  },
  {
    name: "non-JSON host values arrive as their JSON",
    category: "values-out",
    code: `return await tools.evil({ kind: "weird" })`,
    expect: { status: "ok", value: { nan: null, inf: null, neg0: 0, date: "1970-01-01T00:00:00.000Z", nul: "a\u0000b", lone: "\ud800" } },
  },
  {
    name: "a result with a non-function then is data, not a thenable",
    category: "values-out",
    code: `const r = await tools.evil({ kind: "thenable" }); return r`,
    expect: { status: "ok", value: { then: "not a function", value: 1 } },
  },
  {
    name: "result keys named like hooks (toJSON, valueOf, then, constructor) stay data through the program's return",
    category: "values-out",
    code: `const r = await tools.evil({ kind: "hooks" }); text(r); return [r, String(r.then), typeof r.valueOf]`,
    expect: {
      status: "ok",
      value: [{ toJSON: "data", valueOf: 1, toString: null, constructor: { name: "Evil" }, then: [1], __defineGetter__: "x" }, "1", "number"],
      text: ['{"toJSON":"data","valueOf":1,"toString":null,"constructor":{"name":"Evil"},"then":[1],"__defineGetter__":"x"}'],
    },
  },
  {
    name: "a large result with lone surrogates, a NUL and astral characters arrives exactly",
    category: "values-out",
    code: `const { s } = await tools.evil({ kind: "large-odd" }); return [s.length, s.charCodeAt(0), s.charCodeAt(20000), s.codePointAt(20002), s.charCodeAt(s.length - 1), s === "\\ud800x".repeat(10000) + "\\u0000" + "é\\u{1F600}".repeat(10000) + "\\udc00"]`,
    expect: { status: "ok", value: [50002, 0xd800, 0, 0x1f600, 0xdc00, true] },
  },
  {
    name: "a result with 100,000 keys",
    category: "values-out",
    code: `const r = await tools.evil({ kind: "wide" }); return [Object.keys(r).length, r.k99999]`,
    // Real work (a 1.4 MB object built in the guest): a loaded 2-core machine took over a second.
    timeoutMs: 10_000,
    expect: { status: "ok", value: [100000, 99999] },
  },
  {
    name: "a long tool failure keeps its last 2,000 characters",
    category: "values-out",
    code: `try { await tools.fail({ kind: "long" }) } catch (e) { return [e.name, e.code, e.message.length <= 2000, e.message.endsWith("END")] }`,
    expect: { status: "ok", value: ["ToolError", "tool_failed", true, true] },
  },
  {
    name: "tool failures with NUL, thrown strings, null and a throwing message getter",
    category: "values-out",
    code: `const out = []; for (const kind of ["nul", "string", "null", "trap"]) { try { await tools.fail({ kind }) } catch (e) { out.push([e instanceof Error, typeof e.message, e.code]) } }
try { await tools.fail({ kind: "nul" }) } catch (e) { out.push(e.message) } return out`,
    expect: {
      status: "ok",
      value: [[true, "string", "tool_failed"], [true, "string", "tool_failed"], [true, "string", "tool_failed"], [true, "string", "tool_failed"], "before\u0000after"],
    },
  },

  // ---- resource exhaustion -----------------------------------------------------------------------
  {
    name: "busy loop",
    category: "exhaustion",
    code: `while (true) {}`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout", message: ["ran past its 300 ms deadline"] },
  },
  {
    name: "microtask loop",
    category: "exhaustion",
    code: `for (;;) { await 0 }`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout", message: ["ran past its 300 ms deadline"] },
  },
  {
    name: "microtask flood through self-scheduling then()",
    category: "exhaustion",
    code: `function f() { Promise.resolve().then(f) } f(); await new Promise(() => {})`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout", message: ["ran past its 300 ms deadline"] },
  },
  {
    name: "promise storm: a million pending promises",
    category: "exhaustion",
    code: `const ps = []; for (let i = 0; i < 1e6; i++) ps.push(new Promise(() => {})); await Promise.race(ps)`,
    // Reaching the memory cap takes ~1 s of allocation; room for a loaded machine.
    timeoutMs: 5_000,
    expect: { status: "error", kind: "memory" },
  },
  {
    name: "memory by many small objects",
    category: "exhaustion",
    code: `const a = []; for (;;) a.push({ x: a.length, y: [a.length] })`,
    timeoutMs: 3000,
    expect: { status: "error", kind: "memory" },
  },
  {
    name: "memory by a doubling string",
    category: "exhaustion",
    code: `let s = "x"; for (;;) s += s`,
    expect: { status: "error", kind: "memory" },
  },
  {
    name: "memory by many medium strings",
    category: "exhaustion",
    code: `const keep = []; for (let i = 0; ; i++) keep.push("y".repeat(1 << 16) + i)`,
    timeoutMs: 3000,
    expect: { status: "error", kind: "memory" },
  },
  {
    name: "memory by typed arrays",
    category: "exhaustion",
    code: `const b = []; for (;;) b.push(new Float64Array(1 << 17))`,
    expect: { status: "error", kind: "memory" },
  },
  {
    name: "one huge typed array and one huge string",
    category: "exhaustion",
    code: `const out = []; for (const make of [() => new Uint8Array(1e9), () => "x".repeat(2 ** 29), () => new ArrayBuffer(2 ** 31)]) { try { make(); out.push("made") } catch (e) { out.push(e.name) } } return out`,
    expect: { status: "ok", value: ["InternalError", "InternalError", "RangeError"] },
  },
  {
    name: "memory by regex on a huge input",
    category: "exhaustion",
    code: `let s = "ab".repeat(1 << 22); const parts = []; for (;;) parts.push(s.match(/a|b/g))`,
    timeoutMs: 3000,
    expect: { status: "error", kind: "memory" },
  },
  {
    name: "ReDoS",
    category: "exhaustion",
    code: `return /(a+)+$/.test("a".repeat(40) + "b")`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout", message: ["ran past its 300 ms deadline"] },
  },
  {
    name: "a long builtin that never polls the interrupt handler",
    category: "exhaustion",
    code: `return new Array(1e8).join("x").length`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout", message: ["inside a long builtin"] },
  },
  {
    name: "indexOf over a huge array-like",
    category: "exhaustion",
    code: `return Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1)`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout", message: ["300 ms deadline"] },
  },
  {
    name: "deep recursion is a catchable error first, then a stack failure",
    category: "exhaustion",
    code: `function r(n) { return n === 0 ? 0 : 1 + r(n - 1) } let first; try { r(1e6) } catch (e) { first = e.message } text(first); r(1e6)`,
    expect: { status: "error", kind: "stack", message: ["stack overflow"], text: ["stack overflow"] },
  },
  {
    name: "recursion that catches its own stack overflow",
    category: "exhaustion",
    code: `function r() { try { return r() } catch (e) { return r() } } r()`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout" },
  },
  {
    name: "a source made of deeply nested brackets",
    category: "exhaustion",
    code: `return ${"[".repeat(100_000)}${"]".repeat(100_000)}`,
    expect: { status: "error", kind: "syntax", message: ["SyntaxError: stack overflow"] },
  },
  {
    name: "parsing deeply nested JSON",
    category: "exhaustion",
    code: caught(`JSON.parse("[".repeat(1e6) + "]".repeat(1e6)); return "parsed"`),
    timeoutMs: 3000,
    expect: { status: "ok", value: "SyntaxError: stack overflow" },
  },
  {
    name: "call storm in parallel past the per-run limit",
    category: "exhaustion",
    code: `const ps = []; for (let i = 0; i < 2000; i++) ps.push(tools.tick({}).catch((e) => e.code)); await Promise.all(ps); return "finished"`,
    expect: { status: "error", kind: "call_limit", message: ["more than 1000 tool calls"] },
    check: (result, before) => {
      expect(log.counter - before.counter).toBeLessThanOrEqual(1000);
      expect(result.structuredContent.tool_calls).toBeLessThanOrEqual(1000);
    },
    settleMs: 50,
  },
  {
    name: "sequential call storm that swallows the limit error",
    category: "exhaustion",
    // A limit test, not a speed test: room to finish on a loaded machine.
    timeoutMs: 5_000,
    code: `for (let i = 0; i < 1100; i++) { try { await tools.tick({}) } catch (e) {} } return "swallowed"`,
    expect: { status: "error", kind: "call_limit" },
  },
  {
    name: "in-flight flood waits in FIFO without losing calls",
    category: "exhaustion",
    // A limit test, not a speed test: room to finish on a loaded machine.
    timeoutMs: 5_000,
    code: `const ps = []; for (let i = 0; i < 200; i++) ps.push(tools.slow({ ms: 1 })); const r = await Promise.all(ps); return r.filter((x) => x.done).length`,
    expect: { status: "ok", value: 200 },
  },
  {
    name: "output flood of big chunks is cut to the budget",
    category: "exhaustion",
    code: `for (let i = 0; i < 20; i++) text("z".repeat(1e6)); return "done"`,
    expect: { status: "ok", value: "done", text: [/cut|truncated|omitted/i] },
    check: (result) => expect(Buffer.byteLength(result.content[0].text)).toBeLessThanOrEqual(40_000 + 1_000),
  },
  {
    name: "output flood of tiny text() calls",
    category: "exhaustion",
    code: `for (let i = 0; i < 1e7; i++) text("y")`,
    timeoutMs: 500,
    expect: { status: "error", kind: "timeout", message: ["500 ms deadline"] },
    check: (result) => expect(Buffer.byteLength(result.content[0].text)).toBeLessThanOrEqual(40_000 + 1_000),
  },
  {
    name: "console flood",
    category: "exhaustion",
    // A limit test, not a speed test: room to finish on a loaded machine.
    timeoutMs: 5_000,
    code: `for (let i = 0; i < 5000; i++) console.log("line " + i + " " + "c".repeat(5000)); return "done"`,
    expect: { status: "ok", value: "done", warning: ["console lines were dropped (limit 500 per run)"] },
    check: (result) => {
      expect(result.details.console.length).toBe(500);
      expect(result.details.console[0].text.length).toBeLessThanOrEqual(2_001);
    },
  },
  {
    name: "store flood past the session cap",
    category: "exhaustion",
    code: `for (let i = 0; i < 100; i++) store("k" + i, "x".repeat(200000)); return "stored"`,
    expect: { status: "error", kind: "exception", message: ["RangeError", "a session's store is limited to 1.0 MiB"] },
  },
  {
    name: "one stored value over the cap",
    category: "exhaustion",
    code: caught(`store("big", "x".repeat(300000)); return "stored"`),
    expect: { status: "ok", value: 'RangeError: store("big"): the value is 293.0 KiB of JSON; one stored value is limited to 256.0 KiB' },
  },
  {
    name: "store of many keys",
    category: "exhaustion",
    code: caught(`for (let i = 0; i < 1e6; i++) store("key-" + i, i); return "stored"`),
    expect: { status: "ok", value: /RangeError: store\("key-\d+"\): the session would hold/ as unknown },
  },
  {
    name: "timer flood past the per-run limit",
    category: "exhaustion",
    // A limit test, not a speed test: room to finish on a loaded machine.
    timeoutMs: 5_000,
    code: caught(`for (let i = 0; i < 20000; i++) setTimeout(() => {}, 1e6); return "scheduled"`),
    expect: { status: "ok", value: "RangeError: setTimeout(): too many pending timers (limit 10000 per run)" },
  },
  {
    name: "sleep flood",
    category: "exhaustion",
    // A limit test, not a speed test: room to finish on a loaded machine.
    timeoutMs: 5_000,
    code: `const ps = []; for (let i = 0; i < 5000; i++) ps.push(sleep(1)); await Promise.all(ps); return "slept"`,
    expect: { status: "ok", value: "slept" },
  },
  {
    name: "a ten-million-character unknown tool name",
    category: "exhaustion",
    code: `tools["x".repeat(1e7)]`,
    // Quadratic matching ran for minutes; building and crossing the 10 MB name takes ~0.2 s idle, more on a loaded machine.
    timeoutMs: 3_000,
    expect: { status: "error", kind: "exception", message: [/^TypeError: tools\.x{200}… \(10000000 characters\) is not a tool\. Available: /] },
  },
  {
    name: "a huge sleep is cut by the deadline",
    category: "exhaustion",
    code: `await sleep(1e12); return "woke"`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout", message: ["300 ms deadline"] },
  },

  // ---- trying to outlive the run -----------------------------------------------------------------
  {
    name: "a dangling timer that would call a tool",
    category: "outlive",
    code: `setTimeout(() => tools.tick({}), 30); return "left"`,
    settleMs: 150,
    expect: { status: "ok", value: "left" },
    check: (_r, before) => expect(log.counter).toBe(before.counter),
  },
  {
    name: "a background loop that keeps calling tools",
    category: "outlive",
    code: `(async () => { for (;;) { await sleep(5); await tools.tick({}) } })(); await sleep(30); return "left"`,
    settleMs: 150,
    expect: { status: "ok", value: "left" },
    check: (result, before) => {
      const made = result.structuredContent.tool_calls;
      expect(made).toBeGreaterThan(0);
      expect(log.counter - before.counter).toBeLessThanOrEqual(made);
    },
  },
  {
    name: "an unawaited slow tool is cancelled and reported",
    category: "outlive",
    code: `tools.slow({ ms: 5000 }); return "left"`,
    settleMs: 20,
    expect: { status: "ok", value: "left", warning: ["tools.slow", "was still pending and was cancelled — missing await?"] },
    check: (result, before) => {
      expect(log.aborted).toBe(before.aborted + 1);
      expect(result.details.calls[0].status).toBe("cancelled");
    },
  },
  {
    name: "a tool call made in a microtask after the program's value settled",
    category: "outlive",
    code: `let seen = "none"; Promise.resolve().then(() => Promise.resolve()).then(() => tools.tick({}).catch((e) => { seen = e.code; text(e.message) })); return "left"`,
    settleMs: 100,
    expect: { status: "ok", value: "left", text: ["tools.tick(): the program has already ended; calls made after its end are not run"] },
    check: (result, before) => {
      expect(log.counter).toBe(before.counter);
      expect(result.structuredContent.tool_calls).toBe(0);
    },
  },
  {
    name: "a self-rescheduling timer",
    category: "outlive",
    code: `function loop() { setTimeout(loop, 1) } loop(); return "left"`,
    expect: { status: "ok", value: "left" },
  },
  {
    name: "an unhandled rejection left behind",
    category: "outlive",
    code: `tools.fail({ kind: "x" }); Promise.reject(new Error("nobody listens")); return "left"`,
    settleMs: 50,
    expect: { status: "ok", value: "left" },
  },
  {
    name: "globals do not survive into the next run of the same session",
    category: "outlive",
    code: `globalThis.leftover = "from an earlier run"; Object.prototype.leftover = 1; Array.prototype.push = null; return "planted"`,
    expect: { status: "ok", value: "planted" },
    after: { code: `return [typeof leftover, typeof ({}).leftover, typeof [].push]`, value: ["undefined", "undefined", "function"] },
  },
  {
    name: "a slow tool when the deadline hits is cancelled",
    category: "outlive",
    code: `return await tools.slow({ ms: 10000 })`,
    timeoutMs: 300,
    settleMs: 20,
    expect: { status: "error", kind: "timeout", message: ["300 ms deadline"], warning: ['tools.slow({"ms":10000}) was still pending and was cancelled when the run stopped (timeout)'] },
    check: (result, before) => {
      expect(log.aborted).toBe(before.aborted + 1);
      expect(result.details.calls[0].status).toBe("cancelled");
    },
  },
  {
    name: "an abort while a tool is pending",
    category: "outlive",
    code: `await tools.slow({ ms: 10000 })`,
    abortAfterMs: 50,
    settleMs: 20,
    expect: { status: "error", kind: "aborted" },
    check: (_r, before) => expect(log.aborted).toBe(before.aborted + 1),
  },
  {
    name: "an abort inside a busy loop",
    category: "outlive",
    code: `while (true) {}`,
    abortAfterMs: 50,
    expect: { status: "error", kind: "aborted" },
  },
  {
    name: "an abort inside a long builtin",
    category: "outlive",
    code: `new Array(1e8).join("x")`,
    abortAfterMs: 50,
    expect: { status: "error", kind: "aborted" },
  },

  // ---- tampering to confuse the host -------------------------------------------------------------
  {
    name: "Promise.prototype.then replaced",
    category: "tamper",
    code: `Promise.prototype.then = function () { return 42 }; const r = await tools.echo({ a: 1 }); return r`,
    expect: { status: "ok" },
  },
  {
    name: "the global Promise replaced before awaiting tools",
    category: "tamper",
    code: `globalThis.Promise = function () { throw new Error("no promises") }; return await tools.echo({ a: 1 })`,
    expect: { status: "ok", value: { a: 1 } },
  },
  {
    name: "JSON replaced",
    category: "tamper",
    code: `JSON.stringify = () => '{"evil":1}'; JSON.parse = () => ({ evil: 2 }); store("j", { a: 1 }); return [await tools.echo({ a: 1 }), load("j")]`,
    expect: { status: "ok", value: [{ a: 1 }, { a: 1 }] },
  },
  {
    name: "Object.prototype.toJSON confuses only the program's own values",
    category: "tamper",
    code: `Object.prototype.toJSON = function () { return "hacked" }; throw new Error("the real error")`,
    expect: { status: "error", kind: "exception", message: ["Error: the real error"] },
  },
  {
    name: "a throwing then getter on Object.prototype",
    category: "tamper",
    code: `Object.defineProperty(Object.prototype, "then", { get() { throw new Error("then trap") } }); return { a: 1 }`,
    expect: { status: "error", kind: "exception", message: ["Error: then trap"] },
  },
  {
    name: "Object.prototype setters and getters for the keys the prelude reads",
    category: "tamper",
    code: `for (const k of ["name", "message", "stack", "code", "reason", "thrown"]) Object.defineProperty(Object.prototype, k, { get() { return "forged-" + k }, set(v) {}, configurable: true });
throw "plain string"`,
    expect: { status: "error", kind: "exception", message: ["plain string"] },
  },
  {
    name: "tools, text and console cannot be replaced",
    category: "tamper",
    code: `tools.echo = () => "fake"; console.log = () => {}; globalThis.text = () => {}; text("real"); console.log("logged"); return await tools.echo({ real: true })`,
    expect: { status: "ok", value: { real: true }, text: ["real"] },
    check: (result) => expect(result.details.console).toEqual([{ level: "log", text: "logged" }]),
  },
  {
    name: "Function.prototype call/apply/bind and Reflect.apply replaced",
    category: "tamper",
    code: `Function.prototype.call = Function.prototype.apply = Function.prototype.bind = () => { throw new Error("hijacked") }; Reflect.apply = () => { throw new Error("hijacked") };
let fired = 0; setTimeout((a, b) => { fired = a + b }, 0, 2, 3); await sleep(5); text({ fired }); return (await tools.echo({ a: 1 })).a`,
    expect: { status: "ok", value: 1, text: ['{"fired":5}'] },
  },
  {
    name: "Map, Array and String methods replaced",
    category: "tamper",
    code: `Map.prototype.has = () => false; Map.prototype.get = () => undefined; Array.prototype.push = () => { throw new Error("push") }; String.prototype.slice = () => "sliced";
let fired = false; setTimeout(() => { fired = true }, 1); await sleep(10); return [fired, (await tools.echo({ a: "abc" })).a]`,
    expect: { status: "ok", value: [true, "abc"] },
  },
  {
    name: "Error constructors replaced before a tool fails",
    category: "tamper",
    code: `globalThis.Error = function () { return { fake: true } }; globalThis.TypeError = globalThis.Error; Object.defineProperty = () => { throw 1 };
try { await tools.fail({ kind: "x" }) } catch (e) { return [e.message, e.code, e.fake === undefined] }`,
    expect: { status: "ok", value: ["fail x", "tool_failed", true] },
  },
  {
    name: "a returned thenable that never settles",
    category: "tamper",
    code: `return { then() {} }`,
    expect: { status: "error", kind: "timeout", message: ["nothing can settle"] },
  },
  {
    name: "a returned thenable that resolves",
    category: "tamper",
    code: `return { then(resolve) { resolve({ via: "thenable" }) } }`,
    expect: { status: "ok", value: { via: "thenable" } },
  },
  {
    name: "return values that are not JSON",
    category: "tamper",
    code: `return new Proxy({}, { ownKeys() { throw new Error("boom") } })`,
    expect: { status: "ok", warning: ["the return value could not be serialised: boom"] },
  },
  {
    name: "a cyclic or BigInt return value",
    category: "tamper",
    code: `const a = []; a.push(a); return [a, 1n]`,
    expect: { status: "ok", warning: ["the return value could not be serialised"] },
  },
  {
    name: "a 9 MiB return value is dropped with a warning",
    category: "tamper",
    code: `return "r".repeat(9 * 1024 * 1024)`,
    expect: { status: "ok", warning: ["over the 8.0 MiB limit for one value crossing the sandbox wall; it was dropped"] },
  },
  {
    name: "a return value nested deeper than the host can serialise is dropped with a warning",
    category: "tamper",
    code: `let a = [1]; for (let i = 0; i < 8000; i++) a = [a]; return a`,
    expect: { status: "ok", warning: ["the return value is nested more than 1000 levels deep, past what the host passes on; it was dropped"] },
    check: (result) => expect(result.structuredContent).not.toHaveProperty("value"),
  },
  {
    name: "a return value nested 900 levels deep is kept",
    category: "tamper",
    code: `let a = [1]; for (let i = 1; i < 900; i++) a = [a]; return a`,
    expect: { status: "ok" },
    check: (result) => expect(JSON.stringify(result.structuredContent.value)).toBe("[".repeat(900) + "1" + "]".repeat(900)),
  },
  {
    name: "a million-character thrown message does not flood the model",
    category: "tamper",
    code: `throw new Error("x".repeat(1e6) + "END")`,
    expect: { status: "error", kind: "exception", message: [/^Error: x{900,}… \[\d+ characters cut\] …x+END$/] },
    check: (result) => expect(result.structuredContent.error!.message.length).toBeLessThanOrEqual(2_100),
  },
  {
    name: "throwing odd values",
    category: "tamper",
    code: `const out = []; for (const v of [Symbol("s"), null, undefined, 1n, new Proxy({}, { get() { throw new Error("nope") } })]) { out.push(v) } throw out[4]`,
    expect: { status: "error", kind: "exception" },
  },
  {
    name: "a thrown object whose message getter never returns",
    category: "tamper",
    code: `throw { get message() { for (;;) {} } }`,
    timeoutMs: 300,
    expect: { status: "error", kind: "timeout" },
  },
  {
    name: "a thrown Symbol and a thrown BigInt",
    category: "tamper",
    code: `try { throw Symbol("s") } catch (e) { text(String(e)) } throw 10n`,
    expect: { status: "error", kind: "exception", message: ["10"], text: ["Symbol(s)"] },
  },
  {
    name: "a stack property that claims host frames",
    category: "tamper",
    code: `const e = new Error("x"); Object.defineProperty(e, "stack", { value: "Error: x\\n    at evil (program.js:999:1)" }); throw e`,
    expect: { status: "error", kind: "exception", message: ["Error: x"] },
  },
];
