// A QuickJS context for comparing guest values: what a value becomes through the JSON path
// (the guest's JSON.parse of a text) against what the binary path decodes (QuickJS's own format).
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten";
import { decodeInGuest } from "../../src/engine/bjson.js";
import { newWasmInstance, pagesFor } from "../../src/engine/wasm-instance.js";

export interface GuestValues {
  context: QuickJSContext;
  /** The first difference between `JSON.parse(json)` and the decoding of `bytes` in the guest, as a path; "" when they are the same value. */
  difference(json: string, bytes: Uint8Array): string;
  dispose(): void;
}

export async function guestValues(): Promise<GuestValues> {
  const instance = await newWasmInstance(pagesFor(64 * 1024 * 1024));
  const runtime: QuickJSRuntime = instance.module.newRuntime();
  runtime.setMaxStackSize(1024 * 1024);
  const context = runtime.newContext();
  // Same types and prototypes, Object.is for primitives, the same own keys in the same order, the
  // same property attributes, string contents unit by unit.
  const compare: QuickJSHandle = context.unwrapResult(
    context.evalCode(`(function same(a, b, path) {
      path = path || "$";
      if (typeof a !== typeof b) return path + ": " + typeof a + " vs " + typeof b;
      if (a === null || typeof a !== "object") return Object.is(a, b) ? "" : path + ": " + String(a) + " vs " + String(b);
      if (b === null) return path + ": null";
      if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return path + ": prototypes differ";
      if (Array.isArray(a) !== Array.isArray(b)) return path + ": array vs object";
      const ka = Reflect.ownKeys(a), kb = Reflect.ownKeys(b);
      if (ka.length !== kb.length) return path + ": " + ka.length + " keys vs " + kb.length;
      for (let i = 0; i < ka.length; i++) {
        if (ka[i] !== kb[i]) return path + ": key " + String(ka[i]) + " vs " + String(kb[i]);
        const da = Object.getOwnPropertyDescriptor(a, ka[i]), db = Object.getOwnPropertyDescriptor(b, kb[i]);
        if (da.writable !== db.writable || da.enumerable !== db.enumerable || da.configurable !== db.configurable) return path + "." + String(ka[i]) + ": attributes differ";
        const inner = same(da.value, db.value, path + "." + String(ka[i]));
        if (inner) return inner;
      }
      return "";
    })`),
  );
  const parse: QuickJSHandle = context.unwrapResult(context.evalCode(`(text) => JSON.parse(text)`));
  return {
    context,
    difference(json, bytes) {
      const text = context.newString(json);
      const viaJson = context.unwrapResult(context.callFunction(parse, context.undefined, text));
      text.dispose();
      const decoded = decodeInGuest(context, bytes);
      if (!("value" in decoded)) {
        const error = "error" in decoded ? context.dump(decoded.error) : "out of memory";
        if ("error" in decoded) decoded.error.dispose();
        viaJson.dispose();
        return `decode failed: ${JSON.stringify(error)}`;
      }
      const verdict = context.unwrapResult(context.callFunction(compare, context.undefined, decoded.value, viaJson));
      const difference = context.getString(verdict);
      verdict.dispose();
      decoded.value.dispose();
      viaJson.dispose();
      return difference;
    },
    dispose() {
      compare.dispose();
      parse.dispose();
      context.dispose();
      runtime.dispose();
    },
  };
}
