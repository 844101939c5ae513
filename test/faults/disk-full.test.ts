// A full disk under a running host: ENOSPC from a task's log used to be thrown inside the
// child's stdout handler, uncaught, and take the whole host down; `codemode tasks` then could not
// even list ("database or disk is full"). Now that task fails with the reason, the host lives,
// listing works, and the record is written once there is room again.
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AgentRegistry, MemoryTaskStore, TaskHost, sqliteTaskStore, type AgentInput, type TaskError } from "../../src/tasks/index.js";
import { CLI } from "../mcp/helpers.js";
import { cleanUp, isRoot, smallTmpfs, tempDir, until } from "./helpers.js";

afterAll(cleanUp);

const agents = (): AgentInput[] => [
  // 8 MiB of output, far more than the disk has room for.
  { name: "flood", description: "d", driver: "command", command: ["sh", "-c", "head -c 8388608 /dev/zero | tr '\\0' 'x'"] },
  { name: "quick", description: "d", driver: "command", command: ["echo", "quick and done"] },
];

async function failureOf(p: Promise<unknown>): Promise<TaskError> {
  try {
    await p;
  } catch (err) {
    return err as TaskError;
  }
  throw new Error("expected the task to fail");
}

describe("a full disk", () => {
  it.runIf(isRoot)("ENOSPC on a real 3 MiB tmpfs fails the writing task with the reason; the host lives, lists, and records it once space is back", async () => {
    const dataDir = smallTmpfs("3m");
    const host = new TaskHost({ store: sqliteTaskStore(dataDir), agents: new AgentRegistry({ dirs: [], agents: agents() }), killGraceMs: 200 });
    try {
      // Room the test takes away and gives back: the disk is full once the flood has written.
      const ballast = join(dataDir, "ballast");
      writeFileSync(ballast, Buffer.alloc(1024 * 1024));
      const err = await failureOf(host.spawn({ agent: "flood", task: "t" }));
      const failed = host.get(err.taskId!)!;
      expect(failed.status).toBe("failed");
      expect(failed.errorMessage).toBe(
        `the host could not write this task's output to ${join(dataDir, "tasks", `${failed.id}.log`)} (ENOSPC: no space left on device, write); free space on that disk (or lower tasks.maxOutputBytes), then spawn the task again; the task was stopped. Its output up to that point is kept`,
      );
      expect(failed.outputBytes).toBeGreaterThan(0);
      // The host still answers, and another store can read the data dir while the disk is full.
      expect(host.list().records.map((r) => r.status)).toStrictEqual(["failed"]);
      const reader = sqliteTaskStore(dataDir);
      try {
        expect(reader.get(failed.id)?.id).toBe(failed.id);
      } finally {
        reader.close();
      }
      // Space comes back: the record the disk refused is written, and the next task runs.
      rmSync(ballast);
      await until(() => {
        const check = sqliteTaskStore(dataDir);
        try {
          return check.get(failed.id)?.status === "failed";
        } finally {
          check.close();
        }
      }, "the failed record to reach the database");
      rmSync(join(dataDir, "tasks", `${failed.id}.log`));
      const next = await host.spawn({ agent: "quick", task: "t" });
      expect([next.status, host.output(next.id).output]).toStrictEqual(["succeeded", "quick and done\n"]);
    } finally {
      await host.close();
      host.store.close();
    }
  });

  it.skipIf(isRoot)("ENOSPC injected into the store (not root here: no tmpfs) fails only the writing task with the reason; the host serves the next", async () => {
    class FullDisk extends MemoryTaskStore {
      override appendOutput(id: string, chunk: Buffer): void {
        if (this.outputSize(id) + chunk.length > 64 * 1024) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
        super.appendOutput(id, chunk);
      }
    }
    const host = new TaskHost({ store: new FullDisk(), agents: new AgentRegistry({ dirs: [], agents: agents() }), killGraceMs: 200 });
    try {
      const failed = host.get((await failureOf(host.spawn({ agent: "flood", task: "t" }))).taskId!)!;
      expect(failed.errorMessage).toBe(
        "the host could not write this task's output (ENOSPC: no space left on device, write); free space on that disk (or lower tasks.maxOutputBytes), then spawn the task again; the task was stopped. Its output up to that point is kept",
      );
      expect((await host.spawn({ agent: "quick", task: "t" })).status).toBe("succeeded");
    } finally {
      await host.close();
    }
  });

  it.runIf(isRoot)("codemode tasks lists a data dir on a disk that is full", async () => {
    const project = tempDir("fault-full-cli-");
    const dataDir = smallTmpfs("2m");
    const seed = sqliteTaskStore(dataDir);
    const host = new TaskHost({ store: seed, agents: new AgentRegistry({ dirs: [], agents: agents() }) });
    const done = await host.spawn({ agent: "quick", task: "before the disk filled" });
    await host.close();
    seed.close();
    // Fill every byte that is left.
    spawnSync("sh", ["-c", `cat /dev/zero > ${join(dataDir, "filler")}`]);
    writeFileSync(join(project, "codemode.json"), JSON.stringify({ dataDir }));
    const listed = spawnSync(process.execPath, [CLI, "tasks"], { cwd: project, encoding: "utf8" });
    expect([listed.status, listed.stderr]).toStrictEqual([
      0,
      `codemode: warning: ${dataDir}: cannot be written (disk I/O error); tasks can be listed and read, not started\ncodemode: warning: tasks are read from a copy of ${join(dataDir, "tasks.db")} taken now\n`,
    ]);
    expect(listed.stdout).toContain(`${done.id}  succeeded`);
    const shown = spawnSync(process.execPath, [CLI, "task", done.id], { cwd: project, encoding: "utf8" });
    expect([shown.status, shown.stdout]).toStrictEqual([0, "quick and done\n"]);
  });
});
