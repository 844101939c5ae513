import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCodemode, type Codemode } from "../../src/codemode/codemode.js";
import type { AgentInput, TaskHost } from "../../src/tasks/index.js";
import { workspaceTools } from "../../src/workspace/index.js";

let cm: Codemode;
let host: TaskHost;
let root: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "e2e-"));
  writeFileSync(join(root, "notes.txt"), "alpha\nbeta\n");
  const agents: AgentInput[] = [
    // Squares its task after a short wait, so that some children are still running when polled.
    { name: "squarer", description: "squares a number", driver: "script", scriptCode: "await sleep(20); text(String(Number(task) * Number(task)));" },
    {
      name: "reader",
      description: "read-only agent that tries to write",
      driver: "script",
      readOnly: true,
      tools: ["read_file", "write_file"],
      scriptCode: `const f = await tools.read_file({ path: "notes.txt" });
// The engine's wording of the unknown-tool error is its own; this checks only that it is refused.
let w; try { w = typeof tools.write_file; } catch (e) { w = e.name + (e.message.startsWith("tools.write_file is not a tool") ? " (not a tool)" : ": " + e.message); }
let s; try { s = typeof tools.ptc_subagent; } catch (e) { s = e.name; }
text(f.content.split("\\n").length + " lines; write_file: " + w + "; spawn: " + s);`,
    },
    {
      name: "writer",
      description: "may write",
      driver: "script",
      tools: ["write_file"],
      scriptCode: `await tools.write_file({ path: "out.txt", content: task }); text("wrote");`,
    },
  ];
  // The runtime wires its own task host, ptc_* tools and script runner.
  cm = await createCodemode({ agents, agentDirs: [], tools: workspaceTools({ root, write: true }), tasks: { killGraceMs: 100 }, workers: { max: 4 } });
  host = cm.tasks;
});

afterAll(async () => {
  await cm.close();
  rmSync(root, { recursive: true, force: true });
});

describe("a codemode program fanning out script subagents (real QuickJS sandboxes)", () => {
  it("spawns 20 in the background, polls, stops one, reads every output and aggregates", async () => {
    const program = `
const ids = [];
for (let i = 0; i < 20; i++) {
  const r = await tools.ptc_subagent({ agent: "squarer", task: String(i), background: true, label: "sq" + i });
  ids.push(r.task_id);
}
const firstStatuses = {};
for (const id of ids) {
  const o = await tools.ptc_task_output({ task_id: id });
  firstStatuses[o.status === "succeeded" ? "running" : o.status] = true;
}
const stopped = await tools.ptc_task_stop({ task_id: ids[19], reason: "not needed" });
let polls = 0;
for (;;) {
  const live = await tools.ptc_task_list({ status: ["running", "queued"] });
  if (live.count === 0) break;
  polls++;
  await sleep(20);
}
let sum = 0;
const statuses = {};
let usageTurns = 0;
for (const id of ids) {
  const o = await tools.ptc_task_output({ task_id: id });
  statuses[o.status] = (statuses[o.status] || 0) + 1;
  if (o.status === "succeeded") sum += Number(o.output);
  usageTurns += o.usage.turns;
}
text(JSON.stringify({ sum, statuses, stopped: [stopped.from_status, stopped.status, stopped.stop_reason], polled: polls > 0, queuedSeen: firstStatuses.queued === true, usageTurns }));
`;
    const result = await cm.run(program, { timeoutMs: 60_000 });
    expect(result.structuredContent.status).toBe("ok");
    // 0² + … + 18² = 2109; the 20th (queued when stopped) was canceled before it ran.
    expect(result.content).toStrictEqual([
      {
        type: "text",
        text: JSON.stringify({ sum: 2109, statuses: { succeeded: 19, canceled: 1 }, stopped: ["queued", "canceled", "not needed"], polled: true, queuedSeen: true, usageTurns: 19 }),
      },
    ]);
    expect(host.list({ status: ["running", "queued"] }).total).toBe(0);
  });

  it("binds no write_file (and no spawning) into a read-only agent's program; a writable agent writes", async () => {
    const out = await cm.run(`const r = await tools.ptc_subagent({ agent: "reader", task: "look" }); text(r.read_only_tier + " " + r.report_channel);`);
    expect(out.content).toStrictEqual([{ type: "text", text: "enforced none" }]);
    const rec = host.list({ limit: 1 }).records[0]!;
    expect(host.output(rec.id).output).toBe("2 lines; write_file: TypeError (not a tool); spawn: TypeError");
    expect(existsSync(join(root, "x.txt"))).toBe(false);
    const w = await cm.run(`const r = await tools.ptc_subagent({ agent: "writer", task: "hello" }); text(r.status);`);
    expect(w.content).toStrictEqual([{ type: "text", text: "succeeded" }]);
    expect(readFileSync(join(root, "out.txt"), "utf8")).toBe("hello");
  });
});
