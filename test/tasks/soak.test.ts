// The task soak's small sibling: bench/soak-tasks.ts's mix of large and hostile outputs with 40
// tasks on one data dir (the bench runs 1,000). Every record must be consistent at the end.
import { describe, expect, it } from "vitest";
import { soakTasks, TASK_KINDS } from "../../bench/soak-tasks.js";

describe("task soak", () => {
  it("40 tasks with large and hostile outputs leave every record consistent, no process behind and the database whole", { timeout: 120_000 }, async () => {
    const report = await soakTasks({ tasks: 40, seed: 11 });
    expect(report.inconsistent).toStrictEqual([]);
    expect(report.leftoverProcesses).toBe(0);
    expect(report.unhandled).toStrictEqual([]);
    expect(report.integrity).toBe("ok");
    expect(report.finalRunOk).toBe(true);
    // The first tasks go through every kind once.
    for (const kind of TASK_KINDS) expect(report.byAgent[kind.agent.name], kind.agent.name).toBeGreaterThan(0);
  });
});
