// QuickJS module instances with a real memory cap.
//
// QuickJS's own memory limit counts ordinary heap objects only; large strings and typed arrays
// slip past it and linear memory never shrinks. So every instance gets its own fixed
// `WebAssembly.Memory` whose `maximum` is the cap: past it, allocation fails inside the guest
// and the program sees an out-of-memory error while the host is untouched. The compiled
// `WebAssembly.Module` is shared, so a new instance costs milliseconds of set-up (mostly the
// emscripten glue), not a compile.
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSSyncVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";
import releaseSyncImport from "@jitl/quickjs-wasmfile-release-sync";
import { compiledModule } from "./wasm-module.js";

// The package's types describe its CommonJS face; under ESM the default export is the variant itself.
const releaseSyncVariant = releaseSyncImport as unknown as QuickJSSyncVariant;

const PAGE_BYTES = 64 * 1024;
/** QuickJS's static data and C stack live in linear memory too; the module needs 16 MiB to start. */
const MIN_PAGES = 256;
/** Room for the C stack, static data and allocator slack above the guest's own heap. */
const OVERHEAD_BYTES = 16 * 1024 * 1024;

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
}

export async function newWasmInstance(maxPages: number): Promise<WasmInstance> {
  // The whole cap up front: memory that never grows never detaches its ArrayBuffer. quickjs-emscripten
  // keeps typed-array views of linear memory across calls that allocate (newPromise reads one after
  // QTS_NewPromiseCapability), and a growth in between threw a host TypeError into the guest and
  // leaked the handles, aborting the module on dispose. Untouched pages cost no resident memory.
  const memory = new WebAssembly.Memory({ initial: maxPages, maximum: maxPages });
  const variant = newVariant(releaseSyncVariant, { wasmModule: compiledModule(), wasmMemory: memory });
  const module = await newQuickJSWASMModuleFromVariant(variant);
  const instance: WasmInstance = { module, memory, maxPages, dead: false, runs: 0, heapExhausted: 0 };
  // Memory allocated whole can only fail to grow: each attempt is the allocator running out.
  const grow = memory.grow.bind(memory);
  Object.defineProperty(memory, "grow", {
    value: (delta: number) => {
      instance.heapExhausted++;
      return grow(delta);
    },
  });
  return instance;
}
