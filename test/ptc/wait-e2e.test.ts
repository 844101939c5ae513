// Programs that wait for their subagents with ptc_task_wait instead of polling, in real sandboxes.
import { describe, it, expect, afterEach } from "vitest";
import { createCodemode, type Codemode } from "../../src/codemode/codemode.js";

const opened: Codemode[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((cm) => cm.close()));
});

async function open(options: Parameters<typeof createCodemode>[0]): Promise<Codemode> {
  const cm = await createCodemode({ agentDirs: [], workers: { max: 4 }, tasks: { killGraceMs: 100 }, ...options });
  opened.push(cm);
  return cm;
}

const squarer = { name: "squarer", description: "squares its task", driver: "script" as const, scriptCode: "await sleep(10); text(String(Number(task) ** 2));" };

describe("ptc_task_wait in programs", () => {
  it("a fan-out waits for every subagent in one call, then reads and aggregates their outputs", async () => {
    const cm = await open({ agents: [squarer], tasks: { maxRunning: 2 } });
    const result = await cm.run(`
const ids = [];
for (let i = 1; i <= 5; i++) ids.push((await tools.ptc_subagent({ agent: "squarer", task: String(i), background: true, label: "sq" + i })).task_id);
const waited = await tools.ptc_task_wait({});
let sum = 0;
for (const id of waited.done) sum += Number((await tools.ptc_task_output({ task_id: id })).output);
text(JSON.stringify({ same: JSON.stringify(waited.done) === JSON.stringify(ids), statuses: waited.tasks.map((t) => t.status), pending: waited.pending, timed_out: waited.timed_out, sum }));
`);
    expect(result.content).toStrictEqual([
      { type: "text", text: JSON.stringify({ same: true, statuses: ["succeeded", "succeeded", "succeeded", "succeeded", "succeeded"], pending: [], timed_out: false, sum: 55 }) },
    ]);
    // 5 spawns, one wait however long it took, 5 reads.
    expect(result.structuredContent.tool_calls).toBe(11);
    expect(result.details.calls.filter((c) => c.tool === "ptc_task_wait").length).toBe(1);
  });

  it("with one running slot, a script subagent waiting for its own subagents lets them run", async () => {
    const fanout = {
      name: "fanout",
      description: "spawns two squarers and waits",
      driver: "script" as const,
      scriptCode: `
const a = await tools.ptc_subagent({ agent: "squarer", task: "3", background: true });
const b = await tools.ptc_subagent({ agent: "squarer", task: "4", background: true });
const w = await tools.ptc_task_wait({});
let out = [];
for (const id of w.done) out.push((await tools.ptc_task_output({ task_id: id })).output);
text([a.status, b.status, w.timed_out, out.join("+")].join(" "));`,
    };
    const cm = await open({ agents: [squarer, fanout], tasks: { maxRunning: 1 } });
    const result = await cm.run(
      `const r = await tools.ptc_subagent({ agent: "fanout", task: "go" }); const o = await tools.ptc_task_output({ task_id: (await tools.ptc_task_list({})).tasks[0].id }); text(r.status + ": " + o.output);`,
      { timeoutMs: 20_000 },
    );
    // Both children queued behind the one slot their parent held until it began to wait.
    expect(result.content).toStrictEqual([{ type: "text", text: "succeeded: queued queued false 9+16" }]);
  });

  it("a wait that would outlast the program's deadline returns before it, timed out, and the program prints", async () => {
    const hang = { name: "hang", description: "never ends", driver: "script" as const, scriptCode: "await sleep(600_000);" };
    const cm = await open({ agents: [hang] });
    const result = await cm.run(
      `
const t = await tools.ptc_subagent({ agent: "hang", task: "x", background: true });
const w = await tools.ptc_task_wait({ task_ids: [t.task_id] });
const left = budget().ms_left;
text(JSON.stringify({ timed_out: w.timed_out, pending: w.pending.length, time_left: left > 0 }));
await tools.ptc_task_stop({ task_id: t.task_id });`,
      { timeoutMs: 2_000 },
    );
    expect(result.structuredContent.status).toBe("ok");
    expect(result.content).toStrictEqual([{ type: "text", text: JSON.stringify({ timed_out: true, pending: 1, time_left: true }) }]);
  });

  it("a script subagent stopped while it waits is canceled at once, with the subagents it started", async () => {
    const waiter = {
      name: "waiter",
      description: "waits for a subagent that never ends",
      driver: "script" as const,
      scriptCode: `await tools.ptc_subagent({ agent: "hang", task: "x", background: true }); text("waiting"); await tools.ptc_task_wait({ timeout_ms: 600000 });`,
    };
    const hang = { name: "hang", description: "never ends", driver: "script" as const, scriptCode: "await sleep(600_000);" };
    const cm = await open({ agents: [waiter, hang], limits: { timeoutMs: 60_000 } });
    const result = await cm.run(`
const w = await tools.ptc_subagent({ agent: "waiter", task: "w", background: true });
for (;;) {
  const list = await tools.ptc_task_list({ status: ["running"] });
  if (list.count === 2) break;
  await sleep(5);
}
const stopped = await tools.ptc_task_stop({ task_id: w.task_id, reason: "enough" });
const all = await tools.ptc_task_wait({ timeout_ms: 0 });
const list = await tools.ptc_task_list({});
text(JSON.stringify({ stopped: [stopped.from_status, stopped.status], left: all.pending.length, statuses: list.tasks.map((t) => t.status) }));`);
    expect(result.content).toStrictEqual([{ type: "text", text: JSON.stringify({ stopped: ["running", "canceled"], left: 0, statuses: ["canceled", "canceled"] }) }]);
  });
});
