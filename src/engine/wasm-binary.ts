// What the QuickJS WebAssembly binary says about its own linear memory: its globals, where its
// data segments go, and whether it imports its memory. The snapshot module derives its memory
// layout from these facts instead of hard-coding offsets.
//
// This reads only the section table and the import, global, export and data sections (the code
// section, 400 KB here, is skipped by its size): @webassemblyjs/wasm-parser decodes the same
// facts but costs ~40 ms to load and run, which a cold start cannot pay. Tests cross-check every
// field against it.

export interface WasmGlobal {
  valtype: "i32" | "i64" | "f32" | "f64" | "other";
  mutable: boolean;
  /** The constant initial value, when the initialiser is a plain `*.const` (i64 as a bigint). */
  init: number | bigint | undefined;
  /** Names it is exported under. */
  exports: string[];
}

export interface WasmDataSegment {
  /** Where an active segment is copied into memory 0; undefined for passive or computed offsets. */
  offset: number | undefined;
  bytes: Uint8Array;
}

export interface WasmBinaryFacts {
  /** The module imports its memory (so the host chooses its size and can read it). */
  importsMemory: boolean;
  /** Globals defined by the module itself, in index order after the imported ones. */
  globals: WasmGlobal[];
  importedGlobals: number;
  dataSegments: WasmDataSegment[];
}

const SECTION = { import: 2, global: 6, export: 7, data: 11 } as const;
const VALTYPES: Record<number, WasmGlobal["valtype"]> = { 0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64" };

class Reader {
  position = 0;
  constructor(readonly bytes: Uint8Array) {}

  byte(): number {
    if (this.position >= this.bytes.length) throw new RangeError("the WebAssembly binary ends early");
    return this.bytes[this.position++];
  }

  u32(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const byte = this.byte();
      result += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7;
      if (shift > 35) throw new RangeError("a LEB128 number in the WebAssembly binary is too long");
    }
  }

  /** A signed LEB128 of up to 64 bits, as a bigint. */
  signed(): bigint {
    let result = 0n;
    let shift = 0n;
    let byte: number;
    do {
      byte = this.byte();
      result |= BigInt(byte & 0x7f) << shift;
      shift += 7n;
    } while (byte & 0x80);
    if (byte & 0x40) result -= 1n << shift;
    return result;
  }

  name(): string {
    const length = this.u32();
    const text = new TextDecoder().decode(this.bytes.subarray(this.position, this.position + length));
    this.position += length;
    return text;
  }

  limits(): void {
    const flags = this.u32();
    this.u32();
    if (flags & 1) this.u32();
  }

  /** A constant expression; returns the value of a lone `i32.const`/`i64.const`, else undefined. */
  constant(): number | bigint | undefined {
    let value: number | bigint | undefined;
    let instructions = 0;
    for (;;) {
      const op = this.byte();
      if (op === 0x0b) return instructions === 1 ? value : undefined;
      instructions++;
      if (op === 0x41) value = Number(BigInt.asIntN(32, this.signed()));
      else if (op === 0x42) value = BigInt.asIntN(64, this.signed());
      else if (op === 0x23) {
        this.u32();
        value = undefined;
      } else if (op === 0x43) {
        this.position += 4;
        value = undefined;
      } else if (op === 0x44) {
        this.position += 8;
        value = undefined;
      } else throw new RangeError(`unexpected opcode 0x${op.toString(16)} in a constant expression`);
    }
  }
}

export function readWasmBinary(bytes: Uint8Array): WasmBinaryFacts {
  const magic = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (bytes.length < 8 || magic.some((byte, i) => bytes[i] !== byte)) throw new TypeError("not a WebAssembly version 1 binary");
  const reader = new Reader(bytes);
  reader.position = 8;
  const facts: WasmBinaryFacts = { importsMemory: false, globals: [], importedGlobals: 0, dataSegments: [] };
  const globalExports: Array<[index: number, name: string]> = [];
  while (reader.position < bytes.length) {
    const id = reader.byte();
    const size = reader.u32();
    const end = reader.position + size;
    if (id === SECTION.import) {
      for (let count = reader.u32(); count > 0; count--) {
        reader.name();
        reader.name();
        const kind = reader.byte();
        if (kind === 0) reader.u32();
        else if (kind === 1) {
          reader.byte();
          reader.limits();
        } else if (kind === 2) {
          facts.importsMemory = true;
          reader.limits();
        } else if (kind === 3) {
          reader.byte();
          reader.byte();
          facts.importedGlobals++;
        } else throw new RangeError(`unknown import kind ${kind}`);
      }
    } else if (id === SECTION.global) {
      for (let count = reader.u32(); count > 0; count--) {
        const valtype = VALTYPES[reader.byte()] ?? "other";
        const mutable = reader.byte() === 1;
        facts.globals.push({ valtype, mutable, init: reader.constant(), exports: [] });
      }
    } else if (id === SECTION.export) {
      for (let count = reader.u32(); count > 0; count--) {
        const name = reader.name();
        const kind = reader.byte();
        const index = reader.u32();
        if (kind === 3) globalExports.push([index, name]);
      }
    } else if (id === SECTION.data) {
      for (let count = reader.u32(); count > 0; count--) {
        const flags = reader.u32();
        let offset: number | undefined;
        if (flags === 0) offset = toOffset(reader.constant());
        else if (flags === 2) {
          const memory = reader.u32();
          const value = toOffset(reader.constant());
          offset = memory === 0 ? value : undefined;
        } else if (flags !== 1) throw new RangeError(`unknown data segment flags ${flags}`);
        const length = reader.u32();
        facts.dataSegments.push({ offset, bytes: bytes.subarray(reader.position, reader.position + length) });
        reader.position += length;
      }
    }
    reader.position = end;
  }
  for (const [index, name] of globalExports) facts.globals[index - facts.importedGlobals]?.exports.push(name);
  return facts;
}

function toOffset(value: number | bigint | undefined): number | undefined {
  return typeof value === "number" ? value >>> 0 : undefined;
}
