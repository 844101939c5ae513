// `npm run bench`: the engine's costs beside the same work in node:vm (no isolation at all — the
// unsafe floor), as ratios, so numbers from a shared, noisy machine still compare.
import vm from "node:vm";
import Table from "cli-table3";
import { createCodemode, defineTool, z, type Codemode } from "../src/index.js";
import { newWasmInstance, pagesFor } from "../src/engine/wasm-instance.js";
import { benchTasks } from "./tasks.js";

interface Row {
  name: string;
  ours: number;
  floor: number;
  unit: "ms" | "µs";
  note?: string;
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

async function sample(times: number, fn: () => Promise<unknown> | unknown): Promise<number> {
  for (let i = 0; i < Math.min(20, times); i++) await fn(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

function vmContext(tools: Record<string, (args: unknown) => Promise<unknown>>) {
  const out: string[] = [];
  const context = vm.createContext({
    text: (value: unknown) => out.push(typeof value === "string" ? value : JSON.stringify(value)),
    // Same crossing discipline as the sandbox: one JSON string each way.
    __call: (name: string, json: string) => tools[name](JSON.parse(json)).then((value) => JSON.stringify(value)),
  });
  vm.runInContext(`globalThis.tools = new Proxy({}, { get: (_, name) => async (args) => JSON.parse(await __call(name, JSON.stringify(args ?? {}))) })`, context);
  return (code: string) => vm.runInContext(`(async () => {${code}\n})()`, context) as Promise<unknown>;
}

async function expectOk(cm: Codemode, code: string): Promise<void> {
  const result = await cm.run(code);
  if (result.structuredContent.status !== "ok") throw new Error(`bench program failed: ${result.content[0].text}`);
}

async function main(): Promise<void> {
  const payload10k = "x".repeat(10 * 1024);
  const payload1m = "y".repeat(1024 * 1024);
  const hostTools = {
    echo: async (args: unknown) => args,
    blob10k: async () => ({ data: payload10k }),
    blob1m: async () => ({ data: payload1m }),
  };
  const blob = z.object({ data: z.string() });
  const tools = [
    defineTool({ name: "echo", description: "echo", input: z.object({ i: z.number() }), output: z.object({ i: z.number() }), execute: async (input) => input }),
    defineTool({ name: "blob10k", description: "10 KB", input: z.object({}), output: blob, execute: hostTools.blob10k }),
    defineTool({ name: "blob1m", description: "1 MB", input: z.object({}), output: blob, execute: hostTools.blob1m }),
  ];
  const cm = await createCodemode({ tools, limits: { maxToolCalls: 1_000_000 } });
  const runVm = vmContext(hostTools);
  const rows: Row[] = [];

  // Module start: compile + instantiate QuickJS with its own memory, vs a fresh vm context.
  rows.push({
    name: "module start (fresh instance)",
    ours: await sample(30, () => newWasmInstance(pagesFor(64 * 1024 * 1024))),
    floor: await sample(30, () => vm.createContext({})),
    unit: "ms",
  });

  rows.push({
    name: 'warm run of text("hi")',
    ours: await sample(500, () => expectOk(cm, `text("hi")`)),
    floor: await sample(500, () => runVm(`text("hi")`)),
    unit: "ms",
  });

  const CALLS = 1000;
  const seq = `for (let i = 0; i < ${CALLS}; i++) await tools.echo({ i })`;
  rows.push({
    name: "tool call, sequential (per call)",
    ours: ((await sample(15, () => expectOk(cm, seq))) / CALLS) * 1000,
    floor: ((await sample(15, () => runVm(seq))) / CALLS) * 1000,
    unit: "µs",
  });
  const par = `await Promise.all(Array.from({ length: ${CALLS} }, (_, i) => tools.echo({ i })))`;
  rows.push({
    name: "tool call, parallel (per call)",
    ours: ((await sample(15, () => expectOk(cm, par))) / CALLS) * 1000,
    floor: ((await sample(15, () => runVm(par))) / CALLS) * 1000,
    unit: "µs",
  });
  rows.push({
    name: "10 KB result into the program",
    ours: await sample(100, () => expectOk(cm, `const r = await tools.blob10k({}); if (r.data.length !== 10240) throw 1`)),
    floor: await sample(100, () => runVm(`const r = await tools.blob10k({}); if (r.data.length !== 10240) throw 1`)),
    unit: "ms",
    note: "whole run",
  });
  rows.push({
    name: "1 MB result into the program",
    ours: await sample(30, () => expectOk(cm, `const r = await tools.blob1m({}); if (r.data.length !== 1048576) throw 1`)),
    floor: await sample(30, () => runVm(`const r = await tools.blob1m({}); if (r.data.length !== 1048576) throw 1`)),
    unit: "ms",
    note: "whole run",
  });
  await cm.close();

  rows.push(...(await benchTasks()));

  const table = new Table({ head: ["measure (median)", "codemode", "node:vm floor", "ratio", "note"] });
  for (const row of rows) {
    const fmt = (value: number) => (row.unit === "µs" ? `${value.toFixed(1)} µs` : `${value.toFixed(3)} ms`);
    table.push([row.name, fmt(row.ours), row.floor > 0 ? fmt(row.floor) : "—", row.floor > 0 ? `${(row.ours / row.floor).toFixed(1)}×` : "—", row.note ?? ""]);
  }
  console.log(table.toString());
}

await main();
