// The ledger of a replayable run (docs/approvals.md): every tool call that completed, in the order
// the program saw them settle and when, and the clock readings the program took. A resumed run
// starts the program again from the top and answers each recorded call from here instead of
// running it again, so the program takes the same path up to the call that waited for a person.
import { randomFillSync } from "node:crypto";
import { CLOCK_MARK } from "../engine/protocol.js";
import { headChars } from "../text.js";

/** One completed call: what the program sent and what it received. */
export interface LedgerCall {
  /** The call's number in the run (1, 2, …, in the order the program issued them). */
  seq: number;
  /** The tool as the program reached it ("name" or "namespace.name"). */
  path: string;
  /** The argument JSON exactly as the program sent it. */
  args: string;
  ok: boolean;
  /** The JSON the program received: the value, or the error it rejected with. */
  json: string;
  /** Its place among the run's settled calls (0, 1, …): replay releases results in this order. */
  order: number;
  /** Milliseconds from the start of the run to when it settled: replay releases it no earlier. */
  at: number;
}

/** Clock readings kept: [value, repeats] pairs. A busy loop on Date.now() adds one pair a millisecond. */
const MAX_CLOCK_PAIRS = 200_000;

/** The readings a program took of Date.now()/new Date(), run-length encoded as [value, repeats, …]. */
export class ClockRecord {
  readonly pairs: number[] = [];

  /** Readings the guest sent with a call; anything that is not a list of pairs (a program that broke its own prelude) is ignored. */
  add(readings: unknown): void {
    if (!Array.isArray(readings) || readings.length % 2 !== 0) return;
    for (let i = 0; i < readings.length; i += 2) {
      const value = readings[i];
      const repeats = readings[i + 1];
      if (typeof value !== "number" || !Number.isFinite(value) || !Number.isSafeInteger(repeats) || repeats < 1) return;
      const last = this.pairs.length - 2;
      if (last >= 0 && this.pairs[last] === value) this.pairs[last + 1]! += repeats;
      else if (this.pairs.length / 2 < MAX_CLOCK_PAIRS) this.pairs.push(value, repeats);
      else return;
    }
  }
}

/**
 * A call message's arguments, and the clock readings the prelude put before them
 * (CLOCK_MARK + JSON + CLOCK_MARK, see engine/protocol.ts). JSON text never starts with the mark.
 */
export function splitClock(argsJson: string): { args: string; readings?: unknown } {
  if (!argsJson.startsWith(CLOCK_MARK)) return { args: argsJson };
  const end = argsJson.indexOf(CLOCK_MARK, 1);
  if (end < 0) return { args: argsJson };
  let readings: unknown;
  try {
    readings = JSON.parse(argsJson.slice(1, end));
  } catch {
    readings = undefined;
  }
  return { args: argsJson.slice(end + 1), readings };
}

/** A fresh Math.random seed: four 32-bit words. */
export function randomSeed(): number[] {
  const words = new Uint32Array(4);
  randomFillSync(words);
  return [...words];
}

/** What a replayed call is answered with, or why the program's call does not match the ledger. */
export type ReplayMatch = { kind: "recorded"; call: LedgerCall } | { kind: "live" } | { kind: "diverged"; message: string };

/** Answers the calls of a resumed run from the ledger of the run it continues. */
export class Replayer {
  private readonly bySeq = new Map<number, LedgerCall>();
  private readonly seen = new Set<number>();

  constructor(calls: readonly LedgerCall[]) {
    for (const call of calls) this.bySeq.set(call.seq, call);
  }

  get size(): number {
    return this.bySeq.size;
  }

  match(seq: number, path: string, args: string): ReplayMatch {
    const call = this.bySeq.get(seq);
    if (!call) return { kind: "live" };
    this.seen.add(seq);
    if (call.path !== path || call.args !== args) {
      return {
        kind: "diverged",
        message: `call ${seq} of the resumed program is tools.${path}(${preview(args)}), but the run it continues made tools.${call.path}(${preview(call.args)}) there; a resumed program must make the same calls with the same arguments up to the approval (no host call was run)`,
      };
    }
    return { kind: "recorded", call };
  }

  /** Recorded calls the resumed program never made. */
  missing(): LedgerCall[] {
    return [...this.bySeq.values()].filter((call) => !this.seen.has(call.seq));
  }
}

function preview(json: string): string {
  return json.length > 120 ? `${headChars(json, 120)}…` : json;
}
