// Snapshot-fresh instances: a restored state is byte-identical to a never-used one, nothing a run
// does survives a restore, and every fact of quickjs-emscripten and of the build that the snapshot
// relies on is pinned here, so an upgrade that breaks one fails a named test.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { QuickJSContext, QuickJSRuntime, type QuickJSHandle } from "quickjs-emscripten";
import {
  InstanceSnapshot,
  SUPPORTED_VERSION,
  SnapshotUnsupported,
  binaryLayout,
  differences,
  memoryLayout,
  quickjsRandom,
  startSnapshots,
  type MemoryLayout,
  type TemplateSetup,
} from "../../src/engine/snapshot.js";
import { newWasmInstance, pagesFor } from "../../src/engine/wasm-instance.js";
import { MAX_STACK_BYTES } from "../../src/codemode/limits.js";

const require = createRequire(import.meta.url);
const MEMORY = 8 * 1024 * 1024;
const PAGES = pagesFor(MEMORY);

/** The host function the template's prelude keeps; each run points it at its own handler. */
let hostHandler: (context: QuickJSContext, args: QuickJSHandle[]) => QuickJSHandle | undefined = () => undefined;
const hostContexts: QuickJSContext[] = [];

/** Like the real prelude's static part: a host function kept in a closure, an install function kept for the host. */
const setup: TemplateSetup = ({ context }) => {
  const host = context.newFunction("__host", function (this: QuickJSHandle, ...args) {
    return hostHandler(hostContexts[hostContexts.length - 1], args);
  });
  context.setProp(context.global, "__host", host);
  host.dispose();
  const result = context.evalCode(
    `(function (g) {
      "use strict";
      const host = g.__host, parse = JSON.parse;
      delete g.__host;
      g.text = (value) => host("text", String(value));
      return { install(json) { const config = parse(json); for (const name of Object.keys(config)) g[name] = config[name]; return Object.keys(config).length; } };
    })(globalThis)`,
    "prelude.js",
    { type: "global", strict: true },
  );
  if (result.error) throw new Error(JSON.stringify(context.dump(result.error)));
  const install = context.getProp(result.value, "install");
  result.value.dispose();
  return { install };
};

let layout: MemoryLayout;
let used: InstanceSnapshot;
let pristine: InstanceSnapshot;

beforeAll(async () => {
  const start = await startSnapshots(PAGES, setup);
  if (!start.ok) throw new Error(start.reason);
  layout = start.layout;
  [used, pristine] = start.snapshots;
});

afterAll(() => {
  hostHandler = () => undefined;
});

function evaluate(snapshot: InstanceSnapshot, code: string, configure?: (runtime: QuickJSRuntime) => void): unknown {
  const vm = snapshot.acquire();
  hostContexts.push(vm.context);
  configure?.(vm.runtime);
  const result = vm.context.evalCode(code);
  const handle = result.error ?? result.value;
  const value = vm.context.dump(handle);
  handle.dispose();
  return result.error ? { thrown: value } : value;
}

/** Run `code` in the used instance, restore it with the pristine template's seed, and list the bytes that differ. */
function runAndCompare(code: string, configure?: (runtime: QuickJSRuntime) => void): { value: unknown; differing: number[] } {
  const value = evaluate(used, code, configure);
  const reached = used.currentBrk;
  used.restore(pristine.templateSeed);
  return { value, differing: differences(used.instance.memory, pristine.instance.memory, Math.max(reached, pristine.currentBrk)) };
}

describe("what the snapshot relies on (quickjs-emscripten 0.32, release-sync)", () => {
  it("runs on the pinned versions of quickjs-emscripten, its core and the WASM variant", () => {
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { dependencies: Record<string, string> };
    expect(manifest.dependencies["quickjs-emscripten"]).toBe(SUPPORTED_VERSION);
    expect(manifest.dependencies["@jitl/quickjs-wasmfile-release-sync"]).toBe(SUPPORTED_VERSION);
    const core = JSON.parse(readFileSync(require.resolve("quickjs-emscripten-core").replace(/dist\/.*$/, "package.json"), "utf8")) as { version: string };
    expect(core.version).toBe(SUPPORTED_VERSION);
  });

  it("the binary: one mutable global (the stack pointer, not exported), an imported memory, a static word holding the heap base", () => {
    const facts = binaryLayout(readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")));
    expect(facts.stackTop).toBe(layout.stackTop);
    expect(facts.brkCandidates.get(layout.brkAddress)).toBe(layout.heapBase);
    expect(facts.dataEnd).toBeLessThanOrEqual(layout.stackLow);
  });

  it("the C stack has room for the largest stack limit a run may ask for, plus native frames", () => {
    expect(layout.stackTop - layout.stackLow - MAX_STACK_BYTES).toBeGreaterThanOrEqual(512 * 1024);
  });

  it("the derived layout: statics, then the stack, then the heap, with the runtime's stack top just below the stack's", () => {
    expect(layout.stackLow).toBeLessThan(layout.stackTop);
    expect(layout.heapBase).toBeGreaterThanOrEqual(layout.stackTop);
    expect(layout.brkAddress).toBeLessThan(layout.stackLow);
    expect(layout.stackTop - layout.runtimeStackTop).toBeLessThan(4096);
    expect(layout.freshBrk).toBeGreaterThanOrEqual(layout.heapBase);
  });

  it("the module keeps ffi, callbacks and the Emscripten module (malloc, free, HEAPU8 over the instance's memory)", async () => {
    const instance = await newWasmInstance(256);
    const internals = instance.module as unknown as { ffi: Record<string, unknown>; callbacks: unknown; module: { HEAPU8: Uint8Array; _malloc: unknown; _free: unknown } };
    expect(typeof internals.ffi.QTS_NewRuntime).toBe("function");
    expect(internals.callbacks).toBeTypeOf("object");
    expect(internals.module.HEAPU8.buffer).toBe(instance.memory.buffer);
    expect([typeof internals.module._malloc, typeof internals.module._free]).toStrictEqual(["function", "function"]);
  });

  it("host functions take ids from the runtime's host-reference map, counting up from -2^31 in a fresh map", async () => {
    const instance = await newWasmInstance(256);
    const runtime = instance.module.newRuntime();
    const hostRefs = (runtime as unknown as { hostRefs: { put(value: object): number } }).hostRefs;
    const given: number[] = [];
    const put = hostRefs.put.bind(hostRefs);
    hostRefs.put = (value) => {
      const id = put(value);
      given.push(id);
      return id;
    };
    const context = runtime.newContext();
    const a = context.newFunction("a", () => undefined);
    const b = context.newFunction("b", () => undefined);
    expect(given).toStrictEqual([-(2 ** 31), -(2 ** 31) + 1]);
    // A freed function's id is handed out again: a template whose set-up freed a host function
    // would not get its ids back in order (the snapshot checks every id when it rebuilds the map).
    a.dispose();
    context.newFunction("c", () => undefined).dispose();
    expect(given[2]).toBe(-(2 ** 31));
    b.dispose();
  });

  it("a runtime and a context built around existing pointers take over their callbacks: host calls, interrupts, pending jobs", () => {
    const vm = used.acquire();
    expect(vm.runtime).toBeInstanceOf(QuickJSRuntime);
    expect(vm.context).toBeInstanceOf(QuickJSContext);
    let interrupts = 0;
    vm.runtime.setInterruptHandler(() => ++interrupts > 3);
    const loop = vm.context.evalCode("for (;;) {}");
    expect(vm.context.dump(loop.error!)).toMatchObject({ name: "InternalError", message: "interrupted" });
    loop.error!.dispose();
    vm.runtime.removeInterruptHandler();
    const seen: string[] = [];
    hostHandler = (context, args) => {
      expect(context).toBe(vm.context);
      seen.push(vm.context.getString(args[1]));
      return undefined;
    };
    hostContexts.push(vm.context);
    const jobs = vm.context.evalCode(`Promise.resolve().then(() => text("from a job")); undefined`);
    jobs.unwrap().dispose();
    const ran = vm.runtime.executePendingJobs();
    expect(ran.unwrap()).toBe(1);
    const failing = vm.context.evalCode(`Promise.resolve().then(() => { throw new Error("in a job") }); undefined`);
    failing.unwrap().dispose();
    expect(vm.runtime.executePendingJobs().error).toBeUndefined(); // a rejected job is a rejected promise, not a pump error
    expect(seen).toStrictEqual(["from a job"]);
    hostHandler = () => undefined;
    used.restore(pristine.templateSeed);
  });

  it("Math.random is xorshift64* over 8 bytes of the context, seeded from the clock at creation", () => {
    expect(evaluate(used, "[Math.random(), Math.random(), Math.random()]")).toStrictEqual(draws(pristine.templateSeed, 3));
    used.restore(42n);
    expect(evaluate(used, "[Math.random(), Math.random()]")).toStrictEqual(draws(42n, 2));
    used.restore(pristine.templateSeed);
    const seedMicros = Number(used.templateSeed) / 1000;
    expect(Math.abs(seedMicros - Date.now())).toBeLessThan(10 * 60 * 1000);
  });
});

function draws(seed: bigint, count: number): number[] {
  const values: number[] = [];
  let state = seed;
  for (let i = 0; i < count; i++) {
    const next = quickjsRandom(state);
    values.push(next.value);
    state = next.state;
  }
  return values;
}

describe("a restored state", () => {
  it("is byte-identical to a never-used template after programs that touch every part of memory", () => {
    const programs = [
      `globalThis.kept = "x".repeat(2e6); kept.length`,
      `Object.prototype.polluted = true; Array.prototype.map = null; JSON.parse = () => 1; delete globalThis.text; 1`,
      `const list = []; for (let i = 0; i < 20000; i++) list.push({ i, s: String(i).repeat(5) }); list.length`,
      `/(a+)+$/.test("a".repeat(20) + "b") + new Date(0).toISOString() + [3, 1, 2].sort()`,
      `(function down(n) { return n === 0 ? 0 : 1 + down(n - 1); })(500)`,
      `new Promise(() => {}); Promise.reject(new Error("never handled")); 2`,
      `throw new TypeError("the program failed")`,
      `const big = new Uint8Array(3 * 1024 * 1024).fill(7); big.length`,
    ];
    for (const code of programs) {
      const { differing } = runAndCompare(code);
      expect({ code, differing: differing.length }).toStrictEqual({ code, differing: 0 });
    }
  });

  it("is byte-identical after a run that exhausted the memory cap", () => {
    const { value, differing } = runAndCompare(`const parts = []; for (;;) parts.push("y".repeat(1 << 20) + parts.length)`, (runtime) => runtime.setMemoryLimit(-1));
    expect(JSON.stringify(value)).toMatch(/out of memory|null/);
    expect(differing).toStrictEqual([]);
  });

  it("is byte-identical after an interrupted run and after a run that left jobs pending", () => {
    let count = 0;
    expect(runAndCompare(`let n = 0; for (;;) n++`, (runtime) => runtime.setInterruptHandler(() => ++count > 5)).differing).toStrictEqual([]);
    const vm = used.acquire();
    const pending = vm.context.evalCode(`for (let i = 0; i < 100; i++) Promise.resolve(i).then((v) => globalThis["p" + v] = v); 0`);
    pending.unwrap().dispose();
    expect(vm.runtime.hasPendingJob()).toBe(true);
    const reached = used.currentBrk;
    used.restore(pristine.templateSeed);
    expect(differences(used.instance.memory, pristine.instance.memory, Math.max(reached, pristine.currentBrk))).toStrictEqual([]);
    expect(used.acquire().runtime.hasPendingJob()).toBe(false);
    used.restore(pristine.templateSeed);
  });

  it("zeroes a single stray byte anywhere in the stack it checks: its first byte, past the compared head, its last", () => {
    // The check compares the range's head with zeroes and the rest with itself one head further
    // on: a byte at either end or at the head's edge must still be found (without a stack limit
    // the whole stack down to its bottom is checked, up to where the template's top is copied back; the
    // 64 KiB chunks are checked again one by one once the whole range is found dirty).
    const memory = new Uint8Array(used.instance.memory.buffer);
    const copied = (used as unknown as { stackCopyFrom: number }).stackCopyFrom;
    expect(copied).toBeGreaterThan(layout.stackLow + 128 * 1024);
    for (const at of [layout.stackLow, layout.stackLow + 4095, layout.stackLow + 4096, layout.stackLow + 65_535, layout.stackLow + 70_000, copied - 4097, copied - 1]) {
      used.acquire().runtime.setMaxStackSize(0);
      memory[at] = 0x5a;
      used.restore(pristine.templateSeed);
      expect({ at, differing: differences(used.instance.memory, pristine.instance.memory, Math.max(used.currentBrk, pristine.currentBrk)) }).toStrictEqual({ at, differing: [] });
    }
  });

  it("keeps nothing of the run before it: globals, prototypes, built-ins, the prelude's closure state", () => {
    evaluate(used, `globalThis.secret = "run 1"; Object.prototype.leak = "proto"; Array.prototype.push = () => 0; Math.max = () => -1; String.prototype.trim = null; 1`);
    used.restore();
    expect(evaluate(used, `[typeof secret, typeof ({}).leak, [1].push(2), Math.max(1, 2), typeof "".trim, typeof text]`)).toStrictEqual(["undefined", "undefined", 2, 2, "function", "function"]);
    used.restore();
  });

  it("draws a new Math.random sequence after every restore", () => {
    const sequences = new Set<string>();
    for (let i = 0; i < 5; i++) {
      sequences.add(JSON.stringify(evaluate(used, `[Math.random(), Math.random()]`)));
      used.restore();
    }
    expect(sequences.size).toBe(5);
  });

  it("gives the set-up's kept handles back to every run, working, and takes per-run configuration through them", () => {
    for (const config of [{ a: 1 }, { b: "two", c: [3] }]) {
      const vm = used.acquire();
      const json = vm.context.newString(JSON.stringify(config));
      const installed = vm.context.callFunction(vm.handles.install, vm.context.undefined, json);
      json.dispose();
      expect(vm.context.getNumber(installed.unwrap())).toBe(Object.keys(config).length);
      installed.unwrap().dispose();
      const seen = vm.context.evalCode(`JSON.stringify([typeof a, typeof b])`);
      expect(vm.context.getString(seen.unwrap())).toBe(JSON.stringify(["a" in config ? "number" : "undefined", "b" in config ? "string" : "undefined"]));
      seen.unwrap().dispose();
      vm.handles.install.dispose();
      used.restore();
    }
  });

  it("is byte-identical after programs that go to the stack limit, in a worker with a large native stack", async () => {
    const programs = [
      `(function down(n) { return down(n + 1) + 1; })(0)`,
      `JSON.parse("[".repeat(200000) + "]".repeat(200000))`,
      // Recursion through native frames: property getters, and string conversion.
      `const o = {}; Object.defineProperty(o, "x", { get() { return this.x; } }); o.x`,
      `const p = { toString() { return "" + this; } }; String(p)`,
      `(function down(n) { try { return down(n + 1); } catch (e) { return n; } })(0)`,
    ];
    const result = await new Promise<{ ok: boolean; reason?: string; outcomes: Array<{ shown: string; differing: number; stackLimit: number }>; stackTop: number }>((resolve, reject) => {
      const worker = new Worker(new URL("../fixtures/snapshot-deep.mjs", import.meta.url), {
        workerData: { memoryBytes: 32 * 1024 * 1024, stackBytes: 1024 * 1024, programs },
        resourceLimits: { stackSizeMb: 32 },
      });
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    expect(result.reason).toBeUndefined();
    expect(result.outcomes.map((outcome) => outcome.differing)).toStrictEqual([0, 0, 0, 0, 0]);
    expect(result.outcomes[0].shown).toBe("InternalError: stack overflow");
    // The limit held the runs to 1 MiB below the runtime's stack top.
    expect(result.stackTop - result.outcomes[0].stackLimit).toBeGreaterThanOrEqual(1024 * 1024);
  });
});

describe("unsupported and misuse", () => {
  it("refuses an instance that already made a runtime, and acquiring twice without a restore", async () => {
    const instance = await newWasmInstance(PAGES);
    instance.module.newRuntime();
    expect(() => InstanceSnapshot.create(instance, layout, setup)).toThrow(new SnapshotUnsupported("the instance has been used before: a template needs a fresh one"));
    used.acquire();
    expect(() => used.acquire()).toThrow("acquire() twice without a restore() in between");
    used.restore(pristine.templateSeed);
  });

  it("refuses a set-up that leaves a pending job", async () => {
    const instance = await newWasmInstance(PAGES);
    expect(() =>
      InstanceSnapshot.create(instance, layout, ({ context }) => {
        context.evalCode(`Promise.resolve().then(() => 1)`).unwrap().dispose();
      }),
    ).toThrow(new SnapshotUnsupported("the template's set-up left a pending job"));
  });

  it("answers unsupported, with the reason, when the self-test's set-up fails", async () => {
    const start = await startSnapshots(PAGES, () => {
      throw new Error("no prelude");
    });
    expect(start).toStrictEqual({ ok: false, reason: "the snapshot self-test failed: no prelude" });
  });

  it("fails the self-test when the layout is wrong: a heap that starts later than it does is not all put back", async () => {
    const wrong = { ...layout, heapBase: layout.heapBase + 4096 };
    const start = await startSnapshots(PAGES, setup, wrong);
    expect(start.ok).toBe(false);
    if (!start.ok) expect(start.reason).toMatch(/^a restored instance differs from a never-used one at \d+ bytes/);
  });

  it("refuses binaries it cannot lay out: own memory, several mutable globals, an exported stack pointer, computed data offsets", () => {
    const header = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
    const module = (...sections: number[][]) => Uint8Array.from([...header, ...sections.flat()]);
    const importMemory = [2, 8, 1, 1, 0x65, 1, 0x6d, 2, 0, 1];
    const oneGlobal = [6, 6, 1, 0x7f, 1, 0x41, 0x20, 0x0b]; // (global (mut i32) (i32.const 32))
    const data = [11, 8, 1, 0, 0x41, 0x08, 0x0b, 2, 0x20, 0]; // 32 stored at 8: a heap-base word
    expect(() => binaryLayout(module(oneGlobal, data))).toThrow("the module defines its own memory instead of importing it");
    expect(() => binaryLayout(module(importMemory, [6, 11, 2, 0x7f, 1, 0x41, 0x20, 0x0b, 0x7f, 1, 0x41, 0, 0x0b], data))).toThrow(
      "the module has 2 mutable globals; only the stack pointer was expected",
    );
    expect(() => binaryLayout(module(importMemory, oneGlobal, [7, 6, 1, 2, 0x73, 0x70, 3, 0], data))).toThrow("the stack pointer is exported (something outside may move it)");
    expect(() => binaryLayout(module(importMemory, oneGlobal, [11, 8, 1, 0, 0x23, 0x00, 0x0b, 2, 0x20, 0]))).toThrow("a data segment is passive or has a computed offset");
    expect(binaryLayout(module(importMemory, oneGlobal, data))).toStrictEqual({ stackTop: 32, dataEnd: 10, brkCandidates: new Map([[8, 32]]) });
  });

  it("marks the instance dead when a run leaves the heap's break where no restore can trust it", async () => {
    const start = await startSnapshots(PAGES, setup);
    if (!start.ok) throw new Error(start.reason);
    const [victim] = start.snapshots;
    victim.acquire();
    new Uint32Array(victim.instance.memory.buffer)[layout.brkAddress >> 2] = 16;
    expect(() => victim.restore()).toThrow("the heap's break (16) is outside what a restore can trust");
    expect(victim.instance.dead).toBe(true);
    expect(() => victim.acquire()).toThrow("the instance is dead");
  });

  it("derives the layout once per process", async () => {
    expect(await memoryLayout()).toBe(layout);
  });
});
