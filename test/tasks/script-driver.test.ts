import { describe, it, expect } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentRegistry, TaskHost, memoryTaskStore, type ScriptRunner } from "../../src/tasks/index.js";

describe("script driver", () => {
  it("passes the agent's program and task to an injected in-process runner (test double for createCodemode's sandbox)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "script-agent-"));
    writeFileSync(join(dir, "shout.js"), "text(task.toUpperCase())");
    writeFileSync(join(dir, "shout.md"), "---\ndescription: shouts\ndriver: script\nscript: shout.js\nread_only: true\n---\n");
    const calls: unknown[] = [];
    const runner: ScriptRunner = async (code, o) => {
      calls.push({ code, task: o.task, depth: o.depth, taskId: o.taskId, readOnly: o.readOnly, cwd: o.cwd, agent: o.agent.name });
      if (o.task === "fail") return { output: "half", ok: false, error: "exception: boom" };
      return { output: o.task.toUpperCase(), ok: true };
    };
    const host = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ dirs: [dir] }), scriptRunner: runner, cwd: dir });
    const rec = await host.spawn({ agent: "shout", task: "hi" });
    expect([rec.status, rec.exitCode, rec.readOnlyTier, rec.usage, host.output(rec.id).output]).toStrictEqual(["succeeded", 0, "enforced", { input: 0, output: 0, cost: 0, turns: 1 }, "HI"]);
    expect(calls).toStrictEqual([{ code: "text(task.toUpperCase())", task: "hi", depth: 1, taskId: rec.id, readOnly: true, cwd: dir, agent: "shout" }]);
    const err = (await host.spawn({ agent: "shout", task: "fail" }).catch((e: unknown) => e)) as { taskId: string };
    const failed = host.get(err.taskId)!;
    expect([failed.status, failed.exitCode, failed.errorMessage]).toStrictEqual(["failed", 1, "exception: boom"]);
  });

  it("fails a script task clearly when the host has no runner", async () => {
    const host = new TaskHost({
      store: memoryTaskStore(),
      agents: new AgentRegistry({ dirs: [], agents: [{ name: "s", description: "d", driver: "script", scriptCode: "text(1)" }] }),
    });
    const err = (await host.spawn({ agent: "s", task: "t" }).catch((e: unknown) => e)) as { taskId: string };
    expect(host.get(err.taskId)!.errorMessage).toBe(
      'agent "s" uses the script driver but this task host has no script runner; create it through createCodemode, or pass the scriptRunner option to TaskHost',
    );
  });

  it("a runner attached after the host was built runs the next script task; a second one is refused", async () => {
    const host = new TaskHost({
      store: memoryTaskStore(),
      agents: new AgentRegistry({ dirs: [], agents: [{ name: "s", description: "d", driver: "script", scriptCode: "text(1)" }] }),
    });
    const runner: ScriptRunner = async (code, o) => ({ output: `${o.task}: ${code}`, ok: true });
    host.attach({ scriptRunner: runner });
    const rec = await host.spawn({ agent: "s", task: "t" });
    expect([rec.status, host.output(rec.id).output]).toStrictEqual(["succeeded", "t: text(1)"]);
    expect(() => host.attach({ scriptRunner: runner })).toThrow("TaskHost.attach: this host has a script runner already");
    await host.close();
  });
});
