// A corrupt row, a truncated database: one malformed record made start-up reaping throw, so
// `run`, `tasks` and `task` all failed, and a truncated database failed without naming its file.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { AgentRegistry, TaskHost, sqliteTaskStore } from "../../src/tasks/index.js";
import { CLI } from "../mcp/helpers.js";
import { cleanUp, tempDir } from "./helpers.js";

afterAll(cleanUp);

const cli = (cwd: string, args: string[], input = "") => spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8", input });

async function project(): Promise<{ dir: string; dataDir: string; ids: string[] }> {
  const dir = tempDir("fault-corrupt-");
  const dataDir = join(dir, "data");
  writeFileSync(join(dir, "codemode.json"), JSON.stringify({ dataDir: "data", agentsDir: "agents" }));
  const host = new TaskHost({ store: sqliteTaskStore(dataDir), agents: new AgentRegistry({ dirs: [], agents: [{ name: "echo", description: "d", driver: "command", command: ["echo", "fine"] }] }) });
  const ids = [(await host.spawn({ agent: "echo", task: "a" })).id, (await host.spawn({ agent: "echo", task: "b" })).id];
  await host.close();
  host.store.close();
  return { dir, dataDir, ids };
}

describe("a corrupt task database", () => {
  it("a corrupt row is quarantined with a warning naming it and the file; run, tasks and task keep working", async () => {
    const { dir, dataDir, ids } = await project();
    const file = join(dataDir, "tasks.db");
    const db = new Database(file);
    // An active row whose record is not JSON (what reaping reads first), and one with no record to speak of.
    db.prepare("UPDATE tasks SET status = 'running', record = ? WHERE id = ?").run('{"id": "truncated', ids[0]);
    db.prepare("INSERT INTO tasks (id, status, owner_pid, owner_start, parent_id, record) VALUES ('x/../../y', 'queued', 1, 'proc:1', NULL, '{}')").run();
    db.close();

    const listed = cli(dir, ["tasks"]);
    expect(listed.status).toBe(0);
    expect(listed.stderr.split("\n").filter(Boolean)).toStrictEqual([
      `codemode: warning: task database ${file}: row 3 (id "x/../../y") is not a valid task record — field "id" expected string, received undefined; it was moved to the table "quarantine" of that file and is no longer listed`,
      `codemode: warning: task database ${file}: row 1 (id "${ids[0]}") is not a valid task record — its JSON does not parse (Unterminated string in JSON at position 17); it was moved to the table "quarantine" of that file and is no longer listed`,
    ]);
    expect(listed.stdout).toContain(`${ids[1]}  succeeded`);
    expect(listed.stdout).not.toContain(ids[0]!);
    // Set aside once: the next command is quiet.
    expect(cli(dir, ["tasks"]).stderr).toBe("");
    expect(cli(dir, ["task", ids[1]!]).stdout).toBe("fine\n");
    const ran = cli(dir, ["run", "-"], `text((await tools.ptc_task_list({})).count)`);
    expect([ran.status, ran.stdout]).toStrictEqual([0, "1\n"]);
  });

  it("a truncated database fails each command with a message naming the file and the fix", async () => {
    const { dir, dataDir } = await project();
    const file = join(dataDir, "tasks.db");
    writeFileSync(file, readFileSync(file).subarray(0, 100));
    for (const args of [["tasks"], ["run", "-"]]) {
      const result = cli(dir, args, "text(1)");
      expect(result.status, args.join(" ")).toBe(1);
      expect(result.stderr).toBe(
        `codemode: the task database ${file} failed: database disk image is malformed; the file is damaged or is not a task database: move it aside (mv "${file}" "${file}.bad") to start a new one, or restore it from a backup\n`,
      );
    }
    // Moved aside as the message says: a new database is started.
    spawnSync("mv", [file, `${file}.bad`]);
    expect(cli(dir, ["tasks"]).stdout).toBe("No tasks yet. Programs start them with tools.ptc_subagent({ agent, task, background: true }).\n");
  });
});
