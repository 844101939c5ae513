// Snapshot-fresh QuickJS instances. A WASM instance's whole state is its linear memory (plus one
// global, the C stack pointer, which is back at its initial value whenever no call is running).
// So a template — a fresh runtime, a context and the static part of the prelude — is copied out
// of memory once, and after every run the used part of memory is put back: the next run starts
// from a state byte-identical to a never-used one, for a few tens of microseconds instead of the
// ~0.7 ms a new runtime, context and prelude cost.
//
// Nothing here is hard-coded: the layout is derived from the binary (its data segments and its
// one global) and from a throwaway probe instance (where the allocator keeps its break, where the
// C library records the stack, where QuickJS keeps a runtime's stack limit and a context's
// Math.random state), then checked by a self-test. Any surprise is an `unsupported` answer with a
// reason, so the caller falls back to fresh runtimes.
//
// Memory, low to high (this build: static 88 KB, stack 5 MiB, then the heap):
//   [0, stackLow)         data segments and zeroed statics: the allocator's state, the break
//   [stackLow, stackTop)  the C stack, growing down from stackTop
//   [heapBase, break)     the heap; the break only grows (this allocator never trims)
// A restore copies the template's static bytes, its heap and the top of its stack; zeroes what
// the run added above the template's break; and zeroes whatever the run left on the stack below
// the template's part, down to the deepest point QuickJS's stack limit allowed it to reach.
//
// Building runtime and context handles around the restored pointers relies on quickjs-emscripten
// internals (the module's ffi and callbacks, the runtime's host-reference map and context map).
// The version is pinned (SUPPORTED_VERSION) and test/engine/snapshot.test.ts pins each internal.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { Lifetime, QuickJSContext, QuickJSRuntime, type QuickJSHandle } from "quickjs-emscripten-core";
import { readWasmBinary } from "./wasm-binary.js";
import { newWasmInstance, type WasmInstance } from "./wasm-instance.js";

/** The quickjs-emscripten release whose internals this module was written and tested against. */
export const SUPPORTED_VERSION = "0.32.0";

/** Where the build keeps what a restore must know, derived once per process. */
export interface MemoryLayout {
  /** End of the static region and bottom of the C stack. */
  stackLow: number;
  /** Initial value of the stack pointer: the top of the C stack, which grows down. */
  stackTop: number;
  /** Start of the heap (the allocator's initial break). */
  heapBase: number;
  /** Address of the allocator's current break (a static word). */
  brkAddress: number;
  /** Offset of `stack_limit` in a JSRuntime (`stack_size` and `stack_top` are the two words before it). */
  runtimeStackLimit: number;
  /** Offset of the 8-byte `random_state` in a JSContext. */
  contextRandomState: number;
  /** The runtime's recorded stack top (where QuickJS measures its stack limit from). */
  runtimeStackTop: number;
  /** The break of an instance that finished starting and made no runtime yet. */
  freshBrk: number;
}

export class SnapshotUnsupported extends Error {
  override readonly name = "SnapshotUnsupported";
}

/** What a template's set-up may keep: handles that every restored run gets back, by name. */
export type KeptHandles = Record<string, QuickJSHandle>;

/**
 * Builds the template in a fresh runtime and context: typically evaluates the static part of the
 * prelude and creates host functions (their implementations must not hold on to this template's
 * runtime or context: each run gets new handles). It must leave no pending job, and no handle
 * alive except the ones it returns.
 */
export type TemplateSetup = (vm: { runtime: QuickJSRuntime; context: QuickJSContext }) => KeptHandles | void;

/** A runtime and context around a restored state; valid until the next restore. */
export interface RestoredVm {
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  /** The handles the set-up kept, valid in this run (disposing them is allowed and harmless). */
  handles: KeptHandles;
}

/** Bytes of the template's stack copied back whole; below it, the stack is checked for zeroes. */
const STACK_COPY_MARGIN = 64 * 1024;
/** How far below QuickJS's stack limit C code may still write (native helpers that do not check). */
const STACK_SLACK = 256 * 1024;
/** Zero-checks below the template's stack go in chunks of this size once one is found dirty. */
const CLEAR_CHUNK = 64 * 1024;
const PROBE_ALLOCATION = 1024 * 1024;
/** Bytes at the start of a range compared with zeroes by `isZero`; the rest is compared with itself. */
const ZERO_HEAD = 4096;
const HEAD_ZEROES = Buffer.alloc(ZERO_HEAD);

// ---- internals of quickjs-emscripten 0.32 that this module uses ---------------------------------

interface EmscriptenInternals {
  HEAPU8: Uint8Array;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
}

/** What a QuickJSWASMModule keeps in its protected fields. */
interface ModuleInternals {
  ffi: unknown;
  callbacks: unknown;
  module: EmscriptenInternals;
}

interface HostRefMapInternals {
  put(value: object): number;
}

interface RuntimeInternals {
  rt: Lifetime<number>;
  hostRefs: HostRefMapInternals;
  contextMap: Map<number, QuickJSContext>;
  context: QuickJSContext | undefined;
}

interface ContextInternals {
  ctx: Lifetime<number>;
  getMemory(rt: number): { heapValueHandle(pointer: number): QuickJSHandle };
}

type RuntimeConstructorArgs = ConstructorParameters<typeof QuickJSRuntime>[0];
type ContextConstructorArgs = ConstructorParameters<typeof QuickJSContext>[0];

function moduleInternals(instance: WasmInstance): ModuleInternals {
  const internals = instance.module as unknown as Partial<ModuleInternals>;
  const em = internals.module;
  if (!internals.ffi || !internals.callbacks || !em || typeof em._malloc !== "function" || typeof em._free !== "function" || !(em.HEAPU8 instanceof Uint8Array)) {
    throw new SnapshotUnsupported("quickjs-emscripten's module no longer exposes ffi, callbacks and the Emscripten module");
  }
  return internals as ModuleInternals;
}

function pointerOf(lifetime: unknown): number {
  const value = (lifetime as Lifetime<number> | undefined)?.value;
  if (typeof value !== "number" || value <= 0) throw new SnapshotUnsupported("a runtime or context handle does not carry its C pointer");
  return value;
}

function installedVersions(): Record<string, string | undefined> {
  const require = createRequire(import.meta.url);
  const versions: Record<string, string | undefined> = {};
  for (const name of ["quickjs-emscripten", "quickjs-emscripten-core", "@jitl/quickjs-wasmfile-release-sync"]) {
    versions[name] = packageVersion(require, name);
  }
  return versions;
}

/** A package's version, from the package.json above its entry point (not every package exports it). */
function packageVersion(require: NodeJS.Require, name: string): string | undefined {
  try {
    let directory = dirname(require.resolve(name));
    for (let depth = 0; depth < 6; depth++, directory = dirname(directory)) {
      const file = join(directory, "package.json");
      if (!existsSync(file)) continue;
      const manifest = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (manifest.name === name) return manifest.version;
    }
  } catch {
    // unresolvable: reported as missing
  }
  return undefined;
}

function wasmBinary(): Uint8Array {
  const require = createRequire(import.meta.url);
  return readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
}

// ---- Math.random ---------------------------------------------------------------------------------

/**
 * Make a context's Math.random continue from `seed` (0 is not a xorshift state: it becomes 1).
 * Used by every restore with a fresh random seed, and when the host asks a run for a given seed.
 */
export function writeRandomState(instance: WasmInstance, layout: MemoryLayout, context: QuickJSContext, seed: bigint): void {
  const ctx = pointerOf((context as unknown as ContextInternals).ctx);
  new DataView(instance.memory.buffer).setBigUint64(ctx + layout.contextRandomState, seed === 0n ? 1n : seed & U64, true);
}

const U64 = (1n << 64n) - 1n;

/** QuickJS's Math.random: one xorshift64* step of `state`; returns the next state and the number. */
export function quickjsRandom(state: bigint): { state: bigint; value: number } {
  let x = state;
  x ^= x >> 12n;
  x = (x ^ (x << 25n)) & U64;
  x ^= x >> 27n;
  const output = (x * 0x2545f4914f6cdd1dn) & U64;
  const bits = new DataView(new ArrayBuffer(8));
  bits.setBigUint64(0, (0x3ffn << 52n) | (output >> 12n), true);
  return { state: x, value: bits.getFloat64(0, true) - 1 };
}

/**
 * Seeds drawn from the OS's generator 256 at a time: one randomFillSync per restore cost ~2 µs of
 * every warm run (a native call and a job object), the same bytes for 256 runs cost as much.
 * Each seed is used once; the pool lives in this thread's memory, out of every guest's reach.
 */
const seedPool = new BigUint64Array(256);
let seedsLeft = 0;
/**
 * node:crypto, loaded at the first draw: imported with the module it was ~4 ms of every new
 * worker's start-up, on a cold start's critical path, and seeds are drawn only once snapshots
 * restore (after the self-test, in the background).
 */
let randomFillSync: ((pool: BigUint64Array) => unknown) | undefined;

function randomSeed(): bigint {
  for (;;) {
    if (seedsLeft === 0) {
      randomFillSync ??= (createRequire(import.meta.url)("node:crypto") as typeof import("node:crypto")).randomFillSync;
      randomFillSync(seedPool);
      seedsLeft = seedPool.length;
    }
    const seed = seedPool[--seedsLeft]!;
    seedPool[seedsLeft] = 0n;
    if (seed !== 0n) return seed; // the state must be non-zero
  }
}

// ---- the layout ----------------------------------------------------------------------------------

function check(condition: boolean, reason: string): asserts condition {
  if (!condition) throw new SnapshotUnsupported(reason);
}

/** Facts of the binary: the stack top and the candidates for the allocator's break. */
export function binaryLayout(bytes: Uint8Array): { stackTop: number; dataEnd: number; brkCandidates: Map<number, number> } {
  const facts = readWasmBinary(bytes);
  check(facts.importsMemory, "the module defines its own memory instead of importing it");
  check(facts.importedGlobals === 0, "the module imports globals");
  const mutable = facts.globals.filter((global) => global.mutable);
  check(mutable.length === 1, `the module has ${mutable.length} mutable globals; only the stack pointer was expected`);
  const [stackPointer] = mutable;
  check(stackPointer.valtype === "i32" && typeof stackPointer.init === "number" && stackPointer.init > 0, "the stack pointer is not an i32 with a constant start");
  check(stackPointer.exports.length === 0, "the stack pointer is exported (something outside may move it)");
  const stackTop = stackPointer.init;
  let dataEnd = 0;
  const brkCandidates = new Map<number, number>();
  for (const segment of facts.dataSegments) {
    check(segment.offset !== undefined, "a data segment is passive or has a computed offset");
    dataEnd = Math.max(dataEnd, segment.offset + segment.bytes.length);
    // The break starts at the heap base, just above the stack: a static word holding such a value.
    const view = new DataView(segment.bytes.buffer, segment.bytes.byteOffset, segment.bytes.byteLength);
    for (let at = (4 - (segment.offset % 4)) % 4; at + 1 <= segment.bytes.length; at += 4) {
      // Trailing zero bytes are not stored: a word may be cut short by the segment's end.
      let value = 0;
      for (let i = 3; i >= 0; i--) value = value * 256 + (at + i < segment.bytes.length ? view.getUint8(at + i) : 0);
      if (value >= stackTop && value < stackTop + 64 * 1024) brkCandidates.set(segment.offset + at, value);
    }
  }
  check(dataEnd < stackTop, "data segments reach past the stack");
  check(brkCandidates.size > 0, "no static word holds a heap base above the stack");
  return { stackTop, dataEnd, brkCandidates };
}

let layoutPromise: Promise<MemoryLayout> | undefined;

/**
 * The memory layout of this build, derived once per process from the binary and a throwaway
 * probe instance. Rejects with SnapshotUnsupported (and a reason) on anything unexpected.
 */
export function memoryLayout(): Promise<MemoryLayout> {
  layoutPromise ??= deriveLayout();
  return layoutPromise;
}

async function deriveLayout(): Promise<MemoryLayout> {
  const versions = installedVersions();
  for (const [name, version] of Object.entries(versions)) {
    check(version === SUPPORTED_VERSION, `${name} is ${version ?? "missing"}; snapshots were built against ${SUPPORTED_VERSION}`);
  }
  const { stackTop, dataEnd, brkCandidates } = binaryLayout(wasmBinary());
  const probe = await newWasmInstance(256);
  const em = moduleInternals(probe).module;
  const words = new Uint32Array(probe.memory.buffer);
  const memoryBytes = probe.memory.buffer.byteLength;

  // The stack's extent, as the C library recorded it for the main thread: its top, then its size.
  // (The allocator also records a segment starting there, with the heap's size, which grows below.)
  const stackRecords = new Map<number, number>();
  for (let index = words.indexOf(stackTop); index >= 0 && index * 4 < stackTop; index = words.indexOf(stackTop, index + 1)) {
    const size = words[index + 1];
    if (size > 0 && size <= stackTop - dataEnd && index * 4 < stackTop - size) stackRecords.set(index + 1, size);
  }

  // The break: the one candidate that moves past a large allocation, and does not move back.
  const before = new Map([...brkCandidates.keys()].map((address) => [address, words[address >> 2]]));
  const block = em._malloc(PROBE_ALLOCATION);
  check(block > stackTop, "the allocator returned memory below the stack");
  const moved = [...before].filter(([address, value]) => words[address >> 2] > value && words[address >> 2] >= block + PROBE_ALLOCATION);
  check(moved.length === 1, `${moved.length} static words followed the heap's growth; expected exactly one break`);
  const [[brkAddress, freshBrk]] = moved;
  const grown = words[brkAddress >> 2];
  em._free(block);
  check(words[brkAddress >> 2] === grown, "the allocator gave memory back (the break moved down); a restore could not know how far the heap reached");
  check(grown <= memoryBytes, "the break is beyond the memory");
  const heapBase = brkCandidates.get(brkAddress)!;

  const stackSizes = [...stackRecords].filter(([index, size]) => words[index] === size).map(([, size]) => size);
  check(stackSizes.length === 1, `found ${stackSizes.length} records of the stack's size; expected one`);
  const stackLow = stackTop - stackSizes[0];
  check(heapBase >= stackTop, "the heap does not start above the stack");

  // A runtime: where it keeps its stack limit, and that the stack pointer is back at its start
  // between calls (the runtime records a stack top a few frames below it, the same every time).
  const runtime = probe.module.newRuntime();
  const rt = pointerOf((runtime as unknown as RuntimeInternals).rt);
  const runtimeStackLimit = findStackLimit(probe, runtime, rt);
  const runtimeStackTop = words[(rt + runtimeStackLimit - 4) >> 2];
  check(runtimeStackTop <= stackTop && stackTop - runtimeStackTop < 64 * 1024, "the runtime's stack top is not near the stack pointer's start");
  const second = probe.module.newRuntime();
  const rt2 = pointerOf((second as unknown as RuntimeInternals).rt);
  check(words[(rt2 + runtimeStackLimit - 4) >> 2] === runtimeStackTop, "two runtimes recorded different stack tops: the stack pointer moves between calls");

  // A context: where its Math.random state lives (seeded from the clock at creation), confirmed
  // by predicting Math.random from a seed written there.
  const startedMs = Date.now();
  const context = runtime.newContext();
  const endedMs = Date.now();
  const ctx = pointerOf((context as unknown as ContextInternals).ctx);
  const memory = new DataView(probe.memory.buffer);
  const hits: number[] = [];
  for (let offset = 0; offset < 2048; offset += 4) {
    const value = memory.getBigUint64(ctx + offset, true);
    if (value >= BigInt(startedMs) * 1000n && value <= BigInt(endedMs + 1) * 1000n) hits.push(offset);
  }
  check(hits.length === 1, `found ${hits.length} clock-seeded words in a new context; expected Math.random's state`);
  const [contextRandomState] = hits;
  const seed = 0x0123456789abcdefn;
  memory.setBigUint64(ctx + contextRandomState, seed, true);
  const drawn = context.evalCode("[Math.random(), Math.random()]");
  check(drawn.error === undefined, "Math.random failed in the probe");
  const values = context.dump(drawn.value) as number[];
  drawn.value.dispose();
  const first = quickjsRandom(seed);
  check(values[0] === first.value && values[1] === quickjsRandom(first.state).value, "Math.random does not follow the state found in the context");
  // The probe instance is thrown away (never disposed: nothing else will use it).
  probe.dead = true;
  return { stackLow, stackTop, heapBase, brkAddress, runtimeStackLimit, contextRandomState, runtimeStackTop, freshBrk };
}

/** The offset of `stack_limit` in a JSRuntime: the word that follows the set size down, with `stack_top` and `stack_size` before it. */
function findStackLimit(probe: WasmInstance, runtime: QuickJSRuntime, rt: number): number {
  const words = new Uint32Array(probe.memory.buffer);
  const span = 1024;
  runtime.setMaxStackSize(1024 * 1024);
  const before = words.slice(rt >> 2, (rt >> 2) + span / 4);
  runtime.setMaxStackSize(2 * 1024 * 1024);
  const after = words.slice(rt >> 2, (rt >> 2) + span / 4);
  runtime.setMaxStackSize(1024 * 1024);
  const offsets: number[] = [];
  for (let i = 2; i < span / 4; i++) {
    const sizeMoved = before[i - 2] === 1024 * 1024 && after[i - 2] === 2 * 1024 * 1024;
    const limitMoved = before[i] === before[i - 1] - 1024 * 1024 && after[i] === after[i - 1] - 2 * 1024 * 1024;
    if (sizeMoved && limitMoved && before[i - 1] === after[i - 1]) offsets.push(i * 4);
  }
  check(offsets.length === 1, `found ${offsets.length} stack-limit fields in a runtime; expected one`);
  return offsets[0];
}

// ---- one instance's snapshot ---------------------------------------------------------------------

/** A template taken from one WASM instance, restored in place after every run. */
export class InstanceSnapshot {
  private readonly heapU8: Uint8Array;
  private readonly words: Uint32Array;
  private readonly view: DataView;
  private readonly memoryBuffer: Buffer;
  private readonly staticBytes: Uint8Array;
  private readonly heapBytes: Uint8Array;
  private readonly stackBytes: Uint8Array;
  /** Start of the stack's top part that is copied back whole. */
  private readonly stackCopyFrom: number;
  private readonly templateBrk: number;
  private readonly rt: number;
  private readonly ctx: number;
  private readonly keptPointers: Array<[string, number]>;
  private readonly hostRefs: Array<[id: number, value: object]>;
  private readonly internals: ModuleInternals;
  private acquired = false;
  /** The template's own Math.random state (clock-seeded when its context was made). */
  readonly templateSeed: bigint;
  restores = 0;

  private constructor(
    readonly instance: WasmInstance,
    readonly layout: MemoryLayout,
    setup: TemplateSetup,
  ) {
    this.internals = moduleInternals(instance);
    const buffer = instance.memory.buffer;
    this.heapU8 = new Uint8Array(buffer);
    this.words = new Uint32Array(buffer);
    this.view = new DataView(buffer);
    this.memoryBuffer = Buffer.from(buffer);
    check(this.internals.module.HEAPU8.buffer === buffer, "the Emscripten module does not use the instance's memory");
    check(this.currentBrk === layout.freshBrk, "the instance has been used before: a template needs a fresh one");

    const runtime = instance.module.newRuntime();
    const runtimeInternals = runtime as unknown as RuntimeInternals;
    const recorded: Array<[number, object]> = [];
    const hostRefs = runtimeInternals.hostRefs;
    check(typeof hostRefs?.put === "function", "the runtime has no host-reference map");
    const put = hostRefs.put;
    hostRefs.put = (value: object) => {
      const id = put.call(hostRefs, value);
      recorded.push([id, value]);
      return id;
    };
    const context = runtime.newContext();
    let kept: KeptHandles;
    try {
      kept = setup({ runtime, context }) ?? {};
    } finally {
      hostRefs.put = put;
    }
    check(!runtime.hasPendingJob(), "the template's set-up left a pending job");
    this.hostRefs = recorded;
    this.rt = pointerOf(runtimeInternals.rt);
    this.ctx = pointerOf((context as unknown as ContextInternals).ctx);
    this.keptPointers = Object.entries(kept).map(([name, handle]) => [name, pointerOf(handle)]);
    check(this.words[(this.rt + layout.runtimeStackLimit - 4) >> 2] === layout.runtimeStackTop, "the template runtime records another stack top than the probe did");

    this.templateBrk = this.words[layout.brkAddress >> 2];
    check(this.templateBrk >= layout.heapBase && this.templateBrk <= buffer.byteLength, "the template's break is outside the heap");
    const deepest = this.lowestNonZero(layout.stackLow, layout.stackTop);
    this.stackCopyFrom = Math.max(layout.stackLow, alignDown((deepest ?? layout.stackTop) - STACK_COPY_MARGIN, 4096));
    this.staticBytes = this.heapU8.slice(0, layout.stackLow);
    this.heapBytes = this.heapU8.slice(layout.heapBase, this.templateBrk);
    this.stackBytes = this.heapU8.slice(this.stackCopyFrom, layout.stackTop);
    this.templateSeed = this.view.getBigUint64(this.ctx + layout.contextRandomState, true);
  }

  /** Take a template in a fresh instance. Throws SnapshotUnsupported when the instance does not fit the layout. */
  static create(instance: WasmInstance, layout: MemoryLayout, setup: TemplateSetup): InstanceSnapshot {
    return new InstanceSnapshot(instance, layout, setup);
  }

  /** Host memory the template takes: its static part, its heap and the top of its stack. */
  get bytes(): number {
    return this.staticBytes.length + this.heapBytes.length + this.stackBytes.length;
  }

  /** The C pointers of the template's runtime and context (the same after every restore). */
  get pointers(): { rt: number; ctx: number } {
    return { rt: this.rt, ctx: this.ctx };
  }

  /**
   * Handles around the current (pristine) state, for one run. Per-run configuration — memory
   * limit, stack size, interrupt handler, the prelude's per-run part — is installed by the caller.
   * Call restore() before acquiring again.
   */
  acquire(): RestoredVm {
    if (this.instance.dead) throw new Error("the instance is dead");
    if (this.acquired) throw new Error("acquire() twice without a restore() in between");
    this.acquired = true;
    const { module: em, ffi, callbacks } = this.internals;
    // Disposing these handles must not free the runtime or context in C: the restore puts the
    // memory back instead (and freeing a runtime with live objects would abort the module).
    const rt = new Lifetime(this.rt, undefined, () => {});
    const runtime = new QuickJSRuntime({ module: em, ffi, rt, callbacks } as unknown as RuntimeConstructorArgs);
    const runtimeInternals = runtime as unknown as RuntimeInternals;
    // The template's host functions carry their ids inside the guest; a fresh map hands out the
    // same ids in the same order.
    for (const [id, value] of this.hostRefs) {
      const given = runtimeInternals.hostRefs.put(value);
      check(given === id, `a host function got id ${given} instead of the template's ${id}`);
    }
    const ctx = new Lifetime(this.ctx, undefined, () => runtimeInternals.contextMap.delete(this.ctx));
    const context = new QuickJSContext({ module: em, ffi, ctx, rt, runtime, callbacks } as unknown as ContextConstructorArgs);
    runtimeInternals.contextMap.set(this.ctx, context);
    runtimeInternals.context = context;
    const memory = (context as unknown as ContextInternals).getMemory(this.rt);
    const handles: KeptHandles = {};
    for (const [name, pointer] of this.keptPointers) handles[name] = memory.heapValueHandle(pointer);
    return { runtime, context, handles };
  }

  /**
   * Put the template back: afterwards memory is byte-identical to the template's except for
   * Math.random's state, which gets `seed` (a fresh random one by default). Throws (and marks
   * the instance dead) when the run left memory in a shape no restore can trust.
   */
  restore(seed: bigint = randomSeed()): void {
    const { layout, heapU8, words } = this;
    if (this.instance.dead) throw new Error("the instance is dead and cannot be restored");
    const brk = words[layout.brkAddress >> 2];
    if (brk < this.templateBrk || brk > heapU8.length) {
      this.instance.dead = true;
      throw new Error(`the heap's break (${brk}) is outside what a restore can trust`);
    }
    // How deep the run's stack may have gone: QuickJS's limit (read before the heap is put back).
    const limit = words[(this.rt + layout.runtimeStackLimit) >> 2];
    const floor = limit === 0 || limit < layout.stackLow || limit > layout.stackTop ? layout.stackLow : Math.max(layout.stackLow, limit - STACK_SLACK);
    if (brk > this.templateBrk) heapU8.fill(0, this.templateBrk, brk);
    heapU8.set(this.heapBytes, layout.heapBase);
    heapU8.set(this.staticBytes, 0);
    heapU8.set(this.stackBytes, this.stackCopyFrom);
    if (floor < this.stackCopyFrom) this.clearStack(floor, this.stackCopyFrom);
    this.view.setBigUint64(this.ctx + layout.contextRandomState, seed === 0n ? 1n : seed & U64, true);
    this.acquired = false;
    this.restores++;
  }

  /** The allocator's break now: how far the heap reaches. */
  get currentBrk(): number {
    return this.words[this.layout.brkAddress >> 2];
  }

  /** Zero every non-zero byte in [from, to), reading (not writing) the pages that are already zero. */
  private clearStack(from: number, to: number): void {
    if (this.isZero(from, to)) return;
    for (let start = from; start < to; start += CLEAR_CHUNK) {
      const end = Math.min(to, start + CLEAR_CHUNK);
      if (!this.isZero(start, end)) this.heapU8.fill(0, start, end);
    }
  }

  /**
   * Whether [from, to) holds only zeroes: its first ZERO_HEAD bytes compared with zeroes, then the
   * range compared with itself ZERO_HEAD bytes further on. Equal means every byte equals the one
   * ZERO_HEAD before it, so by induction from the zero head every byte is zero. Comparing with a
   * buffer of zeroes as long as the range (~1.2 MiB for a 1 MiB stack limit) read twice the
   * memory: that buffer's pages are real ones, while stack pages a run never wrote all read
   * the kernel's one zero page. Measured: 20 → 13 µs alone, and a warm run back to back
   * spends far less than that buffer's cache pollution cost it (docs/performance.md).
   */
  private isZero(from: number, to: number): boolean {
    const head = Math.min(to - from, ZERO_HEAD);
    if (this.memoryBuffer.compare(HEAD_ZEROES, 0, head, from, from + head) !== 0) return false;
    return from + head === to || this.memoryBuffer.compare(this.memoryBuffer, from + head, to, from, to - head) === 0;
  }

  private lowestNonZero(from: number, to: number): number | undefined {
    for (let start = from; start < to; start += CLEAR_CHUNK) {
      const end = Math.min(to, start + CLEAR_CHUNK);
      if (this.isZero(start, end)) continue;
      for (let at = start; at < end; at++) if (this.heapU8[at] !== 0) return at;
    }
    return undefined;
  }
}

function alignDown(value: number, alignment: number): number {
  return value - (value % alignment);
}

// ---- start-up ------------------------------------------------------------------------------------

export type SnapshotStart = { ok: true; layout: MemoryLayout; snapshots: [InstanceSnapshot, InstanceSnapshot]; selfTestMs: number } | { ok: false; reason: string };

/** A program that touches what a run can touch: heap, globals, prototypes, Math.random, the stack. */
const DIRTYING_PROGRAM = `
  globalThis.leftover = { big: "x".repeat(300000), list: Array.from({ length: 5000 }, (_, i) => ({ i })) };
  Object.prototype.polluted = 1; Array.prototype.push = null; Math.random(); Math.random();
  (function down(n) { return n === 0 ? 0 : 1 + down(n - 1); })(2000);
  JSON.stringify(leftover).length`;

/**
 * Derive the layout, take templates in two fresh instances and check them: they must differ only
 * in Math.random's state, and a dirtied instance restored with the other's seed must be
 * byte-identical to it. On success the two snapshots are ready to serve runs; on any surprise the
 * answer says why, and the caller takes the ordinary path (fresh runtime per run).
 */
export async function startSnapshots(maxPages: number, setup: TemplateSetup, layoutOverride?: MemoryLayout): Promise<SnapshotStart> {
  const started = performance.now();
  try {
    // The override exists for tests: a wrong layout must fail the self-test.
    const layout = layoutOverride ?? (await memoryLayout());
    const [a, b] = await Promise.all([newWasmInstance(maxPages), newWasmInstance(maxPages)]);
    const first = InstanceSnapshot.create(a, layout, setup);
    const second = InstanceSnapshot.create(b, layout, setup);
    const ctx = first.pointers.ctx;
    check(ctx === second.pointers.ctx && first.pointers.rt === second.pointers.rt, "two templates put their runtime or context at different addresses");
    const seedFrom = ctx + layout.contextRandomState;
    const differing = differences(a.memory, b.memory, Math.max(first.currentBrk, second.currentBrk));
    check(
      differing.every((at) => at >= seedFrom && at < seedFrom + 8),
      `two templates differ outside Math.random's state (first at ${differing.find((at) => at < seedFrom || at >= seedFrom + 8)})`,
    );

    const vm = first.acquire();
    vm.runtime.setMaxStackSize(1024 * 1024);
    const result = vm.context.evalCode(DIRTYING_PROGRAM);
    check(result.error === undefined, "the self-test program failed in a template");
    result.value.dispose();
    const reached = first.currentBrk;
    first.restore(second.templateSeed);
    const after = differences(a.memory, b.memory, Math.max(reached, second.currentBrk));
    check(after.length === 0, `a restored instance differs from a never-used one at ${after.length} bytes (first at ${after[0]})`);
    first.restore(first.templateSeed);
    return { ok: true, layout, snapshots: [first, second], selfTestMs: performance.now() - started };
  } catch (error) {
    if (error instanceof SnapshotUnsupported) return { ok: false, reason: error.message };
    return { ok: false, reason: `the snapshot self-test failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** Byte offsets in [0, end) where two memories differ. */
export function differences(a: WebAssembly.Memory, b: WebAssembly.Memory, end: number): number[] {
  const left = Buffer.from(a.buffer, 0, end);
  const right = Buffer.from(b.buffer, 0, end);
  if (left.equals(right)) return [];
  const found: number[] = [];
  for (let start = 0; start < end; start += CLEAR_CHUNK) {
    const stop = Math.min(end, start + CLEAR_CHUNK);
    if (left.compare(right, start, stop, start, stop) === 0) continue;
    for (let at = start; at < stop; at++) if (left[at] !== right[at]) found.push(at);
  }
  return found;
}
