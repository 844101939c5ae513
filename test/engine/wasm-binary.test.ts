// The small WebAssembly reader the snapshot layout comes from, checked field by field against
// @webassemblyjs/wasm-parser on the real QuickJS binary, and on hand-made binaries for the cases
// that binary does not have.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
// @ts-expect-error no type declarations ship with it (a test-only oracle)
import { decode } from "@webassemblyjs/wasm-parser";
import { readWasmBinary } from "../../src/engine/wasm-binary.js";

const require = createRequire(import.meta.url);
const quickjsBinary = readFileSync(require.resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));

interface AstField {
  type: string;
  globalType?: { valtype: string; mutability: string };
  init?: unknown;
  offset?: { id: string; args: Array<{ value: number }> };
  descr?: { type: string; exportType?: string; id?: { value: number } };
  name?: string;
}

/** A minimal module: an imported memory, the given globals and data segments. */
function binary(sections: Array<[id: number, body: number[]]>): Uint8Array {
  const bytes = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  for (const [id, body] of sections) bytes.push(id, body.length, ...body);
  return Uint8Array.from(bytes);
}
const memoryImport: [number, number[]] = [2, [1, 1, 0x65, 1, 0x6d, 2, 0, 1]]; // (import "e" "m" (memory 1))

describe("readWasmBinary", () => {
  it("reads the QuickJS binary's globals, exports, memory import and data segments as @webassemblyjs does", () => {
    const facts = readWasmBinary(quickjsBinary);
    const fields: AstField[] = decode(quickjsBinary, { ignoreCodeSection: true, ignoreCustomNameSection: true }).body[0].fields;
    const globals = fields.filter((field) => field.type === "Global");
    expect(facts.globals.map(({ valtype, mutable, init }) => ({ valtype, mutable, init }))).toStrictEqual(
      globals.map((global) => ({
        valtype: global.globalType!.valtype,
        mutable: global.globalType!.mutability === "var",
        init: (global.init as Array<{ args: Array<{ value: number }> }>)[0].args[0].value,
      })),
    );
    const exportedGlobals = fields.filter((field) => field.type === "ModuleExport" && field.descr?.exportType === "Global").map((field) => field.name);
    expect(facts.globals.flatMap((global) => global.exports)).toStrictEqual(exportedGlobals);
    const imports = fields.filter((field) => field.type === "ModuleImport");
    expect(facts.importsMemory).toBe(imports.some((field) => field.descr?.type === "Memory"));
    expect(facts.importedGlobals).toBe(imports.filter((field) => field.descr?.type === "GlobalType").length);
    const data = fields.filter((field) => field.type === "Data") as Array<AstField & { init: { values: number[] } }>;
    expect(facts.dataSegments.length).toBe(data.length);
    expect(facts.dataSegments.map((segment) => segment.offset)).toStrictEqual(data.map((segment) => segment.offset!.args[0].value));
    expect(facts.dataSegments.map((segment) => [...segment.bytes])).toStrictEqual(data.map((segment) => segment.init.values));
  });

  it("reads mutable and constant globals of every type, exported globals and passive segments", () => {
    const facts = readWasmBinary(
      binary([
        memoryImport,
        // (global (mut i32) (i32.const -5)) (global i64 (i64.const 2^40)) (global f64 (f64.const 0))
        [6, [3, 0x7f, 1, 0x41, 0x7b, 0x0b, 0x7e, 0, 0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x0b, 0x7c, 0, 0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b]],
        [7, [1, 2, 0x73, 0x70, 3, 0]], // (export "sp" (global 0))
        [11, [2, 0, 0x41, 0x10, 0x0b, 2, 7, 8, 1, 3, 9, 9, 9]], // active at 16: [7, 8]; passive: [9, 9, 9]
      ]),
    );
    expect(facts.importsMemory).toBe(true);
    expect(facts.globals).toStrictEqual([
      { valtype: "i32", mutable: true, init: -5, exports: ["sp"] },
      { valtype: "i64", mutable: false, init: 2n ** 40n, exports: [] },
      { valtype: "f64", mutable: false, init: undefined, exports: [] },
    ]);
    expect(facts.dataSegments.map((segment) => [segment.offset, [...segment.bytes]])).toStrictEqual([
      [16, [7, 8]],
      [undefined, [9, 9, 9]],
    ]);
  });

  it("refuses what is not a WebAssembly binary and a binary cut short", () => {
    expect(() => readWasmBinary(Uint8Array.from([1, 2, 3]))).toThrow("not a WebAssembly version 1 binary");
    expect(() => readWasmBinary(binary([[6, [1, 0x7f, 1, 0x41]]]))).toThrow("the WebAssembly binary ends early");
  });
});
