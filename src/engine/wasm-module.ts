// The compiled QuickJS WebAssembly module, one per process. A WebAssembly.Module sent to a worker
// shares its code with it — and the optimised tiers V8 compiles while it runs — so a worker that
// replaces another (see engine.ts: workers that hold too much memory are replaced) starts at full
// speed instead of on baseline code (a 64 MiB allocation loop ran 3-4x slower in a fresh worker
// that compiled the module itself). Kept apart from wasm-instance.ts so the host thread does not
// load quickjs-emscripten just to compile.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { setFlagsFromString } from "node:v8";

let compiled: WebAssembly.Module | undefined;

function wasmPath(): string {
  return createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
}

/**
 * The module, compiled now on this thread if nobody has yet. The host compiles it right after it
 * started its first worker, while that thread boots (synchronously, where an async
 * WebAssembly.compile competing with the booting worker for two cores took 50-100 ms).
 *
 * Every function is compiled now, not at its first call. V8 compiles WASM lazily by default, and
 * a lazily compiled function is compiled on the thread that first calls it, one at a time: the
 * worker's first runtime, context and prelude then spent 40-65 ms compiling QuickJS's code, on a
 * cold start's critical path. Compiled up front it is ~20 ms more here (V8 spreads it over its
 * background threads too) and the worker's first VM takes ~20 instead of ~50 (docs/performance.md,
 * "Cold start"); the worker shares the compiled code (and so does every later worker).
 */
export function compiledModule(): WebAssembly.Module {
  if (compiled) return compiled;
  const bytes = readFileSync(wasmPath());
  const eager = !wasmLazinessChosen() && setLazyCompilation(false);
  try {
    compiled = new WebAssembly.Module(bytes);
  } finally {
    if (eager) setLazyCompilation(true);
  }
  return compiled;
}

/**
 * Node has no per-compile option for this, only V8's process-wide flag, so it is switched for
 * this one synchronous compile and back to V8's default right after. That is sound because the
 * flag decides only when V8 compiles a function, never what the code does: anything else
 * compiled on another thread in those milliseconds is compiled up front too and behaves the same.
 * A process started with its own choice (on its command line: NODE_OPTIONS refuses the flag) is
 * left as it is. One that set the flag at run time (v8.setFlagsFromString, which cannot be read
 * back) gets V8's default back, again a matter of speed only. Where V8 refuses the change, the
 * compile is lazy.
 */
function setLazyCompilation(lazy: boolean): boolean {
  try {
    setFlagsFromString(lazy ? "--wasm-lazy-compilation" : "--no-wasm-lazy-compilation");
    return true;
  } catch {
    return false;
  }
}

/** The process was started with its own choice of WASM lazy compilation. */
function wasmLazinessChosen(): boolean {
  return process.execArgv.some((flag) => /^--(no-)?wasm[-_]lazy[-_]compilation(=|$)/.test(flag));
}

/** The module if it is compiled already. */
export function moduleIfCompiled(): WebAssembly.Module | undefined {
  return compiled;
}

/** A worker adopts the module its host compiled. */
export function useCompiledModule(module: WebAssembly.Module): void {
  compiled = module;
}
