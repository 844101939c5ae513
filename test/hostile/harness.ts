// Shared set-up for the hostile-program suite: a codemode instance with tools built to be
// attacked (echo, slow, evil results, counters), host canaries that must never reach the output,
// a snapshot of the host's built-in prototypes, and the checks every hostile run must pass.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, expect } from "vitest";
import { createCodemode, defineTool, z, type Codemode, type RunResult } from "../../src/index.js";

// ---- canaries: secrets only the host can read ---------------------------------------------------

export const CANARY_ENV = `canary-env-${randomBytes(8).toString("hex")}`;
export const CANARY_FILE_TEXT = `canary-file-${randomBytes(8).toString("hex")}`;
const canaryDir = mkdtempSync(join(tmpdir(), "codemode-hostile-"));
export const CANARY_FILE = join(canaryDir, "secret.txt");
writeFileSync(CANARY_FILE, CANARY_FILE_TEXT);
// Registered while the importing test file is collected: runs once that file is done.
afterAll(() => rmSync(canaryDir, { recursive: true, force: true }));
process.env.CODEMODE_HOSTILE_CANARY = CANARY_ENV;

/** Strings whose presence anywhere in a run result would mean a host capability leaked. */
const LEAK_MARKERS: (string | RegExp)[] = [
  CANARY_ENV,
  CANARY_FILE_TEXT,
  process.cwd(),
  process.version,
  "node:internal",
  "file://",
  "[object process]",
  // A V8 stack frame of host code ("at foo (/path/x.js:1:2)" or "(node:…)").
  /\bat [^\n]*\((?:\/|node:)[^)]*:\d+:\d+\)/,
];

// ---- host prototypes -----------------------------------------------------------------------------

type Snapshot = Map<string, string>;

const WATCHED: [string, object][] = [
  ["Object.prototype", Object.prototype],
  ["Array.prototype", Array.prototype],
  ["Function.prototype", Function.prototype],
  ["String.prototype", String.prototype],
  ["Promise.prototype", Promise.prototype],
  ["JSON", JSON],
];

function describeDescriptor(descriptor: PropertyDescriptor): string {
  const parts = [descriptor.enumerable, descriptor.configurable, descriptor.writable].map(String);
  const value = descriptor.value;
  const shown = typeof value === "function" ? `fn:${value.name}` : typeof value === "object" && value !== null ? "object" : String(value);
  return `${parts.join(",")}:${shown}:${typeof descriptor.get}:${typeof descriptor.set}`;
}

export function snapshotPrototypes(): Snapshot {
  const out: Snapshot = new Map();
  for (const [name, target] of WATCHED) {
    for (const key of Reflect.ownKeys(target)) {
      out.set(`${name}.${String(key)}`, describeDescriptor(Object.getOwnPropertyDescriptor(target, key)!));
    }
    out.set(`${name} [[Prototype]]`, String(Object.getPrototypeOf(target) === null ? "null" : typeof Object.getPrototypeOf(target)));
  }
  return out;
}

export const PRISTINE = snapshotPrototypes();

export function expectPrototypesUnchanged(): void {
  const now = snapshotPrototypes();
  const changed: string[] = [];
  for (const [key, value] of now) if (PRISTINE.get(key) !== value) changed.push(key);
  for (const key of PRISTINE.keys()) if (!now.has(key)) changed.push(key);
  expect(changed, "host built-in prototypes changed").toEqual([]);
  // The classic pollution probes, read through fresh objects.
  const probe: Record<string, unknown> = {};
  expect(probe.polluted).toBeUndefined();
  expect(probe.isAdmin).toBeUndefined();
  expect(([] as unknown as Record<string, unknown>).polluted).toBeUndefined();
}

// ---- unhandled rejections in the host ------------------------------------------------------------

export const hostFaults: string[] = [];
process.on("unhandledRejection", (reason) => hostFaults.push(`unhandledRejection: ${String((reason as Error)?.stack ?? reason)}`));
process.on("uncaughtException", (error) => hostFaults.push(`uncaughtException: ${String(error?.stack ?? error)}`));

// ---- the tools a hostile program talks to --------------------------------------------------------

export interface ToolLog {
  /** Inputs as the host received them (after the crossing), per tool. */
  inputs: unknown[];
  counter: number;
  aborted: number;
  /** `tick` calls that started after their run had already ended. */
  late: number;
}

export const log: ToolLog = { inputs: [], counter: 0, aborted: 0, late: 0 };

const anyObject = z.object({}).passthrough();

/** Records the input as received, with facts about its shape that an attack would change. */
function inspect(input: unknown): unknown {
  log.inputs.push(input);
  return input;
}

function waitOrAbort(ms: number, signal: AbortSignal): Promise<{ done: boolean }> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      log.aborted++;
      resolve({ done: false });
      return;
    }
    const timer = setTimeout(() => resolve({ done: true }), ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        log.aborted++;
        resolve({ done: false });
      },
      { once: true },
    );
  });
}

function nest(depth: number): unknown {
  let value: unknown = { leaf: true };
  for (let i = 0; i < depth; i++) value = { n: value };
  return value;
}

export const tools = [
  defineTool({ name: "echo", description: "Returns its input.", input: anyObject, output: anyObject, execute: async (input) => inspect(input) as Record<string, unknown> }),
  // A plain tool (no schemas): the program receives its text.
  { name: "echo_text", description: "Returns its input as JSON text.", execute: async (input: unknown) => JSON.stringify(inspect(input)) },
  defineTool({
    name: "slow",
    description: "Waits `ms` milliseconds unless cancelled.",
    input: z.object({ ms: z.number() }),
    output: z.object({ done: z.boolean() }),
    execute: async ({ ms }, ctx) => waitOrAbort(ms, ctx.signal),
  }),
  defineTool({
    name: "tick",
    description: "Counts calls.",
    input: anyObject,
    output: z.object({ n: z.number() }),
    execute: async () => ({ n: ++log.counter }),
  }),
  defineTool({
    name: "evil",
    description: "Returns a record crafted to pollute whoever merges it.",
    input: z.object({ kind: z.string() }),
    output: anyObject,
    execute: async ({ kind }) => {
      switch (kind) {
        case "proto":
          return JSON.parse('{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"isAdmin":true}},"ok":1}');
        case "deep":
          return { v: nest(500) } as Record<string, unknown>;
        case "deeper":
          return { v: nest(5_000) } as Record<string, unknown>;
        case "big":
          return { s: "x".repeat(9 * 1024 * 1024) };
        case "bigint":
          return { n: 10n } as unknown as Record<string, unknown>;
        case "cycle": {
          const a: Record<string, unknown> = { a: 1 };
          a.self = a;
          return a;
        }
        case "getter":
          return Object.defineProperty({}, "boom", {
            enumerable: true,
            get() {
              throw new Error("getter on a host result");
            },
          }) as Record<string, unknown>;
        case "weird":
          return { nan: NaN, inf: -Infinity, neg0: -0, date: new Date(0), undef: undefined, fn: () => 1, nul: "a\u0000b", lone: "\ud800" } as Record<string, unknown>;
        case "large-odd":
          return { s: "\ud800x".repeat(10_000) + "\u0000" + "é\u{1F600}".repeat(10_000) + "\udc00" };
        case "hooks":
          return { toJSON: "data", valueOf: 1, toString: null, constructor: { name: "Evil" }, then: [1], __defineGetter__: "x" };
        case "wide":
          return Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
        case "thenable":
          return { then: "not a function", value: 1 };
        default:
          throw new Error(`unknown kind ${kind}`);
      }
    },
  }),
  defineTool({
    name: "fail",
    description: "Fails with a crafted error.",
    input: z.object({ kind: z.string() }),
    output: anyObject,
    execute: async ({ kind }) => {
      if (kind === "long") throw new Error("A".repeat(10_000) + "END");
      if (kind === "nul") throw new Error("before\u0000after");
      if (kind === "string") throw "a thrown string";
      if (kind === "null") throw null;
      if (kind === "trap") {
        const error = new Error("trap");
        Object.defineProperty(error, "message", {
          get() {
            throw new Error("message getter");
          },
        });
        throw error;
      }
      throw new Error(`fail ${kind}`);
    },
  }),
];

export async function hostileCodemode(limits: Record<string, number> = {}): Promise<Codemode> {
  return createCodemode({ tools, limits: { timeoutMs: 1000, ...limits }, workers: { max: 4, min: 1 } });
}

// ---- checks --------------------------------------------------------------------------------------

export function resultText(result: RunResult): string {
  const { fullOutputPath: _ignored, ...details } = result.details;
  return JSON.stringify({ content: result.content, structuredContent: result.structuredContent, details });
}

export function expectNoHostLeak(result: RunResult): void {
  const text = resultText(result);
  for (const marker of LEAK_MARKERS) {
    if (typeof marker === "string") expect(text.includes(marker), `run output shows host data ${JSON.stringify(marker)}: ${text.slice(0, 500)}`).toBe(false);
    else expect(marker.test(text), `run output matches ${marker}: ${text.slice(0, 500)}`).toBe(false);
  }
}

export async function expectBenignRun(cm: Codemode): Promise<void> {
  const result = await cm.run('text("still fine"); return (await tools.echo({ a: [1, "two", null] })).a', { timeoutMs: 5_000 });
  expect(result.structuredContent).toMatchObject({ status: "ok", value: [1, "two", null] });
  // The return value is not shown when the program printed; a warning after the output says so.
  expect(result.content[0].text.split("\n\n")[0]).toBe("still fine");
}
