// The compiled QuickJS WebAssembly module, one per process. A WebAssembly.Module sent to a worker
// shares its code with it — and the optimised tiers V8 compiles while it runs — so a worker that
// replaces another (see engine.ts: workers that hold too much memory are replaced) starts at full
// speed instead of on baseline code (a 64 MiB allocation loop ran 3-4x slower in a fresh worker
// that compiled the module itself). Kept apart from wasm-instance.ts so the host thread does not
// load quickjs-emscripten just to compile.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

let compiled: WebAssembly.Module | undefined;

export function compiledModule(): WebAssembly.Module {
  if (!compiled) {
    const require = createRequire(import.meta.url);
    compiled = new WebAssembly.Module(readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm")));
  }
  return compiled;
}

/** A worker adopts the module its host compiled. */
export function useCompiledModule(module: WebAssembly.Module): void {
  compiled = module;
}
