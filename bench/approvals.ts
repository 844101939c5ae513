// What approvals cost (docs/approvals.md), as ratios in one run: a runtime that binds a gated
// tool records every run (seeded random, recorded clock, a ledger, the gate on every call); one
// that binds none records nothing. And a resume, which replays the calls before the gate.
//
//   npm run build && node dist/bench/approvals.js [quick]
import Table from "cli-table3";
import { createCodemode, defineTool, z, type Codemode } from "../src/index.js";

const quick = process.argv.includes("quick");
const times = quick ? 10 : 60;

const echo = defineTool({ name: "echo", description: "echo", input: z.object({ i: z.number() }), output: z.object({ i: z.number() }), execute: async ({ i }) => ({ i }) });
const gated = defineTool({ name: "gated", description: "gated", approval: "required", input: z.object({}), output: z.object({ ok: z.boolean() }), execute: async () => ({ ok: true }) });

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** Both sides, alternating sample by sample, so a busy machine slows them alike: medians in ms. */
async function pair(a: () => Promise<unknown>, b: () => Promise<unknown>): Promise<[number, number]> {
  for (let i = 0; i < 5; i++) {
    await a();
    await b();
  }
  const samples: [number[], number[]] = [[], []];
  for (let i = 0; i < times; i++) {
    for (const [side, fn] of [a, b].entries()) {
      const start = performance.now();
      await fn();
      samples[side]!.push(performance.now() - start);
    }
  }
  return [median(samples[0]), median(samples[1])];
}

const CALLS = `for (let i = 0; i < 50; i++) await tools.echo({ i });`;
const CLOCK = `let n = 0; for (let i = 0; i < 20000; i++) n += Date.now() & 1; n += Math.random(); await tools.echo({ i: 1 });`;
const BEFORE_GATE = `for (let i = 0; i < 50; i++) await tools.echo({ i }); await tools.gated({});`;

async function main(): Promise<void> {
  const plain: Codemode = await createCodemode({ tools: [echo], workers: { max: 1 } });
  const recording: Codemode = await createCodemode({ tools: [echo, gated], workers: { max: 1 } });
  const rows: Array<[string, number, number]> = [];
  try {
    rows.push([
      "50 tool calls",
      ...(await pair(
        () => plain.run(CALLS),
        () => recording.run(CALLS),
      )),
    ]);
    rows.push([
      "20,000 Date.now() + 1 call",
      ...(await pair(
        () => plain.run(CLOCK),
        () => recording.run(CLOCK),
      )),
    ]);
    // The 50 calls run live (then the gate interrupts), against the same run and a resume that replays them.
    const both = async () => {
      const first = await recording.run(BEFORE_GATE);
      await recording.resume(first.structuredContent.continuation!, { approvals: { call_51: "allow" } });
    };
    rows.push(["50 calls then the gate: run (interrupts) vs run + resume", ...(await pair(() => recording.run(BEFORE_GATE), both))]);
  } finally {
    await plain.close();
    await recording.close();
  }
  const table = new Table({ head: ["case", "baseline ms (median)", "with approvals ms", "ratio"] });
  for (const [name, base, other] of rows) table.push([name, base.toFixed(2), other.toFixed(2), `${(other / base).toFixed(2)}×`]);
  console.log(table.toString());
}

await main();
