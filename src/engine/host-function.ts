// The guest's one host function, called without quickjs-emscripten's per-call wrapper.
//
// The library runs every host function call through a generator-based Scope (built for
// asyncified functions), with a managed handle for `this` and for every argument: in a loop of
// tool calls that wrapper cost several times what the call itself does (profiled: ~4x the
// bridge's own work per call). This build is the sync one, so none of it is needed: the
// arguments are borrowed for the duration of the call, and the result is handed back owned.
// `newHostFunction` makes a function that works through the library as usual; `callDirectly`
// then routes the calls of such functions in one context straight to their implementation. It
// reaches into the context's C-to-host callbacks, so it checks they are there (the version is
// pinned) and leaves the library's path in place otherwise.
import { StaticLifetime, type QuickJSContext, type QuickJSHandle } from "quickjs-emscripten-core";

export type HostFunction = (args: QuickJSHandle[]) => QuickJSHandle | undefined;

/** The implementations of the functions newHostFunction made, by the function the library holds. */
const implementations = new WeakMap<object, HostFunction>();

/** A guest function whose calls go to `call` (directly, once callDirectly has run for its context). */
export function newHostFunction(context: QuickJSContext, name: string, call: HostFunction): QuickJSHandle {
  const viaLibrary = (...args: QuickJSHandle[]) => call(args);
  implementations.set(viaLibrary, call);
  return context.newFunction(name, viaLibrary);
}

type CallFunction = (ctx: number, thisPointer: number, argc: number, argv: number, fnId: number) => number;

interface ContextInternals {
  cToHostCallbacks?: { callFunction?: CallFunction };
  ctx?: { value: number };
  runtime?: unknown;
  ffi?: {
    QTS_ArgvGetJSValueConstPointer?(argv: number, index: number): number;
    QTS_DupValuePointer?(ctx: number, value: number): number;
    QTS_Throw?(ctx: number, error: number): number;
  };
  getFunction?(fnId: number): unknown;
  errorToHandle?(error: unknown): QuickJSHandle;
}

/**
 * Route this context's calls of newHostFunction's functions straight to their implementations
 * (other host functions keep the library's path). False when the internals it needs are not
 * there: the library's path then serves every call, as before.
 */
export function callDirectly(context: QuickJSContext): boolean {
  const internals = context as unknown as ContextInternals;
  const callbacks = internals.cToHostCallbacks;
  const { ffi, ctx, runtime } = internals;
  const original = callbacks?.callFunction;
  if (
    !callbacks ||
    typeof original !== "function" ||
    typeof ctx?.value !== "number" ||
    !runtime ||
    !ffi?.QTS_ArgvGetJSValueConstPointer ||
    !ffi.QTS_DupValuePointer ||
    !ffi.QTS_Throw ||
    typeof internals.getFunction !== "function" ||
    typeof internals.errorToHandle !== "function"
  ) {
    return false;
  }
  const argvPointer = ffi.QTS_ArgvGetJSValueConstPointer;
  const dup = ffi.QTS_DupValuePointer;
  const raise = ffi.QTS_Throw;
  const ctxPointer = ctx.value;
  callbacks.callFunction = (calledCtx, thisPointer, argc, argv, fnId) => {
    const call = calledCtx === ctxPointer ? implementations.get(internals.getFunction!.call(context, fnId) as object) : undefined;
    if (!call) return original.call(callbacks, calledCtx, thisPointer, argc, argv, fnId);
    // Borrowed: the values live in the caller's frame for the whole call, and nothing keeps these.
    const args = new Array<QuickJSHandle>(argc);
    for (let i = 0; i < argc; i++) args[i] = new StaticLifetime(argvPointer(argv, i), runtime) as unknown as QuickJSHandle;
    try {
      const result = call(args);
      if (!result) return 0;
      try {
        return dup(ctxPointer, result.value as unknown as number);
      } finally {
        result.dispose();
      }
    } catch (error) {
      return internals.errorToHandle!.call(context, error).consume((handle) => raise(ctxPointer, handle.value as unknown as number));
    }
  };
  return true;
}
