// Tool results in QuickJS's own object format. The guest's JSON.parse of a 1 MB result costs
// ~13 ms; JS_ReadObject (QTS_bjson_decode) builds the same value from its binary format in about a
// third of that. So the host writes that format itself, with an encoder generated once per output
// schema that checks and encodes in one pass, and refuses — returns undefined, so the caller takes
// the JSON path with its exact errors — anything that is not plain JSON of the declared shape.
//
// The value the guest gets is the value JSON.parse(JSON.stringify(v)) would give it: -0 becomes 0
// (JSON writes "0"), keys with undefined values are left out, integers that fit 32 bits are
// QuickJS ints and other numbers doubles (as its JSON.parse makes them), strings are 8-bit when
// every unit fits (lone surrogates survive in 16-bit ones), keys go in the order
// JSON.stringify would write them. The encoder also bounds the UTF-8 bytes of that JSON (exact
// but for doubles), so the crossing limit keeps meaning "bytes of JSON".
//
// Format (JS_WriteObject/JS_ReadObject, BC_VERSION 5 in QuickJS 2025-09-13; checked at start-up by
// bjsonSelfTest against the engine's own writer): a version byte; an atom table (LEB128 count,
// then strings); one value. A string is LEB128(length << 1 | wide) then Latin-1 bytes or UTF-16LE
// units. Values: 1 null, 3 false, 4 true, 5 int32 (zigzag LEB128), 6 float64 (little-endian), 7 string,
// 8 object (LEB128 count, then key and value pairs), 9 array (LEB128 length, then values). A key
// is LEB128(n << 1 | 1) for an integer key n < 2^31, else LEB128((1 + its index in the atom table) << 1).
import type { QuickJSContext, QuickJSHandle } from "quickjs-emscripten-core";
import type * as zc from "zod/v4/core";

export const BJSON_VERSION = 5;
/** Deeper values take the JSON path, whose depth limits are the guest's JSON.parse's. */
export const MAX_BJSON_DEPTH = 1000;

const TAG = { null: 1, false: 3, true: 4, int32: 5, float64: 6, string: 7, object: 8, array: 9 } as const;
const MAX_ATOM_INT = 2 ** 31 - 1;
/** Printable ASCII other than `"` and `\`: a string made only of these is its own JSON body. */
const NEEDS_JSON_CARE = /[^\x20\x21\x23-\x5b\x5d-\x7e]/;
const WIDE = /[^\x00-\xff]/;

/** Bytes for the guest, and a bound on the UTF-8 length of the JSON the same value would have been. */
export interface BjsonEncoding {
  bytes: Uint8Array;
  /**
   * At least the JSON's UTF-8 length, and exactly it when the value holds no non-integer number:
   * a double counts as its longest form (25 bytes: "-0.0000012345678901234567") because formatting each one to measure it cost
   * as much as the rest of the encoding. Past the crossing limit, take the JSON path: it measures
   * exactly and says so in its error.
   */
  jsonBytesAtMost: number;
}

/** The longest JSON a double takes: a negative one just above 1e-6 in magnitude, e.g. -0.0000010000313825228672 (exponent forms stop at 24, e.g. -2.2250738585072014e-308). */
const MAX_DOUBLE_JSON = 25;

/**
 * Bytes every encoding leaves free before its start, in the same buffer: the bridge writes its
 * frame header there (bridge-format.ts) instead of copying the encoding into a frame.
 */
export const BJSON_HEADROOM = 8;

export type BjsonEncoder = (value: unknown) => BjsonEncoding | undefined;

/** Accumulates one encoding: the value's bytes, its atom table and the JSON length. */
export class BjsonWriter {
  buffer = Buffer.allocUnsafe(64 * 1024);
  position = 0;
  json = 0;
  private view = new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.byteLength);
  private readonly atoms = new Map<string, number>();
  private readonly atomList: string[] = [];

  reset(): void {
    this.position = 0;
    this.json = 0;
    this.atoms.clear();
    this.atomList.length = 0;
  }

  private ensure(bytes: number): void {
    if (this.position + bytes <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.position + bytes) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buffer.copy(next, 0, 0, this.position);
    this.buffer = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }

  u8(byte: number): void {
    this.ensure(1);
    this.buffer[this.position++] = byte;
  }

  leb(value: number): void {
    this.ensure(5);
    const buffer = this.buffer;
    let v = value >>> 0;
    while (v >= 0x80) {
      buffer[this.position++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buffer[this.position++] = v;
  }

  /** QuickJS's "sleb128" is a zigzag-coded LEB128: 0, -1, 1, -2 … become 0, 1, 2, 3 … */
  private zigzag(value: number): void {
    this.leb(((value << 1) ^ (value >> 31)) >>> 0);
  }

  /** A finite number as JSON.parse would make it; false for NaN and the infinities (JSON writes null). */
  number(value: number): boolean {
    if ((value | 0) === value) {
      // -0 passes this test too, and is written as 0: JSON.stringify(-0) is "0".
      this.u8(TAG.int32);
      this.zigzag(value);
      this.json += intDigits(value);
      return true;
    }
    if (!Number.isFinite(value)) return false;
    this.ensure(9);
    this.buffer[this.position++] = TAG.float64;
    this.view.setFloat64(this.position, value, true);
    this.position += 8;
    this.json += MAX_DOUBLE_JSON;
    return true;
  }

  literal(value: unknown): boolean {
    if (value === null) {
      this.u8(TAG.null);
      this.json += 4;
    } else if (value === true) {
      this.u8(TAG.true);
      this.json += 4;
    } else if (value === false) {
      this.u8(TAG.false);
      this.json += 5;
    } else if (typeof value === "string") this.string(value);
    else if (typeof value === "number") return this.number(value);
    else return false;
    return true;
  }

  string(value: string): void {
    const length = value.length;
    if (length >= 32) {
      this.u8(TAG.string);
      this.json += jsonStringBytes(value);
      this.rawString(value);
      return;
    }
    // Short strings: one pass that writes 8-bit units and notices what JSON would escape.
    this.ensure(6 + length * 2);
    const buffer = this.buffer;
    const start = this.position;
    buffer[start] = TAG.string;
    buffer[start + 1] = length << 1;
    let at = start + 2;
    let plain = true;
    for (let i = 0; i < length; i++) {
      const unit = value.charCodeAt(i);
      if (unit < 0x20 || unit > 0x7e || unit === 0x22 || unit === 0x5c) {
        plain = false;
        if (unit > 0xff) {
          this.position = start + 1;
          this.json += jsonStringBytes(value);
          this.rawString(value);
          return;
        }
      }
      buffer[at++] = unit;
    }
    this.position = at;
    this.json += plain ? length + 2 : jsonStringBytes(value);
  }

  private rawString(value: string): void {
    const length = value.length;
    const wide = WIDE.test(value);
    this.ensure(5 + length * (wide ? 2 : 1));
    this.leb((length << 1) | (wide ? 1 : 0));
    this.position += this.buffer.write(value, this.position, wide ? "utf16le" : "latin1");
  }

  /** A constant key of a generated encoder: `encoded` is its LEB128 value, `cost` its JSON bytes (`"key":`). */
  knownKey(encoded: number, cost: number): void {
    this.json += cost;
    this.leb(encoded);
  }

  /** A key's LEB128 value for the atom table: its index, counted from 1, doubled. */
  atom(name: string): number {
    let index = this.atoms.get(name);
    if (index === undefined) {
      index = this.atomList.length;
      this.atoms.set(name, index);
      this.atomList.push(name);
    }
    return (index + 1) * 2;
  }

  /** An object's property key (and its JSON: `"key":` plus the comma the caller counts). */
  key(name: string): void {
    this.json += jsonStringBytes(name) + 1;
    const integer = integerKey(name);
    this.leb(integer >= 0 ? integer * 2 + 1 : this.atom(name));
  }

  /** An array of `length` elements (and its JSON brackets and commas). */
  array(length: number): void {
    this.u8(TAG.array);
    this.leb(length);
    this.json += 2 + (length > 0 ? length - 1 : 0);
  }

  /** Start an object: its tag and a property count patched in by `close`. */
  open(): number {
    this.u8(TAG.object);
    this.ensure(5);
    const at = this.position;
    this.position += 5;
    return at;
  }

  /** Write `count` at `at` as a 5-byte LEB128 (the reader takes padded ones) and count the JSON braces and commas. */
  close(at: number, count: number): void {
    const buffer = this.buffer;
    buffer[at] = (count & 0x7f) | 0x80;
    buffer[at + 1] = ((count >>> 7) & 0x7f) | 0x80;
    buffer[at + 2] = ((count >>> 14) & 0x7f) | 0x80;
    buffer[at + 3] = ((count >>> 21) & 0x7f) | 0x80;
    buffer[at + 4] = (count >>> 28) & 0x0f;
    this.json += 2 + (count > 0 ? count - 1 : 0);
  }

  mark(): [number, number, number] {
    return [this.position, this.json, this.atomList.length];
  }

  rewind([position, json, atoms]: [number, number, number]): void {
    this.position = position;
    this.json = json;
    while (this.atomList.length > atoms) this.atoms.delete(this.atomList.pop()!);
  }

  /** The whole encoding: version, atom table, then the value written so far. */
  finish(): BjsonEncoding {
    const value = this.buffer.subarray(0, this.position);
    const body = this.position;
    this.leb(this.atomList.length);
    for (const atom of this.atomList) this.rawString(atom);
    const table = this.buffer.subarray(body, this.position);
    // Room in front for the bridge's frame header, so a result crosses without another copy.
    const bytes = new Uint8Array(BJSON_HEADROOM + 1 + table.length + value.length).subarray(BJSON_HEADROOM);
    bytes[0] = BJSON_VERSION;
    bytes.set(table, 1);
    bytes.set(value, 1 + table.length);
    return { bytes, jsonBytesAtMost: this.json };
  }
}

function intDigits(value: number): number {
  let digits = value < 0 ? 2 : 1;
  let v = value < 0 ? -value : value;
  while (v >= 10) {
    v = Math.floor(v / 10);
    digits++;
  }
  return digits;
}

function jsonStringBytes(value: string): number {
  if (!NEEDS_JSON_CARE.test(value)) return value.length + 2;
  // Escapes and non-ASCII: JSON.stringify writes lone surrogates as \u escapes, so this is exact.
  return Buffer.byteLength(JSON.stringify(value));
}

/** The integer a canonical index key names (up to 2^31 - 1, QuickJS's integer atoms), else -1. */
function integerKey(name: string): number {
  const length = name.length;
  if (length === 0 || length > 10) return -1;
  const first = name.charCodeAt(0);
  if (first < 0x30 || first > 0x39 || (first === 0x30 && length > 1)) return -1;
  let value = 0;
  for (let i = 0; i < length; i++) {
    const digit = name.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value <= MAX_ATOM_INT ? value : -1;
}

// ---- plain JSON of any shape ---------------------------------------------------------------------

const objectPrototype = Object.prototype;
const arrayPrototype = Array.prototype;
const getPrototypeOf = Object.getPrototypeOf;
const isArray = Array.isArray;

/** Host prototypes that would make JSON.stringify see what a property walk does not. */
function prototypesArePlain(): boolean {
  for (const _ in {}) return false;
  for (const _ in []) return false;
  return (objectPrototype as { toJSON?: unknown }).toJSON === undefined && (arrayPrototype as { toJSON?: unknown }).toJSON === undefined;
}

function isPlainRecord(value: object): boolean {
  const prototype = getPrototypeOf(value);
  return prototype === objectPrototype || prototype === null;
}

/** Any plain JSON value (the fallback inside schemas for open parts: any, unknown, transforms). */
function encodeAny(w: BjsonWriter, value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
      w.string(value);
      return true;
    case "number":
      return w.number(value);
    case "boolean":
      return w.literal(value);
    case "object": {
      if (value === null) return w.literal(null);
      if (depth >= MAX_BJSON_DEPTH) return false;
      if (isArray(value)) {
        if (getPrototypeOf(value) !== arrayPrototype) return false;
        const length = value.length;
        w.array(length);
        for (let i = 0; i < length; i++) {
          // A hole or an undefined element is not plain JSON (JSON.stringify writes null).
          const item = value[i];
          if (item === undefined || !encodeAny(w, item, depth + 1)) return false;
        }
        return true;
      }
      if (!isPlainRecord(value)) return false;
      const record = value as Record<string, unknown>;
      const at = w.open();
      let count = 0;
      for (const key in record) {
        const item = record[key];
        if (item === undefined) continue; // left out, as JSON.stringify does
        w.key(key);
        if (!encodeAny(w, item, depth + 1)) return false;
        count++;
      }
      w.close(at, count);
      return true;
    }
    default:
      return false;
  }
}

const sharedWriter = new BjsonWriter();

function run(encode: (w: BjsonWriter, value: unknown) => boolean, value: unknown): BjsonEncoding | undefined {
  if (!prototypesArePlain()) return undefined;
  const w = sharedWriter;
  w.reset();
  try {
    if (!encode(w, value)) return undefined;
    return w.finish();
  } catch {
    // Reading the value ran host code that threw (a getter, a Proxy trap): not plain JSON, so the
    // JSON path decides, with its own error. Let through, the exception failed a plain tool's call
    // as "tool_failed" with the getter's message, where the JSON path says "tool_output_invalid".
    return undefined;
  } finally {
    // A huge result must not keep its buffer alive between calls.
    if (w.buffer.length > 4 * 1024 * 1024) w.buffer = Buffer.allocUnsafe(64 * 1024);
  }
}

/** Encode any plain JSON value (objects with plain or null prototypes, arrays without holes, finite numbers). */
export function encodePlainJson(value: unknown): BjsonEncoding | undefined {
  return run((w, v) => encodeAny(w, v, 0), value);
}

/**
 * A tool result for the guest: the encoding of `[value]` (the prelude tells it from a JSON text
 * by its type and takes element 0), or undefined for anything that must take the JSON path.
 */
export function encodeToolResult(value: unknown): BjsonEncoding | undefined {
  if (value === undefined) return undefined;
  return run((w, v) => encodeAny(w, v, 0), [value]);
}

// ---- encoders generated per schema ---------------------------------------------------------------

export interface Def {
  type: string;
  [key: string]: unknown;
}
export const defOf = (schema: zc.$ZodType): Def => schema._zod.def as unknown as Def;

const compiled = new WeakMap<zc.$ZodType, BjsonEncoder>();

/**
 * The encoder for values of `schema` (zod output). Generated once per schema and cached; it
 * checks every value against the declared shape while encoding it and answers undefined
 * for anything else, so the caller takes the JSON path and its errors.
 */
export function encoderFor(schema: zc.$ZodType): BjsonEncoder {
  let encoder = compiled.get(schema);
  if (!encoder) {
    encoder = generate(schema);
    compiled.set(schema, encoder);
  }
  return encoder;
}

/**
 * Writes the source of an encoder per schema node: one function `f<n>(v, d)` each, which encodes
 * `v` (at depth `d`) and answers whether it could. Subclasses change what a node accepts.
 */
export class Generator {
  readonly functions: string[] = [];
  readonly constants: unknown[] = [];
  /** Atom slots: one per constant key, reset to 0 ("not in the table yet") for every encoding. */
  slots = 0;
  private readonly names = new Map<zc.$ZodType, string>();

  slot(): number {
    return this.slots++;
  }

  /** Names (and values) the generated source may use beyond the writer's own helpers. */
  externals(): Record<string, unknown> {
    return {};
  }

  constant(value: unknown): string {
    this.constants.push(value);
    return `K[${this.constants.length - 1}]`;
  }

  /** The name of the function that encodes values of `schema`, generating it on first use. */
  node(schema: zc.$ZodType): string {
    const known = this.names.get(schema);
    if (known) return known;
    const name = `f${this.names.size}`;
    this.names.set(schema, name);
    const body = this.body(schema);
    this.functions.push(`function ${name}(v, d) {\n${body}\n}`);
    return name;
  }

  protected body(schema: zc.$ZodType): string {
    const def = defOf(schema);
    switch (def.type) {
      case "string":
        return `if (typeof v !== "string") return false; w.string(v); return true;`;
      case "number":
      case "int":
        return `return typeof v === "number" && w.number(v);`;
      case "boolean":
        return `return typeof v === "boolean" && w.literal(v);`;
      case "null":
        return `return v === null && w.literal(null);`;
      case "literal":
      case "enum": {
        const allowed = def.type === "literal" ? (def.values as unknown[]) : Object.values(def.entries as Record<string, unknown>);
        return `return ${this.constant(new Set(allowed))}.has(v) && w.literal(v);`;
      }
      case "nullable":
        return `if (v === null) return w.literal(null); return ${this.node(def.innerType as zc.$ZodType)}(v, d);`;
      case "optional":
      case "nonoptional":
      case "default":
      case "prefault":
      case "readonly":
      case "catch":
      case "success":
        // As a value (not an object's key), undefined is not JSON: the inner schema refuses it.
        return `return ${this.node(def.innerType as zc.$ZodType)}(v, d);`;
      case "lazy":
        return `return ${this.node((def.getter as () => zc.$ZodType)())}(v, d);`;
      case "pipe": {
        const out = def.out as zc.$ZodType;
        return defOf(out).type === "transform" ? `return any(w, v, d);` : `return ${this.node(out)}(v, d);`;
      }
      case "array":
        return this.arrayBody(def.element as zc.$ZodType);
      case "tuple":
        return this.tupleBody(def.items as zc.$ZodType[], def.rest as zc.$ZodType | null);
      case "object":
        return this.objectBody(schema as zc.$ZodObject);
      case "record":
        return this.recordBody(def.valueType as zc.$ZodType);
      case "union": {
        const options = (def.options as zc.$ZodType[]).map((option) => this.node(option));
        return `const m = w.mark();\n${options.map((option) => `if (${option}(v, d)) return true; w.rewind(m);`).join("\n")}\nreturn false;`;
      }
      case "date":
      case "bigint":
      case "symbol":
      case "undefined":
      case "void":
      case "never":
      case "map":
      case "set":
      case "function":
      case "promise":
      case "nan":
      case "file":
        // Not JSON values: JSON.stringify would change or drop them.
        return `return false;`;
      default:
        // any, unknown, intersections, custom and transformed values: checked as plain JSON.
        return `return any(w, v, d);`;
    }
  }

  private arrayBody(element: zc.$ZodType): string {
    const item = this.node(element);
    return `if (!isArray(v) || getPrototypeOf(v) !== arrayPrototype || d >= MAX_DEPTH) return false;
const n = v.length;
w.array(n);
for (let i = 0; i < n; i++) { const x = v[i]; if (x === undefined || !${item}(x, d + 1)) return false; }
return true;`;
  }

  private tupleBody(items: zc.$ZodType[], rest: zc.$ZodType | null): string {
    const names = items.map((item) => this.node(item));
    const restName = rest ? this.node(rest) : undefined;
    return `if (!isArray(v) || getPrototypeOf(v) !== arrayPrototype || d >= MAX_DEPTH) return false;
const n = v.length;
if (n ${restName ? "<" : "!=="} ${names.length}) return false;
w.array(n);
${names.map((name, i) => `{ const x = v[${i}]; if (x === undefined || !${name}(x, d + 1)) return false; }`).join("\n")}
${restName ? `for (let i = ${names.length}; i < n; i++) { const x = v[i]; if (x === undefined || !${restName}(x, d + 1)) return false; }` : ""}
return true;`;
  }

  private recordBody(valueType: zc.$ZodType): string {
    const item = this.node(valueType);
    return `if (v === null || typeof v !== "object" || isArray(v) || !isPlainRecord(v) || d >= MAX_DEPTH) return false;
const at = w.open();
let count = 0;
for (const key in v) { const x = v[key]; if (x === undefined) continue; w.key(key); if (!${item}(x, d + 1)) return false; count++; }
w.close(at, count);
return true;`;
  }

  /** A constant key: its LEB128 value as an expression (its atom index is found once per encoding, kept in a slot of S) and its JSON bytes. */
  protected knownKey(key: string): { encoded: string; cost: number } {
    const literal = JSON.stringify(key);
    const integer = integerKey(key);
    const encoded = integer >= 0 ? `${integer * 2 + 1}` : `(S[${this.slot()}] || (S[${this.slots - 1}] = w.atom(${literal})))`;
    return { encoded, cost: Buffer.byteLength(literal) + 1 };
  }

  private objectBody(schema: zc.$ZodObject): string {
    const def = schema._zod.def;
    const keys = Object.keys(def.shape);
    const cases: string[] = [];
    let requiredMask = 0;
    keys.forEach((key, index) => {
      const field = def.shape[key] as zc.$ZodType;
      const optional = field._zod.optin !== undefined || field._zod.optout === "optional";
      // More keys than a mask holds: only the first 30 required keys are counted as seen.
      const bit = index < 30 && !optional ? 1 << index : 0;
      requiredMask |= bit;
      const literal = JSON.stringify(key);
      const { encoded, cost } = this.knownKey(key);
      cases.push(
        `case ${literal}: { const x = v[${literal}]; if (x === undefined) { ${bit ? "return false;" : "continue;"} } w.knownKey(${encoded}, ${cost}); if (!${this.node(field)}(x, d + 1)) return false; count++; ${bit ? `seen |= ${bit};` : ""} break; }`,
      );
    });
    const requiredBeyondMask = keys.filter((key, index) => {
      const field = def.shape[key] as zc.$ZodType;
      return index >= 30 && field._zod.optin === undefined && field._zod.optout !== "optional";
    });
    const catchall = def.catchall as zc.$ZodType | undefined;
    // Unknown keys: a loose object's catchall encodes them; strip and strict objects never hold any.
    const otherwise =
      catchall && defOf(catchall).type !== "never" ? `{ const x = v[key]; if (x === undefined) continue; w.key(key); if (!${this.node(catchall)}(x, d + 1)) return false; count++; }` : `return false;`;
    return `if (v === null || typeof v !== "object" || isArray(v) || !isPlainRecord(v) || d >= MAX_DEPTH) return false;
const at = w.open();
let count = 0, seen = 0;
for (const key in v) {
switch (key) {
${cases.join("\n")}
default: ${otherwise}
}
}
if ((seen & ${requiredMask}) !== ${requiredMask}) return false;
${requiredBeyondMask.map((key) => `if (v[${JSON.stringify(key)}] === undefined) return false;`).join("\n")}
w.close(at, count);
return true;`;
  }
}

/**
 * The encoder `generator` writes for `schema`, compiled into one function. `wrapped` encodes
 * `encodeToolResult`'s form: the value as element 0 of a one-element array.
 */
export function generate(schema: zc.$ZodType, generator = new Generator(), wrapped = false): BjsonEncoder {
  const root = generator.node(schema);
  const start = wrapped ? `w.array(1); return ${root}(value, 1);` : `return ${root}(value, 0);`;
  const source = `"use strict";\nlet w;\nconst S = new Int32Array(${generator.slots});\n${generator.functions.join("\n")}\nreturn (writer, value) => { w = writer; S.fill(0); ${start} };`;
  // Keys reach the source only as JSON string literals; other values only through K.
  const externals = generator.externals();
  const factory = new Function("K", "any", "isArray", "getPrototypeOf", "arrayPrototype", "isPlainRecord", "MAX_DEPTH", ...Object.keys(externals), source) as (
    ...args: unknown[]
  ) => (w: BjsonWriter, value: unknown) => boolean;
  const encode = factory(generator.constants, encodeAny, isArray, getPrototypeOf, arrayPrototype, isPlainRecord, MAX_BJSON_DEPTH, ...Object.values(externals));
  return (value) => run(encode, value);
}

// ---- the guest side ------------------------------------------------------------------------------

interface ContextInternals {
  ffi?: {
    QTS_NewArrayBuffer?(ctx: number, pointer: number, length: number): number;
    QTS_bjson_decode?(ctx: number, value: number): number;
    QTS_ResolveException?(ctx: number, value: number): number;
    QTS_FreeValuePointer?(ctx: number, value: number): void;
  };
  module?: { _malloc(bytes: number): number; _free(pointer: number): void; HEAPU8: Uint8Array };
  ctx?: { value: number };
  rt?: { value: number };
  getMemory?(rt: number): { heapValueHandle(pointer: number): QuickJSHandle };
}

export type GuestDecoding = { value: QuickJSHandle } | { error: QuickJSHandle } | { outOfMemory: true };

/**
 * The guest value `bytes` encode, the error QuickJS raised reading them (out of memory, stack
 * overflow, a malformed encoding), or outOfMemory when the bytes do not even fit in linear
 * memory. Runs in the worker, inside the run's deadline.
 *
 * The bytes are copied in here rather than through context.newArrayBuffer: that one writes to
 * whatever malloc returned, and when the heap is exhausted that is address 0 — over QuickJS's
 * static data.
 */
export function decodeInGuest(context: QuickJSContext, bytes: Uint8Array): GuestDecoding {
  const internals = context as unknown as ContextInternals;
  const { ffi, module } = internals;
  if (!ffi?.QTS_NewArrayBuffer || !ffi.QTS_bjson_decode || !ffi.QTS_ResolveException || !ffi.QTS_FreeValuePointer || !module?._malloc || !internals.ctx || !internals.rt || !internals.getMemory) {
    throw new Error("quickjs-emscripten no longer exposes the binary-JSON decoder's internals");
  }
  const ctx = internals.ctx.value;
  const memory = internals.getMemory(internals.rt.value);
  const pointer = module._malloc(Math.max(1, bytes.length));
  if (pointer === 0) return { outOfMemory: true };
  module.HEAPU8.set(bytes, pointer);
  // The ArrayBuffer takes the memory over (QTS_NewArrayBuffer frees it with the buffer), unless
  // making it failed.
  const buffer = ffi.QTS_NewArrayBuffer(ctx, pointer, bytes.length);
  const failed = ffi.QTS_ResolveException(ctx, buffer);
  if (failed) {
    module._free(pointer);
    ffi.QTS_FreeValuePointer(ctx, buffer);
    return { error: memory.heapValueHandle(failed) };
  }
  try {
    const value = ffi.QTS_bjson_decode(ctx, buffer);
    const error = ffi.QTS_ResolveException(ctx, value);
    if (error) {
      ffi.QTS_FreeValuePointer(ctx, value);
      return { error: memory.heapValueHandle(error) };
    }
    return { value: memory.heapValueHandle(value) };
  } finally {
    ffi.QTS_FreeValuePointer(ctx, buffer);
  }
}

/**
 * Start-up check of this build's format: the engine's own writer uses the expected version byte
 * and writes exactly what encodePlainJson writes for a sample, and the sample decodes back.
 * Returns a reason when it does not (the caller then keeps to the JSON path).
 */
export function bjsonSelfTest(context: QuickJSContext): string | undefined {
  const sample = { a: 1, "2": [true, false, null, -7, 2 ** 31, 0.5, "x", "é", "\u2603\ud800"], b: { c: "" }, "": [] };
  const ours = encodePlainJson(sample);
  if (!ours) return "the encoder refused its own sample";
  const json = context.newString(JSON.stringify(sample));
  const namespace = context.getProp(context.global, "JSON");
  const parse = context.getProp(namespace, "parse");
  const parsed = context.callFunction(parse, namespace, json);
  json.dispose();
  parse.dispose();
  namespace.dispose();
  if (parsed.error) {
    parsed.error.dispose();
    return "the guest could not parse the sample";
  }
  let theirs: Uint8Array;
  try {
    const encoded = context.encodeBinaryJSON(parsed.value);
    theirs = new Uint8Array(context.getArrayBuffer(encoded).value.slice());
    encoded.dispose();
  } finally {
    parsed.value.dispose();
  }
  if (theirs[0] !== BJSON_VERSION) return `this build writes binary JSON version ${theirs[0]}, not ${BJSON_VERSION}`;
  if (Buffer.compare(Buffer.from(theirs), Buffer.from(ours.bytes)) !== 0 && !sameAfterPadding(theirs, ours.bytes)) {
    return "this build's binary JSON differs from the encoder's";
  }
  const decoded = decodeInGuest(context, ours.bytes);
  if (!("value" in decoded)) {
    if ("error" in decoded) decoded.error.dispose();
    return "the guest could not decode the sample";
  }
  const back = context.dump(decoded.value);
  decoded.value.dispose();
  return JSON.stringify(back) === JSON.stringify(sample) ? undefined : "the sample did not decode to itself";
}

/** The encoder pads counts to 5 bytes; the engine writes them minimal. Compare with that undone. */
function sameAfterPadding(engine: Uint8Array, ours: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(engine), Buffer.from(canonicalCounts(ours))) === 0;
}

/** Re-encode padded 5-byte LEB128 counts (object and array headers) minimally. */
function canonicalCounts(bytes: Uint8Array): Uint8Array {
  const out: number[] = [];
  let i = 0;
  const copyLeb = () => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const byte = bytes[i++];
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if ((byte & 0x80) === 0) break;
    }
    let v = value;
    while (v >= 0x80) {
      out.push((v & 0x7f) | 0x80);
      v = Math.floor(v / 128);
    }
    out.push(v);
    return value;
  };
  const copyString = () => {
    const header = copyLeb();
    const size = (header >>> 1) << (header & 1);
    for (let end = i + size; i < end; ) out.push(bytes[i++]);
  };
  const value = (): void => {
    const tag = bytes[i++];
    out.push(tag);
    if (tag === TAG.int32) {
      do out.push(bytes[i]);
      while (bytes[i++] & 0x80);
    } else if (tag === TAG.float64) for (let end = i + 8; i < end; ) out.push(bytes[i++]);
    else if (tag === TAG.string) copyString();
    else if (tag === TAG.array) for (let n = copyLeb(); n > 0; n--) value();
    else if (tag === TAG.object)
      for (let n = copyLeb(); n > 0; n--) {
        copyLeb();
        value();
      }
  };
  out.push(bytes[i++]);
  for (let n = copyLeb(); n > 0; n--) copyString();
  value();
  return Uint8Array.from(out);
}
