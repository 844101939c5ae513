// The limits of a run (docs/limits.md): defaults, validation of what a host passes, and merging per run.
import type { RunLimits } from "../engine/protocol.js";
import { describeReceived as describe } from "../text.js";

export interface Limits {
  /** Wall-clock deadline of a run (default 30 s, at most 600 s). */
  timeoutMs: number;
  /** Real cap on the guest's memory (default 64 MiB). */
  memoryBytes: number;
  /** Guest stack (default 1 MiB). */
  stackBytes: number;
  /** Tool calls per run (default 1,000). */
  maxToolCalls: number;
  /** Tool calls running at once per run; further calls wait in FIFO order (default 16). */
  maxInFlight: number;
  /** One argument or result crossing the sandbox wall (default 8 MiB). */
  maxCrossingBytes: number;
  /** Model-visible output (default 40,000 bytes). */
  outputBudget: number;
  /** Largest spill file of full output (default 64 MiB); past it the spill is cut too. */
  maxSpillBytes: number;
  /** One `store()` value (default 256 KiB). */
  storeValueBytes: number;
  /** All `store()` values of one session (default 1 MiB). */
  storeSessionBytes: number;
  /** Pending timers per run (default 10,000). */
  maxTimers: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  timeoutMs: 30_000,
  memoryBytes: 64 * 1024 * 1024,
  stackBytes: 1024 * 1024,
  maxToolCalls: 1_000,
  maxInFlight: 16,
  maxCrossingBytes: 8 * 1024 * 1024,
  outputBudget: 40_000,
  maxSpillBytes: 64 * 1024 * 1024,
  storeValueBytes: 256 * 1024,
  storeSessionBytes: 1024 * 1024,
  maxTimers: 10_000,
});

/**
 * QuickJS measures its stack limit down from where its runtime started, inside the build's 5 MiB
 * C stack (STACK_SIZE of quickjs-emscripten's Makefile; src/engine/snapshot.ts derives it and a
 * test pins this bound below it). A larger limit reached past the stack's bottom: from about
 * 5 MiB every call "overflowed" and each run failed before the prelude, and just under it deep
 * recursion would write over the static data below the stack. 1 MiB is left for native frames.
 */
export const MAX_STACK_BYTES = 4 * 1024 * 1024;

/** The range of each limit (inclusive); the configuration file's schema is built from it too. */
export const LIMIT_RANGES: Readonly<Record<keyof Limits, readonly [min: number, max: number]>> = {
  timeoutMs: [1, 600_000],
  memoryBytes: [8 * 1024 * 1024, 2 * 1024 * 1024 * 1024],
  stackBytes: [64 * 1024, MAX_STACK_BYTES],
  maxToolCalls: [0, 1_000_000],
  maxInFlight: [1, 1_024],
  maxCrossingBytes: [1_024, 512 * 1024 * 1024],
  outputBudget: [256, 10 * 1024 * 1024],
  maxSpillBytes: [0, 16 * 1024 * 1024 * 1024],
  storeValueBytes: [0, 64 * 1024 * 1024],
  storeSessionBytes: [0, 256 * 1024 * 1024],
  maxTimers: [0, 1_000_000],
};

/** Validate a partial limits object; `where` names it in errors (e.g. "options.limits"). */
export function checkLimits(value: unknown, where: string): Partial<Limits> {
  if (value === undefined) return {};
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`${where} must be an object of limits, got ${describe(value)}`);
  }
  const result: Partial<Limits> = {};
  for (const [key, raw] of Object.entries(value)) {
    if (!Object.hasOwn(LIMIT_RANGES, key)) {
      throw new TypeError(`${where}.${key} is not a limit; known limits: ${Object.keys(LIMIT_RANGES).join(", ")}`);
    }
    if (raw === undefined) continue;
    const [min, max] = LIMIT_RANGES[key as keyof Limits];
    if (typeof raw !== "number" || !Number.isInteger(raw) || raw < min || raw > max) {
      throw new RangeError(`${where}.${key} must be an integer from ${min} to ${max}, got ${describe(raw)}`);
    }
    result[key as keyof Limits] = raw;
  }
  return result;
}

export function mergeLimits(...layers: Partial<Limits>[]): Limits {
  return Object.assign({}, DEFAULT_LIMITS, ...layers) as Limits;
}

export function engineLimits(limits: Limits): RunLimits {
  return {
    timeoutMs: limits.timeoutMs,
    memoryBytes: limits.memoryBytes,
    stackBytes: limits.stackBytes,
    maxToolCalls: limits.maxToolCalls,
    maxCrossingBytes: limits.maxCrossingBytes,
    storeValueBytes: limits.storeValueBytes,
    storeSessionBytes: limits.storeSessionBytes,
    maxTimers: limits.maxTimers,
    outputBytes: limits.outputBudget,
  };
}
