// The one place where what a child reports enters the host. Children lie, flood and send
// garbage (a function agent can emit anything at all): every number is checked here, every
// string bounded, so a record never holds a value a reader cannot show (two usage readings of
// 1e308 once summed to Infinity, were stored as null, and `codemode tasks` crashed on it).
import { previewString } from "./output.js";

/** The largest token count one reading may carry: anything past 2^53 is not a count. */
const MAX_TOKENS = Number.MAX_SAFE_INTEGER;
/** The largest cost (USD) one reading may carry. */
const MAX_COST = 1e9;
/** Longest error message a child's event may set (UTF-8 bytes). */
export const EVENT_MESSAGE_BYTES = 4096;
/** Longest error or stop message stored on a record (UTF-8 bytes). */
export const RECORD_MESSAGE_BYTES = 4096;
/** Largest report (its JSON) a child may send; a larger one is ignored with a note. */
export const REPORT_BYTES = 64 * 1024;

export interface UsageTotals {
  input: number;
  output: number;
  cost: number;
  turns: number;
}

/** A token count from a child: a finite, non-negative number no larger than 2^53 (fractions dropped), else 0. */
export function tokenReading(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= MAX_TOKENS ? Math.floor(value) : 0;
}

/** A cost from a child: a finite, non-negative number of USD (at most 1e9 per reading), else undefined. */
export function costReading(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= MAX_COST ? value : undefined;
}

/** Sums that cannot leave the finite range, however many readings arrive. */
export function addTokens(total: number, reading: number): number {
  return Math.min(MAX_TOKENS, total + reading);
}

export function addCost(total: number, reading: number): number {
  const sum = total + reading;
  return Number.isFinite(sum) ? sum : total;
}

/** The measured cost: from the agent's prices when it has them, rounded so both channels agree. */
export function pricedCost(usage: UsageTotals, prices: { input: number; output: number } | undefined): number {
  const raw = prices ? (usage.input * prices.input + usage.output * prices.output) / 1_000_000 : usage.cost;
  if (!Number.isFinite(raw) || raw < 0) return 0;
  // Sums of float prices drift in the last digits; a stable value keeps both channels equal.
  return raw < 1e6 ? Math.round(raw * 1e9) / 1e9 : raw;
}

/** A message cut to `bytes` of UTF-8, saying how much was cut. */
export function boundedMessage(text: string, bytes: number): string {
  const head = previewString(text, bytes);
  if (head.length === text.length) return text;
  return `${head}… (${text.length - head.length} more characters cut)`;
}

/** The JSON size of a report a child sent, or undefined when it cannot be serialised at all. */
export function reportBytes(report: unknown): number | undefined {
  try {
    const json = JSON.stringify(report);
    return json === undefined ? undefined : Buffer.byteLength(json);
  } catch {
    return undefined;
  }
}
