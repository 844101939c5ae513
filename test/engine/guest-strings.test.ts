// Strings crossing the wall when the guest heap is exhausted: quickjs-emscripten's newString wrote
// them to address 0 (over QuickJS's static data) and getString read a failed copy as "".
import { describe, expect, it } from "vitest";
import type { QuickJSContext } from "quickjs-emscripten-core";
import { GuestHeapExhausted, newGuestString, readGuestString } from "../../src/engine/guest-strings.js";
import { newWasmInstance, pagesFor } from "../../src/engine/wasm-instance.js";

interface Allocator {
  _malloc(bytes: number): number;
  _free(pointer: number): void;
}

/** Takes every block the allocator will still give (large first, then small), so the next allocation fails. */
function exhaust(context: QuickJSContext): () => void {
  const allocator = (context as unknown as { module: Allocator }).module;
  const blocks: number[] = [];
  for (const size of [1 << 20, 1 << 14, 1 << 8, 16]) {
    for (let pointer = allocator._malloc(size); pointer !== 0; pointer = allocator._malloc(size)) blocks.push(pointer);
  }
  return () => {
    for (const pointer of blocks) allocator._free(pointer);
  };
}

describe("guest strings", () => {
  it("round-trip through the guest, short and long, ASCII or not", async () => {
    const instance = await newWasmInstance(pagesFor(8 * 1024 * 1024));
    const runtime = instance.module.newRuntime();
    const context = runtime.newContext();
    for (const value of ["", "hi", "é€😀".repeat(3), "x".repeat(20_000) + "é".repeat(20_000)]) {
      const handle = newGuestString(context, value);
      expect(context.typeof(handle)).toBe("string");
      expect(readGuestString(context, handle)).toBe(value);
      handle.dispose();
    }
    context.dispose();
    runtime.dispose();
  });

  it("throw GuestHeapExhausted when the heap is full, without writing outside it, and work again once it has room", async () => {
    const instance = await newWasmInstance(pagesFor(8 * 1024 * 1024));
    const runtime = instance.module.newRuntime();
    const context = runtime.newContext();
    const kept = newGuestString(context, "é".repeat(100_000));
    const statics = Buffer.from(new Uint8Array(instance.memory.buffer).slice(0, 64 * 1024));
    const release = exhaust(context);
    expect(() => newGuestString(context, "a string the full heap has no room for")).toThrow(GuestHeapExhausted);
    expect(() => newGuestString(context, "é".repeat(50_000))).toThrow(GuestHeapExhausted);
    // Reading makes a C copy: none can be made, and "" is not passed off as the text.
    expect(() => readGuestString(context, kept)).toThrow(GuestHeapExhausted);
    expect(Buffer.compare(statics, Buffer.from(instance.memory.buffer, 0, 64 * 1024))).toBe(0);
    release();
    expect(readGuestString(context, kept)).toBe("é".repeat(100_000));
    kept.dispose();
    context.dispose();
    runtime.dispose();
  });
});
