// QuickJS module instances with a real memory cap.
//
// QuickJS's own memory limit counts ordinary heap objects only; large strings and typed arrays
// slip past it and linear memory never shrinks. So every instance gets its own fixed
// `WebAssembly.Memory` whose `maximum` is the cap: past it, allocation fails inside the guest
// and the program sees an out-of-memory error while the host is untouched. The compiled
// `WebAssembly.Module` is shared, so a new instance costs about a millisecond, not a compile.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSSyncVariant, type QuickJSWASMModule } from "quickjs-emscripten";
import releaseSyncImport from "@jitl/quickjs-wasmfile-release-sync";

// The package's types describe its CommonJS face; under ESM the default export is the variant itself.
const releaseSyncVariant = releaseSyncImport as unknown as QuickJSSyncVariant;

const PAGE_BYTES = 64 * 1024;
/** QuickJS's static data and C stack live in linear memory too; the module needs 16 MiB to start. */
const MIN_PAGES = 256;
/** Room for the C stack, static data and allocator slack above the guest's own heap. */
const OVERHEAD_BYTES = 16 * 1024 * 1024;

let compiled: WebAssembly.Module | undefined;

function compiledModule(): WebAssembly.Module {
  if (!compiled) {
    const require = createRequire(import.meta.url);
    compiled = new WebAssembly.Module(readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")));
  }
  return compiled;
}

/** Number of 64 KiB pages for an instance whose guest may use `memoryBytes`. */
export function pagesFor(memoryBytes: number): number {
  return Math.max(MIN_PAGES, Math.ceil((memoryBytes + OVERHEAD_BYTES) / PAGE_BYTES));
}

export interface WasmInstance {
  readonly module: QuickJSWASMModule;
  readonly memory: WebAssembly.Memory;
  readonly maxPages: number;
  /** Set once the instance trapped or failed to tear down a runtime: it must not run again. */
  dead: boolean;
  runs: number;
  /**
   * Times the allocator asked for more linear memory than the cap: the heap was exhausted. QuickJS
   * then often cannot build even its error object and throws null, so this is how a run tells an
   * out-of-memory null from a program's own `throw null`.
   */
  heapExhausted: number;
  /** The allocator's break when the instance was made (see heapTop). */
  baseTop: number;
}

/** Where the allocator keeps its break in linear memory, found once per thread (null: not found). */
let breakAddress: number | null | undefined;
/** How much the probe allocates, and how far into linear memory it looks for the break. */
const PROBE_ALLOC = 1024 * 1024;
const PROBE_BYTES = 1024 * 1024;

/**
 * The top of the heap the guest's allocator has ever used: linear memory above it was never
 * touched, and memory below it stays resident for the instance's life (it never shrinks). This is
 * what a warm instance costs the host; undefined when the break could not be found.
 */
export function heapTop(instance: WasmInstance): number | undefined {
  if (!breakAddress) return undefined;
  return new Uint32Array(instance.memory.buffer, breakAddress, 1)[0];
}

/**
 * The allocator's break is a static word in linear memory that the build does not export. It is
 * found by watching memory while a throwaway runtime allocates: the word that grows by the
 * allocation (and stays there once it is freed — the break never moves down) is the one. If a
 * future build lays memory out otherwise and no word fits, heapTop answers undefined.
 */
function findBreak(instance: WasmInstance): number | null {
  const words = (): Uint32Array => new Uint32Array(instance.memory.buffer, 0, PROBE_BYTES / 4).slice();
  const runtime = instance.module.newRuntime();
  const context = runtime.newContext();
  const run = (code: string): void => {
    const result = context.evalCode(code);
    ("error" in result && result.error ? result.error : (result as { value: { dispose(): void } }).value).dispose();
  };
  try {
    const before = words();
    run(`globalThis.probe = "x".repeat(${PROBE_ALLOC})`);
    const grown = words();
    run(`globalThis.probe = undefined`);
    const freed = words();
    let found: number | null = null;
    for (let i = 0; i < before.length; i++) {
      const delta = grown[i]! - before[i]!;
      const fits = delta >= PROBE_ALLOC && delta <= 2 * PROBE_ALLOC && freed[i] === grown[i] && grown[i]! <= instance.memory.buffer.byteLength && before[i]! >= PAGE_BYTES;
      // Several words qualify (the break, the allocator's footprint counters): the break is the highest.
      if (fits && (found === null || before[i]! > before[found]!)) found = i;
    }
    return found === null ? null : found * 4;
  } finally {
    context.dispose();
    runtime.dispose();
  }
}

export async function newWasmInstance(maxPages: number): Promise<WasmInstance> {
  // The whole cap up front: memory that never grows never detaches its ArrayBuffer. quickjs-emscripten
  // keeps typed-array views of linear memory across calls that allocate (newPromise reads one after
  // QTS_NewPromiseCapability), and a growth in between threw a host TypeError into the guest and
  // leaked the handles, aborting the module on dispose. Untouched pages cost no resident memory.
  const memory = new WebAssembly.Memory({ initial: maxPages, maximum: maxPages });
  const variant = newVariant(releaseSyncVariant, { wasmModule: compiledModule(), wasmMemory: memory });
  const module = await newQuickJSWASMModuleFromVariant(variant);
  const instance: WasmInstance = { module, memory, maxPages, dead: false, runs: 0, heapExhausted: 0, baseTop: 0 };
  // Memory allocated whole can only fail to grow: each attempt is the allocator running out.
  const grow = memory.grow.bind(memory);
  Object.defineProperty(memory, "grow", {
    value: (delta: number) => {
      instance.heapExhausted++;
      return grow(delta);
    },
  });
  if (breakAddress === undefined) breakAddress = findBreak(instance);
  instance.baseTop = heapTop(instance) ?? 0;
  return instance;
}
