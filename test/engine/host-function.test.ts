// The guest's host function called without the library's wrapper (host-function.ts): the same
// arguments, results and thrown errors as through the library, and the library's path wherever
// the internals it needs are missing.
import { describe, expect, it } from "vitest";
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten";
import { callDirectly, newHostFunction } from "../../src/engine/host-function.js";
import { newWasmInstance, pagesFor } from "../../src/engine/wasm-instance.js";

const PROGRAM = `[
  host("a", 2.5, "\\u00e9"),
  host(),
  (() => { try { host("throw"); } catch (e) { return [e.name, e.message]; } })(),
]`;

async function withContext(use: (context: QuickJSContext) => void): Promise<void> {
  const instance = await newWasmInstance(pagesFor(64 * 1024 * 1024));
  const runtime = instance.module.newRuntime();
  const context = runtime.newContext();
  try {
    use(context);
  } finally {
    context.dispose();
    runtime.dispose();
  }
}

function install(context: QuickJSContext, seen: unknown[][]): void {
  const host = newHostFunction(context, "host", (args: QuickJSHandle[]) => {
    const values = args.map((arg) => context.dump(arg));
    seen.push(values);
    if (values[0] === "throw") throw new RangeError("refused");
    return values.length === 0 ? undefined : context.newString(JSON.stringify(values));
  });
  context.setProp(context.global, "host", host);
  host.dispose();
}

function evaluate(context: QuickJSContext): unknown {
  return context.unwrapResult(context.evalCode(PROGRAM)).consume((value) => context.dump(value));
}

describe("the host function", () => {
  it("answers the same directly as through the library: arguments, results, nothing, and errors the program catches", async () => {
    await withContext((context) => {
      const seen: unknown[][] = [];
      install(context, seen);
      const viaLibrary = evaluate(context);
      expect(callDirectly(context)).toBe(true);
      const direct = evaluate(context);
      expect(direct).toStrictEqual(viaLibrary);
      // (dump reads the array as JSON: the host function's undefined shows as null.)
      expect(direct).toStrictEqual([JSON.stringify(["a", 2.5, "é"]), null, ["RangeError", "refused"]]);
      expect(seen).toHaveLength(6);
    });
  });

  it("keeps the library's path when the context lacks the internals it needs", () => {
    expect(callDirectly({} as QuickJSContext)).toBe(false);
  });
});
