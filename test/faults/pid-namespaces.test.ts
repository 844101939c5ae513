// Two hosts on one data dir in different PID namespaces (containers sharing a volume). A host
// that could not see the other's pid treated it as dead and reaped its live task as lost (the
// task really succeeded). Liveness is now each host's lock on the data dir, which the kernel
// holds for a live process in any namespace and drops when it dies.
import { afterAll, describe, expect, it } from "vitest";
import { AgentRegistry, TaskHost, sqliteTaskStore } from "../../src/tasks/index.js";
import { canUnsharePid, cleanUp, startHost, tempDir, until } from "./helpers.js";

afterAll(cleanUp);

const slow = { name: "slow", description: "d", driver: "command", command: ["sh", "-c", "sleep 1.5; echo finished in its own namespace"] };
const forever = { name: "forever", description: "d", driver: "command", command: ["sleep", "300"] };

describe.runIf(canUnsharePid)("hosts in different PID namespaces on one data dir (unshare --pid)", () => {
  it("a host that cannot see the other's pid does not reap its live task; the task succeeds; once that host dies its tasks are lost", async () => {
    const dataDir = tempDir("fault-pidns-");
    const inside = await startHost(
      dataDir,
      [slow, forever],
      `const s = await host.spawn({ agent: "slow", task: "s", background: true });
const f = await host.spawn({ agent: "forever", task: "f", background: true });
console.log(JSON.stringify({ slow: s.id, forever: f.id, pid: process.pid }));`,
      { pidNamespace: true },
    );
    const ids = inside.ready as { slow: string; forever: string; pid: number };
    // Inside its namespace the host is pid 1 (or close): out here that pid is someone else entirely.
    expect(ids.pid).toBeLessThan(10);

    // A host out here, and one in a third namespace, open the same data dir while the first runs.
    const outside = new TaskHost({ store: sqliteTaskStore(dataDir), agents: new AgentRegistry({ dirs: [] }) });
    try {
      expect(outside.reapLost()).toStrictEqual([]);
      const third = await startHost(dataDir, [], `console.log(JSON.stringify({ reaped: host.reapLost().length, active: host.list({ status: ["running"] }).total }));`, { pidNamespace: true });
      expect(third.ready).toStrictEqual({ reaped: 0, active: 2 });
      third.child.kill("SIGKILL");
      await third.exited;

      await until(() => outside.get(ids.slow)?.status === "succeeded", "the task in the other namespace to succeed", 2000);
      expect(outside.output(ids.slow).output).toBe("finished in its own namespace\n");
      expect(outside.get(ids.forever)!.status).toBe("running");

      // The first host dies (its namespace with it): now its task is lost, and reaped.
      inside.child.kill("SIGKILL");
      await inside.exited;
      const reaped = outside.reapLost();
      expect(reaped.map((r) => [r.id, r.status, r.lostReason])).toStrictEqual([[ids.forever, "lost", "host_exited_while_running"]]);
      expect(outside.get(ids.slow)!.status).toBe("succeeded");
    } finally {
      outside.store.close();
    }
  });
});
