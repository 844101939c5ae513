// Strings across the wall, checked for an exhausted guest heap.
//
// quickjs-emscripten's newString and getString do not check the allocator: when the heap is
// exhausted newString writes the string to address 0, over QuickJS's static data (a later run of
// that instance traps, "memory access out of bounds"), and getString reads a failed C copy as ""
// (a store() of a large value wrote `"k": ` with no value into the session file). Every string
// the worker moves goes through here instead: an allocation that fails throws
// GuestHeapExhausted, which ends the run as out of memory before anything acts on the string.
// This reaches into the context's module, FFI and memory helpers, so it checks they are there
// (the version is pinned; test/engine/guest-strings.test.ts checks the internals) and falls back
// to the library's calls otherwise. It is also the fast path for large strings: Node's native
// encoder writes straight into linear memory, where Emscripten's loops took ~5 ms per MB.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";

interface ContextInternals {
  module?: { _malloc(bytes: number): number; _free(pointer: number): void; HEAPU8: Uint8Array; stringToUTF8(value: string, pointer: number, max: number): void };
  ffi?: { QTS_NewString(ctx: number, pointer: number): number; QTS_GetString(ctx: number, value: number): number };
  memory?: { heapValueHandle(pointer: number): QuickJSHandle; consumeJSCharPointer(pointer: number): string };
  ctx?: { value: number };
}

/** The guest's heap could not hold a string on its way across: the run is out of memory. */
export class GuestHeapExhausted extends Error {
  constructor(what: string) {
    super(`the guest heap is exhausted (${what})`);
    this.name = "GuestHeapExhausted";
  }
}

/** Below this Emscripten's own encoder is as fast as Node's native one. */
const NATIVE_ENCODE_BYTES = 16 * 1024;
const encoder = new TextEncoder();

/** Looked up once per context: every tool call reads three strings. */
const known = new WeakMap<QuickJSContext, Required<ContextInternals> | null>();

function internalsOf(context: QuickJSContext): Required<ContextInternals> | undefined {
  let internals = known.get(context);
  if (internals === undefined) {
    const { module, ffi, memory, ctx } = context as unknown as ContextInternals;
    const fn = (value: unknown) => typeof value === "function";
    const complete =
      fn(module?._malloc) &&
      fn(module?.stringToUTF8) &&
      fn(ffi?.QTS_NewString) &&
      fn(ffi?.QTS_GetString) &&
      fn(memory?.heapValueHandle) &&
      fn(memory?.consumeJSCharPointer) &&
      typeof ctx?.value === "number";
    internals = complete ? ({ module, ffi, memory, ctx } as Required<ContextInternals>) : null;
    known.set(context, internals);
  }
  return internals ?? undefined;
}

/** A guest string of `value` (up to its first NUL, as a C string ends). Throws GuestHeapExhausted. */
export function newGuestString(context: QuickJSContext, value: string): QuickJSHandle {
  const internals = internalsOf(context);
  if (!internals) return context.newString(value);
  const { module, ffi, memory, ctx } = internals;
  const bytes = value.length < NATIVE_ENCODE_BYTES ? value.length * 3 : Buffer.byteLength(value);
  const pointer = module._malloc(bytes + 1);
  if (pointer === 0) throw new GuestHeapExhausted(`a string of ${bytes} bytes`);
  try {
    if (value.length < NATIVE_ENCODE_BYTES) module.stringToUTF8(value, pointer, bytes + 1);
    else {
      encoder.encodeInto(value, module.HEAPU8.subarray(pointer, pointer + bytes));
      module.HEAPU8[pointer + bytes] = 0;
    }
    // QTS_NewString returns the value in a heap cell of its own: 0 when even that failed.
    const cell = ffi.QTS_NewString(ctx.value, pointer);
    if (cell === 0) throw new GuestHeapExhausted("a string's value cell");
    return memory.heapValueHandle(cell);
  } finally {
    module._free(pointer);
  }
}

/** The text of a guest string (up to its first NUL). Throws GuestHeapExhausted when its C copy could not be made. */
export function readGuestString(context: QuickJSContext, handle: QuickJSHandle): string {
  const internals = internalsOf(context);
  if (!internals) return context.getString(handle);
  const pointer = internals.ffi.QTS_GetString(internals.ctx.value, handle.value as unknown as number);
  // An empty string still has a C copy: 0 is only ever a failed allocation.
  if (pointer === 0) throw new GuestHeapExhausted("a string's C copy");
  return internals.memory.consumeJSCharPointer(pointer);
}
