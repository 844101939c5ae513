// Snapshot-fresh runs after hostile ones, in the same session: whatever a program tampered with
// (RegExp statics, Error hooks, the Object.prototype.__proto__ accessor, Array.prototype index
// getters, Date.prototype, typed arrays, globalThis's own properties, their attributes and its
// prototype, frozen built-ins, the tools/text bindings, pending jobs, timers, FinalizationRegistry
// callbacks) and however the run ended (normally, an exception from a getter while the result was
// serialised, out of memory or a stack overflow there, the deadline inside a getter, a microtask
// flood, a promise nothing settles, an abort while the run sleeps on a tool call), the session's
// next run sees exactly what a never-used instance shows, and works.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxEngine, type RunCallbacks, type RunHandle } from "../../src/engine/engine.js";
import type { DoneMessage, RunRequest } from "../../src/engine/protocol.js";
import { runRequest } from "./run-request.js";

let engine: SandboxEngine;
beforeAll(async () => {
  engine = new SandboxEngine({ defaultMemoryBytes: 64 * 1024 * 1024, maxWorkers: 1, minWorkers: 1 });
  await engine.start();
});
afterAll(() => engine.close());

const request = (code: string, session: string, timeoutMs = 5000): RunRequest =>
  runRequest(code, { session, tools: ["echo", "never"], globals: { task: { id: "t1" } }, limits: { timeoutMs, maxTimers: 100 } });

/** Runs `code`; `echo` answers with its arguments, `never` does not answer; `abortOnCall` aborts the run 50 ms after it called `never`. */
async function run(code: string, session: string, options: { timeoutMs?: number; abortOnCall?: boolean } = {}): Promise<DoneMessage> {
  let handle!: RunHandle;
  const callbacks: RunCallbacks = {
    onCall(callId, path, args) {
      if (path === "echo") handle.settle(callId, true, args);
      else if (options.abortOnCall) setTimeout(() => handle.abort(), 50);
    },
    onFlush() {},
    onStore() {},
  };
  handle = engine.run(request(code, session, options.timeoutMs), callbacks);
  return handle.done;
}

/** Everything the tampering below changes, as a never-used instance shows it. */
const INSPECT = `
  const keys = (o) => Reflect.ownKeys(o).map(String).sort().join();
  const attrs = (o) => Reflect.ownKeys(o).map((k) => { const d = Object.getOwnPropertyDescriptor(o, k); return String(k) + ":" + d.writable + d.enumerable + d.configurable + typeof d.get; }).sort().join();
  /(probe)(x)?/.exec("a probe");
  return {
    regexp: [typeof RegExp.$1, String(RegExp.lastMatch), keys(RegExp)],
    errorHooks: [typeof Error.prepareStackTrace, String(Error.stackTraceLimit), typeof Error.captureStackTrace, new Error("e").stack.split("\\n").length],
    protoAccessor: [typeof Object.getOwnPropertyDescriptor(Object.prototype, "__proto__")?.get, Object.getPrototypeOf({ __proto__: null }) === null],
    objectPrototype: attrs(Object.prototype),
    arrayPrototype: attrs(Array.prototype),
    arrayIndex: ["0" in [], [].concat([1])[0], Array.from({ length: 2 }).length],
    date: [new Date(0).toJSON(), new Date(0).toISOString(), attrs(Date.prototype)],
    typed: [attrs(Uint8Array.prototype), attrs(ArrayBuffer.prototype), new Uint8Array(new ArrayBuffer(8), 4).length],
    global: [attrs(globalThis), Object.isExtensible(globalThis), Object.getPrototypeOf(globalThis) === Object.prototype],
    frozen: [Object.isFrozen(Object.prototype), Object.isFrozen(Array.prototype), Object.isFrozen(JSON), Object.isFrozen(Math)],
    bindings: [typeof tools, typeof tools.echo, typeof text, typeof console.log, Object.isFrozen(tools.echo), keys(tools.echo)],
    leftovers: [typeof leftover, typeof fromTimer, typeof fromJob, typeof finalized, ({}).polluted, [].polluted],
    builtins: [JSON.stringify({ a: [1] }), JSON.parse("[2]")[0], String(Symbol("s")), "x".toString(), Math.max(1, 2), typeof Promise.prototype.then],
    task: task.id,
    call: (await tools.echo({ ok: "yes" })).ok,
    timer: await new Promise((resolve) => setTimeout(() => resolve("fired"), 1)),
  };`;

/** Tampers with everything INSPECT reads, and leaves jobs, timers and a finalizer behind. */
const TAMPER = `
  /(leak)(ed)/.exec("leaked");
  Error.prepareStackTrace = () => "hacked";
  Error.stackTraceLimit = 0;
  Error.captureStackTrace = () => {};
  Object.defineProperty(Object.prototype, "__proto__", { get() { return "hacked" }, set() { throw new Error("hacked") } });
  Object.defineProperty(Array.prototype, "0", { get() { return "hacked" }, set() {}, configurable: true });
  Object.prototype.polluted = 1;
  Date.prototype.toJSON = () => "hacked";
  Date.prototype.toISOString = () => "hacked";
  Uint8Array.prototype.set = null;
  ArrayBuffer.prototype.slice = null;
  Object.defineProperty(globalThis, "Math", { enumerable: true, writable: false, configurable: false });
  globalThis.leftover = { big: "x".repeat(100000), buffer: new ArrayBuffer(1 << 20) };
  try { globalThis.tools = null } catch {}
  try { globalThis.text = null } catch {}
  try { console.log = null } catch {}
  setTimeout(() => { globalThis.fromTimer = 1 }, 0);
  Promise.resolve().then(() => { globalThis.fromJob = 1 });
  new FinalizationRegistry(() => { globalThis.finalized = 1 }).register({}, 1);
  globalThis.weak = new WeakRef({});
  Symbol.for("codemode-probe");
  for (const target of [Object.prototype, Array.prototype, JSON, Math, RegExp, Date.prototype]) Object.freeze(target);
  Object.setPrototypeOf(globalThis, new Proxy({}, { get() { return "hacked" }, has() { return true } }));
  Object.preventExtensions(globalThis);
`;

const ENDINGS: Array<{ name: string; code: string; kind?: string; value?: unknown; timeoutMs?: number; abortOnCall?: boolean }> = [
  // The tampering took: what INSPECT reads differs from the template's while the run lasts.
  {
    name: "normally",
    code: `return [Object.isFrozen(Object.prototype), ({}).polluted, Object.isExtensible(globalThis), [][0], typeof Error.prepareStackTrace, new Date(0).toJSON()]`,
    value: [true, 1, false, "hacked", "function", "hacked"],
  },
  { name: "with an exception from a getter while its value is serialised", code: `return { get x() { throw new Error("getter") } }` },
  { name: "out of memory in a getter while its value is serialised", code: `return { get x() { let s = "x"; for (;;) s += s } }` },
  { name: "with a stack overflow in toJSON while its value is serialised", code: `return { toJSON() { const f = () => f() + 1; return f() } }` },
  { name: "at the deadline inside a getter while its value is serialised", code: `return { get x() { for (;;) {} } }`, kind: "timeout", timeoutMs: 300 },
  { name: "at the deadline in a microtask flood", code: `(function f() { Promise.resolve().then(f) })(); await new Promise(() => {})`, kind: "timeout", timeoutMs: 300 },
  { name: "waiting for a promise nothing settles", code: `await new Promise(() => {})`, kind: "timeout" },
  { name: "aborted while asleep on a tool call", code: `await tools.never({})`, kind: "aborted", abortOnCall: true },
  { name: "out of memory in the program", code: `const a = []; for (;;) a.push({ x: a.length })`, kind: "memory" },
];

/** Runs until the session's instance comes from a snapshot (a session's first runs may precede the self-test, or take a plain spare). */
async function untilRestored(session: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if ((await run("return 1", session)).vm?.restored) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`session ${session} never ran on a snapshot instance`);
}

describe("snapshot-fresh runs after hostile ones, in the same session", () => {
  let pristine: unknown;
  beforeAll(async () => {
    await untilRestored("pristine");
    const done = await run(INSPECT, "pristine");
    expect(done.ok, JSON.stringify(done.error)).toBe(true);
    expect(done.vm?.restored).toBe(true);
    pristine = JSON.parse(done.valueJson!);
  });

  for (const [index, ending] of ENDINGS.entries()) {
    it(`leave nothing behind when the run ended ${ending.name}`, async () => {
      const session = `hostile-${index}`;
      // A worker past its memory budget is replaced after a run (the microtask flood grows the
      // heap), and the session then starts again on a plain instance: try until the hostile run
      // itself ran on a restored one.
      let hostile!: DoneMessage;
      for (let attempt = 0; attempt < 5; attempt++) {
        await untilRestored(session);
        hostile = await run(TAMPER + ending.code, session, ending);
        if (hostile.vm?.restored) break;
      }
      if (ending.kind) expect(hostile.error?.kind, JSON.stringify(hostile.error)).toBe(ending.kind);
      else expect(hostile.ok, JSON.stringify(hostile.error)).toBe(true);
      if (ending.value !== undefined) expect(JSON.parse(hostile.valueJson!)).toStrictEqual(ending.value);
      expect(hostile.vm?.restored, JSON.stringify([hostile.vm, hostile.error, hostile.warnings])).toBe(true);
      // Twice: the first may take a state prepared after the hostile run, the second one prepared after a clean run.
      for (let i = 0; i < 2; i++) {
        const next = await run(INSPECT, session);
        expect(next.ok, JSON.stringify(next.error)).toBe(true);
        // The same instance, restored, unless the hostile run had it discarded (out of memory
        // recycles it) or left its worker over its memory budget (the worker is replaced).
        if (i === 0 && !hostile.instanceDiscarded && !hostile.retire) expect(next.vm).toMatchObject({ instance: hostile.vm!.instance, restored: true });
        expect(JSON.parse(next.valueJson!)).toStrictEqual(pristine);
      }
    });
  }

  it("shows a never-used instance what the template holds, as a sanity check of the probe", () => {
    expect(pristine).toMatchObject({
      errorHooks: ["undefined", "undefined", "undefined", expect.any(Number)],
      arrayIndex: [false, 1, 2],
      global: [expect.any(String), true, true],
      frozen: [false, false, false, false],
      bindings: ["object", "function", "function", "function", false, expect.any(String)],
      leftovers: ["undefined", "undefined", "undefined", "undefined", null, null],
      task: "t1",
      call: "yes",
      timer: "fired",
    });
  });
});
