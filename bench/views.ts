// What "compact ⊆ full, always checked" costs per call: the definition-time proof leaves nothing to
// check for the runtime's own tools, and a residual check (a union the schemas could not pair)
// compares only that subtree, against the second whole projection `development: true` adds.
import { z } from "zod";
import { defineTool, invokeTool, type Tool, type ToolContext } from "../src/index.js";
import { AgentRegistry, TaskHost, memoryTaskStore } from "../src/tasks/index.js";
import { ptcTaskListTool } from "../src/ptc/index.js";
import { toolInternals } from "../src/tools/define.js";
import { checkCompactResult } from "../src/tools/view-schemas.js";
import type { TaskRow } from "./tasks.js";

const ROWS = 100;
const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "bench", runId: "bench", depth: 0 });

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

async function time(times: number, fn: () => unknown): Promise<number> {
  for (let i = 0; i < 20; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

function unionTool(): { tool: Tool; record: Record<string, unknown> } {
  // Rows of plain fields and one union the two views declare differently: the union is the one
  // part defineTool cannot prove, so only it is checked per result.
  const plain = { id: z.string(), name: z.string(), state: z.enum(["a", "b"]), count: z.number().int() };
  const compactRow = z.object({ ...plain, v: z.union([z.object({ a: z.string() }), z.string()]) });
  const fullRow = z.object({
    ...plain,
    v: z.union([z.object({ a: z.string(), b: z.string() }), z.string()]),
    owner: z.object({ pid: z.number().int(), start: z.string() }),
    created_at: z.string(),
    tags: z.array(z.string()),
    detail: z.string(),
  });
  const record = {
    rows: Array.from({ length: ROWS }, (_, i) => ({
      id: `r${i}`,
      name: `row ${i}`,
      state: "a" as const,
      count: i,
      v: { a: "x", b: "y" },
      owner: { pid: 1, start: "s" },
      created_at: "2026-01-01T00:00:00.000Z",
      tags: ["t1", "t2"],
      detail: "d".repeat(200),
    })),
  };
  const tool = defineTool({
    name: "rows",
    description: "rows",
    input: z.object({}),
    views: { compact: z.object({ rows: z.array(compactRow) }), full: z.object({ rows: z.array(fullRow) }) },
    execute: () => record,
  });
  return { tool, record };
}

export async function benchViews(): Promise<TaskRow[]> {
  const host = new TaskHost({
    store: memoryTaskStore(),
    agents: new AgentRegistry({ dirs: [], agents: [{ name: "fn", description: "answers", driver: "function", run: async ({ task }) => `done ${task}` }] }),
  });
  try {
    for (let i = 0; i < ROWS; i++) await host.spawn({ agent: "fn", task: `task ${i}`, label: `t${i}` });
    const list = ptcTaskListTool(host);
    const call = (development: boolean) => invokeTool(list, {}, { ctx: ctx(), development, audience: "program" });
    const plain = await time(300, () => call(false));
    const development = await time(300, () => call(true));
    const residuals = toolInternals(list).subsetChecks ?? [];

    const { tool, record } = unionTool();
    const compact = (await invokeTool(tool, {}, { ctx: ctx(), audience: "program" })).structuredContent!;
    const checks = toolInternals(tool).subsetChecks!;
    const residual = await time(2000, () => checkCompactResult(checks, compact, record));
    const fullView = toolInternals(tool).views!.full;
    const second = await time(2000, () => z.safeParse(fullView.zod as unknown as z.ZodType, fullView.project(record)));
    return [
      {
        name: `ptc_task_list, ${ROWS} rows, compact (per call)`,
        ours: plain,
        floor: 0,
        unit: "ms",
        note: `subset left to check per result: ${residuals.length} subtrees; development's 2nd full projection: ${development.toFixed(3)} ms (${(development / plain).toFixed(1)}×)`,
      },
      {
        name: `residual subset check, ${ROWS}-row union tool`,
        ours: residual * 1000,
        floor: 0,
        unit: "µs",
        note: `a 2nd full projection + parse instead: ${(second * 1000).toFixed(1)} µs (${(second / residual).toFixed(1)}×)`,
      },
    ];
  } finally {
    await host.close();
  }
}
