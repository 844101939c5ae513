// The compiled QuickJS WebAssembly module, one per process. A WebAssembly.Module sent to a worker
// shares its code with it — and the optimised tiers V8 compiles while it runs — so a worker that
// replaces another (see engine.ts: workers that hold too much memory are replaced) starts at full
// speed instead of on baseline code (a 64 MiB allocation loop ran 3-4x slower in a fresh worker
// that compiled the module itself). Kept apart from wasm-instance.ts so the host thread does not
// load quickjs-emscripten just to compile.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

let compiled: WebAssembly.Module | undefined;

function wasmPath(): string {
  return createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
}

/**
 * The module, compiled now on this thread if nobody has yet. The host compiles it right after it
 * started its first worker, while that thread boots (synchronously: ~10 ms, where an async
 * WebAssembly.compile competing with the booting worker for two cores took 50-100 ms).
 */
export function compiledModule(): WebAssembly.Module {
  return (compiled ??= new WebAssembly.Module(readFileSync(wasmPath())));
}

/** The module if it is compiled already. */
export function moduleIfCompiled(): WebAssembly.Module | undefined {
  return compiled;
}

/** A worker adopts the module its host compiled. */
export function useCompiledModule(module: WebAssembly.Module): void {
  compiled = module;
}
