// `npm run bench -- layer`: what the codemode layer (src/codemode, src/tools: options, limits,
// the run's state, each call's invocation, the result) costs beside the engine alone. The same
// Codemode's engine runs the very request cm.run sends it (captured from a first run), with the
// cheapest callbacks, so the difference is the layer's own work; raw quickjs-emscripten runs the
// same programs for the ratios of issue 12. The three are interleaved in rounds: the machine's
// load drifts, and each round compares the three under the same load.
import { loadavg } from "node:os";
import Table from "cli-table3";
import { createCodemode, defineTool, z } from "../src/index.js";
import type { RunCallbacks, RunHandle, SandboxEngine } from "../src/engine/engine.js";
import type { RunRequest } from "../src/engine/protocol.js";
import { RawQuickJS, type HostTool } from "./raw.js";

export interface LayerRow {
  name: string;
  unit: "ms" | "µs";
  ours: number;
  engine: number;
  raw: number;
  rounds: number;
}

const median = (samples: number[]): number => [...samples].sort((a, b) => a - b)[samples.length >> 1]!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function layerCosts(quick: boolean): Promise<LayerRow[]> {
  const echo = defineTool({ name: "echo", description: "echo", input: z.object({ i: z.number() }), output: z.object({ i: z.number() }), execute: async (input) => input });
  const cm = await createCodemode({ tools: [echo], limits: { maxToolCalls: 1_000_000 } });
  const engine = (cm as unknown as { engine: SandboxEngine }).engine;
  const raw = await RawQuickJS.create();
  const hostTools: Record<string, HostTool> = { echo: async (args) => args };
  // The request cm.run sends for a program, captured once (run ids are fresh per run).
  const requests = new Map<string, RunRequest>();
  const original = engine.run.bind(engine);
  engine.run = (request: RunRequest, callbacks: RunCallbacks, signal?: AbortSignal): RunHandle => {
    if (!requests.has(request.code)) requests.set(request.code, structuredClone(request));
    return original(request, callbacks, signal);
  };
  let next = 0;
  const runEngine = async (code: string) => {
    const request = requests.get(code)!;
    let handle!: RunHandle;
    handle = original({ ...request, runId: `layer${++next}` }, { onCall: (callId, _path, args) => handle.settle(callId, true, args), onFlush() {}, onStore() {} });
    const done = await handle.done;
    if (!done.ok) throw new Error(`bench program failed: ${JSON.stringify(done.error)}`);
  };
  const runOurs = async (code: string) => {
    const result = await cm.run(code);
    if (result.structuredContent.status !== "ok") throw new Error(`bench program failed: ${result.content[0]!.text}`);
  };
  const CALLS = 1000;
  const cases = [
    { name: 'warm text("hi"), back to back', unit: "ms" as const, code: `text("hi")`, per: 1, times: quick ? 30 : 300, pauseMs: 0 },
    { name: 'warm text("hi") after 50 ms idle', unit: "ms" as const, code: `text("hi")`, per: 1, times: quick ? 5 : 20, pauseMs: 50 },
    {
      name: "Promise.all of 1,000 (per call)",
      unit: "µs" as const,
      code: `await Promise.all(Array.from({ length: ${CALLS} }, (_, i) => tools.echo({ i })))`,
      per: CALLS / 1000,
      times: quick ? 3 : 10,
      pauseMs: 0,
    },
  ];
  const rounds = quick ? 2 : 5;
  const rows: LayerRow[] = [];
  try {
    for (const item of cases) {
      for (let i = 0; i < 5; i++) await runOurs(item.code); // warm-up, and the request captured
      const per: Record<"ours" | "engine" | "raw", number[]> = { ours: [], engine: [], raw: [] };
      const measure = async (run: () => Promise<unknown>) => {
        const samples: number[] = [];
        for (let i = 0; i < item.times; i++) {
          if (item.pauseMs) await sleep(item.pauseMs);
          const start = performance.now();
          await run();
          samples.push((performance.now() - start) / item.per);
        }
        return median(samples);
      };
      for (let round = 0; round < rounds; round++) {
        per.ours.push(await measure(() => runOurs(item.code)));
        per.engine.push(await measure(() => runEngine(item.code)));
        per.raw.push(await measure(() => raw.run(item.code, hostTools)));
      }
      rows.push({ name: item.name, unit: item.unit, ours: median(per.ours), engine: median(per.engine), raw: median(per.raw), rounds });
    }
  } finally {
    engine.run = original;
    await cm.close();
  }
  return rows;
}

export async function printLayerCosts(quick: boolean): Promise<void> {
  const table = new Table({ head: ["workload (median of round medians)", "cm.run", "engine alone", "codemode layer", "raw quickjs", "cm.run / raw", "engine / raw", "rounds"] });
  for (const row of await layerCosts(quick)) {
    const fmt = (value: number) => (row.unit === "µs" ? `${value.toFixed(1)} µs` : `${value.toFixed(3)} ms`);
    table.push([
      row.name,
      fmt(row.ours),
      fmt(row.engine),
      fmt(row.ours - row.engine),
      fmt(row.raw),
      `${(row.ours / row.raw).toFixed(2)}×`,
      `${(row.engine / row.raw).toFixed(2)}×`,
      String(row.rounds),
    ]);
  }
  console.log("The codemode layer beside the engine alone (the same request) and raw quickjs-emscripten, interleaved in rounds:");
  console.log(table.toString());
  console.log(
    `load average at the end: ${loadavg()
      .map((load) => load.toFixed(2))
      .join(", ")} (the machine has its cores shared: compare ratios, not times)`,
  );
}
