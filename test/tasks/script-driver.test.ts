import { describe, it, expect } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentRegistry, TaskHost, memoryTaskStore, type ScriptRunner } from "../../src/tasks/index.js";
import { SCRIPT_MAX_BYTES } from "../../src/tasks/drivers/script.js";

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

  it("a program file that is a FIFO, a link to /dev/zero or too large fails its task at once, saying why; the next task runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "script-agent-"));
    execFileSync("mkfifo", [join(dir, "pipe.js")]);
    symlinkSync("/dev/zero", join(dir, "zero.js"));
    writeFileSync(join(dir, "huge.js"), "text(1)");
    truncateSync(join(dir, "huge.js"), 3 * 1024 * 1024 * 1024);
    writeFileSync(join(dir, "edge.js"), "text(1)".padEnd(SCRIPT_MAX_BYTES + 1, " "));
    writeFileSync(join(dir, "ok.js"), "text(task)");
    for (const name of ["pipe", "zero", "huge", "edge", "ok", "gone"]) writeFileSync(join(dir, `${name}.md`), `---\ndescription: d\ndriver: script\nscript: ${name}.js\n---\n`);
    const runner: ScriptRunner = async (code, o) => ({ output: `${o.task}:${code.length}`, ok: true });
    const host = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ dirs: [dir] }), scriptRunner: runner, cwd: dir });
    const failure = async (agent: string) => {
      const err = (await host.spawn({ agent, task: "t" }).catch((e: unknown) => e)) as { taskId: string };
      const rec = host.get(err.taskId)!;
      return [rec.status, rec.errorMessage];
    };
    const why = (name: string, reason: string) => [
      "failed",
      `cannot read the program of agent "${name}" (${join(dir, `${name}.js`)}): ${reason}; fix the "script" field of ${join(dir, `${name}.md`)}`,
    ];
    expect(await failure("pipe")).toStrictEqual(why("pipe", "it is a FIFO, not a regular file"));
    expect(await failure("zero")).toStrictEqual(why("zero", "it is a character device, not a regular file"));
    expect(await failure("huge")).toStrictEqual(why("huge", "it is 3072.0 MiB, larger than the 4.0 MiB a script agent's program may be"));
    expect(await failure("edge")).toStrictEqual(why("edge", "it is 4194305 bytes, larger than the 4194304 bytes a script agent's program may be"));
    expect(await failure("gone")).toStrictEqual(why("gone", "no such file"));
    const ok = await host.spawn({ agent: "ok", task: "fine" });
    expect([ok.status, host.output(ok.id).output]).toStrictEqual(["succeeded", "fine:10"]);
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
