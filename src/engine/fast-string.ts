// Moving a large string into the guest. quickjs-emscripten's newString measures and encodes UTF-8
// with Emscripten's JavaScript loops (about 5 ms per MB here); Node's native encoder writes the
// same bytes straight into linear memory in a fraction of that. This reaches into the context's
// module, FFI and memory helpers, so it checks they are there (the version is pinned) and falls
// back to newString otherwise.
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";

interface ContextInternals {
  module?: { _malloc(bytes: number): number; _free(pointer: number): void; HEAPU8: Uint8Array };
  ffi?: { QTS_NewString(ctx: number, pointer: number): number };
  memory?: { heapValueHandle(pointer: number): QuickJSHandle };
  ctx?: { value: number };
}

/** Below this the library's own path is as fast and no internals are touched. */
const FAST_PATH_BYTES = 16 * 1024;
const encoder = new TextEncoder();

export function newGuestString(context: QuickJSContext, value: string): QuickJSHandle {
  if (value.length < FAST_PATH_BYTES || value.includes("\0")) return context.newString(value);
  const internals = context as unknown as ContextInternals;
  const { module, ffi, memory, ctx } = internals;
  if (!module?._malloc || !ffi?.QTS_NewString || !memory?.heapValueHandle || typeof ctx?.value !== "number") return context.newString(value);
  const bytes = Buffer.byteLength(value);
  const pointer = module._malloc(bytes + 1);
  // Out of linear memory: the library's path fails the same way, with the errors callers expect.
  if (pointer === 0) return context.newString(value);
  try {
    encoder.encodeInto(value, module.HEAPU8.subarray(pointer, pointer + bytes));
    module.HEAPU8[pointer + bytes] = 0;
    return memory.heapValueHandle(ffi.QTS_NewString(ctx.value, pointer));
  } finally {
    module._free(pointer);
  }
}
