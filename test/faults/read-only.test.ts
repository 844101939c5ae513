// A read-only data dir (a read-only mount, a volume shared read-only) used to fail every command,
// even `codemode tasks`. Now tasks are listed and read; starting one is refused with why.
import { spawnSync } from "node:child_process";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AgentRegistry, TaskHost, sqliteTaskStore } from "../../src/tasks/index.js";
import { CLI } from "../mcp/helpers.js";
import { cleanUp, isRoot, mountReadOnly, tempDir } from "./helpers.js";

afterAll(cleanUp);

const cli = (cwd: string, ...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8", input: args[0] === "run" ? 'text("ran")' : "" });

async function seed(dataDir: string): Promise<string> {
  const host = new TaskHost({
    store: sqliteTaskStore(dataDir),
    agents: new AgentRegistry({ dirs: [], agents: [{ name: "echo", description: "d", driver: "command", command: ["echo", "written before"] }] }),
  });
  const rec = await host.spawn({ agent: "echo", task: "t" });
  await host.close();
  host.store.close();
  return rec.id;
}

describe("a read-only data dir", () => {
  const makeReadOnly = (dir: string): (() => void) => {
    if (isRoot) return mountReadOnly(dir);
    chmodSync(dir, 0o555);
    return () => chmodSync(dir, 0o755);
  };

  it(`${isRoot ? "(a read-only bind mount)" : "(chmod 555: not root here)"} still lists and reads tasks, runs programs, and refuses a spawn saying why`, async () => {
    const project = tempDir("fault-ro-");
    const dataDir = join(project, "data");
    const id = await seed(dataDir);
    writeFileSync(join(project, "codemode.json"), JSON.stringify({ dataDir: "data", agentsDir: "agents" }));
    const undo = makeReadOnly(dataDir);
    try {
      const listed = cli(project, "tasks");
      expect(listed.status, listed.stderr).toBe(0);
      expect(listed.stdout).toContain(`${id}  succeeded  echo`);
      expect(listed.stderr).toMatch(/^codemode: warning: .*data: cannot be written .*; tasks can be listed and read, not started\n/);
      const shown = cli(project, "task", id);
      expect([shown.status, shown.stdout]).toStrictEqual([0, "written before\n"]);
      const ran = cli(project, "run", "-");
      expect([ran.status, ran.stdout]).toStrictEqual([0, "ran\n"]);

      const store = sqliteTaskStore(dataDir);
      const host = new TaskHost({ store, agents: new AgentRegistry({ dirs: [], agents: [{ name: "echo", description: "d", driver: "command", command: ["echo", "x"] }] }) });
      try {
        expect(store.readOnly).toBe(true);
        expect(host.list().records.map((r) => r.id)).toStrictEqual([id]);
        await expect(host.spawn({ agent: "echo", task: "t" })).rejects.toMatchObject({
          code: "task_store_read_only",
          message: `the task data dir ${dataDir} cannot be written here (read-only, or it could not be opened for writing): tasks can be listed and read, not started; give the host a writable dataDir`,
        });
      } finally {
        await host.close();
        store.close();
      }
    } finally {
      undo();
    }
    // Writable again: the next host starts tasks as before.
    const again = await seed(dataDir);
    expect(again).not.toBe(id);
  });
});
