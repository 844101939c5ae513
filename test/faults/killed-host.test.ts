// A host SIGKILLed while it runs command tasks. Quiet children (that never write, so never see a
// broken pipe) kept running for good: the next host marked them lost and nothing could stop them,
// because no process group was recorded. Now the group and its leader's start time are on the
// record, and the next host stops what the lost task left running.
import { afterAll, describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import { join } from "node:path";
import { AgentRegistry, TaskHost, sqliteTaskStore } from "../../src/tasks/index.js";
import { cleanUp, processAlive, startHost, tempDir, until } from "./helpers.js";

afterAll(cleanUp);

describe("a host killed with SIGKILL while its command tasks run", () => {
  it("the next host marks them lost and stops their processes — quiet ones, grandchildren and setsid ones included; finished records stay as they were", async () => {
    const dataDir = tempDir("fault-killed-");
    const quiet = { name: "quiet", description: "d", driver: "command", command: ["sh", "-c", "sleep 300 & sleep 300; wait"] };
    const escaper = { name: "escaper", description: "d", driver: "command", command: ["sh", "-c", "setsid sleep 300 & sleep 300"] };
    const done = { name: "done", description: "d", driver: "command", command: ["echo", "finished before the crash"] };
    const host = await startHost(
      dataDir,
      [quiet, escaper, done],
      `const d = await host.spawn({ agent: "done", task: "d" });
const q = await host.spawn({ agent: "quiet", task: "q", background: true });
const e = await host.spawn({ agent: "escaper", task: "e", background: true });
// Wait until the commands have started their sleeps.
const { execSync } = await import("node:child_process");
for (;;) {
  const out = execSync("ps -eo pid=,args=", { encoding: "utf8" });
  const sleeps = out.split("\\n").filter((l) => l.includes("sleep 300")).length;
  if (host.get(q.id).processes && host.get(e.id).processes && sleeps >= 4) break;
  await new Promise((r) => setTimeout(r, 20));
}
console.log(JSON.stringify({ done: d.id, quiet: q.id, escaper: e.id }));`,
    );
    const ids = host.ready as { done: string; quiet: string; escaper: string };
    // Every process of the two tasks: found by the task id each carries in its environment.
    const { findTaskProcesses } = await import("../../src/tasks/processes.js");
    const pids = [...findTaskProcesses(ids.quiet, undefined), ...findTaskProcesses(ids.escaper, undefined)];
    expect(pids.length).toBeGreaterThanOrEqual(5);

    host.child.kill("SIGKILL");
    await host.exited;
    // The children outlive their host: nothing has stopped them yet.
    expect(pids.filter(processAlive).length).toBe(pids.length);

    const next = new TaskHost({ store: sqliteTaskStore(dataDir), agents: new AgentRegistry({ dirs: [] }) });
    try {
      const byId = new Map(next.list().records.map((r) => [r.id, r]));
      for (const id of [ids.quiet, ids.escaper]) {
        const r = byId.get(id)!;
        expect([r.status, r.lostReason, r.processes?.pgid]).toStrictEqual(["lost", "host_exited_while_running", expect.any(Number)]);
        expect(r.errorMessage).toMatch(
          new RegExp(
            `^the host \\(pid ${host.child.pid}\\) exited while the task was running; its output so far is kept — read it with ptc_task_output, or spawn the task again; the \\d+ processes it left running were stopped$`,
          ),
        );
      }
      await until(() => pids.every((pid) => !processAlive(pid)), "every process of the lost tasks to be stopped");
      const d = byId.get(ids.done)!;
      expect([d.status, d.exitCode, next.output(ids.done).output]).toStrictEqual(["succeeded", 0, "finished before the crash\n"]);
      // A lost record is final: a third host finds nothing to do.
      const third = new TaskHost({ store: sqliteTaskStore(dataDir), agents: new AgentRegistry({ dirs: [] }) });
      expect(third.reapLost()).toStrictEqual([]);
      third.store.close();
    } finally {
      next.store.close();
    }
    const db = new Database(join(dataDir, "tasks.db"), { readonly: true });
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    db.close();
  });
});
