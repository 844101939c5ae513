// Task-system costs: draining many background tasks and listing a large task table, both
// through the tools a model or a program calls (no unsafe floor exists for these).
import { createCodemode } from "../src/index.js";
import { benchViews } from "./views.js";

export interface TaskRow {
  name: string;
  ours: number;
  floor: number;
  unit: "ms" | "µs";
  note?: string;
}

const TASKS = 1000;
const RECORDS = 10_000;

export async function benchTasks(): Promise<TaskRow[]> {
  const rows: TaskRow[] = [];
  const cm = await createCodemode({
    agentDirs: [],
    agents: [{ name: "fn", description: "answers at once", driver: "function", run: async ({ task }) => `done ${task}` }],
  });
  try {
    // 1,000 background spawns through ptc_subagent, then wait for the queue to drain.
    const spawnStart = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      const spawned = await cm.callTool("ptc_subagent", { agent: "fn", task: String(i), background: true });
      ids.push((spawned.structuredContent as { task_id: string }).task_id);
    }
    for (const id of ids) await cm.tasks.wait(id);
    const drained = performance.now() - spawnStart;
    rows.push({ name: `${TASKS} function tasks spawned + drained`, ours: drained, floor: 0, unit: "ms", note: `${((drained / TASKS) * 1000).toFixed(0)} µs per task` });

    // Fill the table to 10,000 records, then list them as a model would.
    for (let i = TASKS; i < RECORDS; i++) {
      const spawned = await cm.callTool("ptc_subagent", { agent: "fn", task: String(i), background: true });
      ids.push((spawned.structuredContent as { task_id: string }).task_id);
    }
    for (const id of ids) await cm.tasks.wait(id);
    const samples: number[] = [];
    let last: Awaited<ReturnType<typeof cm.callTool>> | undefined;
    for (let i = 0; i < 30; i++) {
      const start = performance.now();
      last = await cm.callTool("ptc_task_list", {});
      samples.push(performance.now() - start);
    }
    samples.sort((a, b) => a - b);
    const structuredBytes = Buffer.byteLength(JSON.stringify(last!.structuredContent));
    const detailsBytes = Buffer.byteLength(JSON.stringify(last!.details));
    const contentBytes = Buffer.byteLength(last!.content.map((block) => block.text).join("\n"));
    rows.push({
      name: `ptc_task_list over ${RECORDS} records`,
      ours: samples[samples.length >> 1],
      floor: 0,
      unit: "ms",
      note: `structuredContent ${structuredBytes} B, details ${detailsBytes} B, content ${contentBytes} B`,
    });
  } finally {
    await cm.close();
  }
  rows.push(...(await benchViews()));
  return rows;
}
