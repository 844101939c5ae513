// Subagents through the CLI: a run that fans out leaves its tasks in the data dir; `codemode tasks`
// and `codemode task <id>` read them back, including tasks whose host was killed.
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { CLI, ROOT, runCli, sourceTree, tempProject } from "../mcp/helpers.js";

const FANOUT_MAIN = join(ROOT, "examples", "fanout", "main.js");

const ID = /[0-9A-HJKMNP-TV-Z]{26}/g;
const TIME = /\b\d+(\.\d+)?(ms|s)\b/g;
const normalize = (text: string) => text.replace(ID, "<id>").replace(TIME, "<t>");

describe("codemode tasks / task after a fan-out run", () => {
  let cwd: string;
  let ids: string[];

  const withConfig = (args: string[]) => [...args, "--config", "conf/codemode.json"];

  beforeAll(async () => {
    // The example's configuration in a folder of its own: its data dir (a default, so next to
    // the file) is this test's alone.
    cwd = sourceTree();
    cpSync(join(ROOT, "examples", "fanout", "codemode.json"), join(cwd, "conf", "codemode.json"));
    cpSync(join(ROOT, "examples", "fanout", "agents"), join(cwd, "conf", "agents"), { recursive: true });
    const run = await runCli(withConfig(["run", FANOUT_MAIN]), { cwd, env: { CODEMODE_PROGRESS: "1" } });
    expect(run.code, run.stderr).toBe(0);
    // Progress lines (stderr is not a terminal, CODEMODE_PROGRESS=1): each task's final state at least.
    const finals = run.stderr.split("\n").filter((line) => line.includes("succeeded"));
    expect(finals.map(normalize), run.stderr).toEqual(["[task <id>] succeeded  src/a (file-stats)  183 bytes  <t>", "[task <id>] succeeded  src/b (file-stats)  162 bytes  <t>"]);
    ids = finals.map((line) => line.match(ID)![0]);
  });

  it("codemode tasks renders the table of what the run left in the data dir", async () => {
    const result = await runCli(withConfig(["tasks"]), { cwd });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    expect(
      normalize(result.stdout)
        .split("\n")
        .map((line) => line.replace(/ +/g, " ")),
    ).toEqual([
      // Script agents count no tokens: no usage column.
      "id status agent label depth output time note",
      "<id> succeeded file-stats src/a 1 183 bytes <t> 2 files, 3 lines, 2 exports",
      "<id> succeeded file-stats src/b 1 162 bytes <t> 1 file, 3 lines, 0 exports",
      "",
    ]);
    expect(result.stdout.match(ID)).toEqual(ids);
    // FORCE_COLOR colours the table even into a pipe; NO_COLOR alone does not change a pipe's plain text.
    const forced = await runCli(withConfig(["tasks"]), { cwd, env: { FORCE_COLOR: "1" } });
    expect(forced.stdout).toContain("\x1b[32msucceeded\x1b[39m");
    expect((await runCli(withConfig(["tasks"]), { cwd, env: { NO_COLOR: "1" } })).stdout).toBe(result.stdout);
  });

  it("--json gives the records (camelCase details); --status filters", async () => {
    const json = JSON.parse((await runCli(withConfig(["tasks", "--json"]), { cwd })).stdout);
    expect(json.count).toBe(2);
    expect(json.tasks.map((t: { id: string; status: string; label: string; reportChannel: string; readOnlyTier: string }) => [t.id, t.status, t.label, t.reportChannel, t.readOnlyTier])).toEqual([
      [ids[0], "succeeded", "src/a", "prompt-json", "enforced"],
      [ids[1], "succeeded", "src/b", "prompt-json", "enforced"],
    ]);
    expect(await runCli(withConfig(["tasks", "--status", "failed,lost"]), { cwd })).toEqual({ code: 0, stdout: "No failed or lost tasks.\n", stderr: "" });
    // --watch returns once nothing is queued or running.
    const watch = await runCli(withConfig(["tasks", "--watch", "--interval", "50ms"]), { cwd });
    expect(watch.code).toBe(0);
    expect(watch.stdout).toBe((await runCli(withConfig(["tasks"]), { cwd })).stdout);
  });

  it("codemode task <id> prints the output on stdout and status, usage and report on stderr", async () => {
    const result = await runCli(withConfig(["task", ids[0]!]), { cwd });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      'src/a/x.ts: 2 lines\nsrc/a/y.ts: 1 lines\n```json\n{"summary":"2 files, 3 lines, 2 exports","findings":[{"what":"largest file","evidence":"src/a/x.ts (2 lines)"}],"files_touched":[]}\n```',
    );
    expect(normalize(result.stderr)).toBe(
      [
        'task <id>  succeeded  agent file-stats  label "src/a"  depth 1',
        "driver script · ran <t> · exit 0 · read-only enforced",
        "usage: 1 turn",
        "report (prompt-json): 2 files, 3 lines, 2 exports",
        "  - largest file: src/a/x.ts (2 lines)",
        "",
      ].join("\n"),
    );
    const json = JSON.parse((await runCli(withConfig(["task", ids[1]!, "--json"]), { cwd })).stdout);
    expect(json.task.report).toEqual({
      summary: "1 file, 3 lines, 0 exports",
      findings: [{ what: "largest file", evidence: "src/b/z.ts (3 lines)" }],
      files_touched: [],
      usage: { input: 0, output: 0, cost: 0, turns: 1 },
    });
    expect(json.output).toMatch(/^src\/b\/z\.ts: 3 lines\n/);
  });

  it("an unknown id exits 1 and says how to find ids; bad flags exit 2", async () => {
    expect(await runCli(withConfig(["task", "01NOPE"]), { cwd })).toEqual({
      code: 1,
      stdout: "",
      stderr: 'codemode task: unknown task id "01NOPE"; list task ids with ptc_task_list (from the command line: codemode tasks)\n',
    });
    const bad = await runCli(withConfig(["tasks", "--status", "runing"]), { cwd });
    expect(bad).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'codemode tasks: --status "runing" is not a task status; use one or more of queued, running, stopping, succeeded, failed, canceled, lost (comma-separated)\nRun codemode help for usage.\n',
    });
    expect((await runCli(withConfig(["task"]), { cwd })).stderr).toBe("codemode task: give one task id (list them with codemode tasks), got none\nRun codemode help for usage.\n");
    expect((await runCli(withConfig(["tasks", "--limit", "0"]), { cwd })).stderr).toBe('codemode tasks: --limit must be a whole number from 1 to 10000, got "0"\nRun codemode help for usage.\n');
  });
});

describe("a run whose host is killed", () => {
  it("leaves its running task as lost (host_exited_while_running) for the next codemode tasks", async () => {
    const cwd = tempProject({ agentsDir: "agents" });
    mkdirSync(join(cwd, "agents"));
    writeFileSync(join(cwd, "agents", "sleeper.md"), '---\nname: sleeper\ndescription: sleeps\ndriver: command\ncommand: [sleep, "3"]\n---\nSleeps.\n');
    const child = spawn(process.execPath, [CLI, "run", "-"], { cwd, env: { ...process.env, CODEMODE_PROGRESS: "1" }, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin.end(`await tools.ptc_subagent({ agent: "sleeper", task: "x", background: true, label: "nap" }); for (;;) await sleep(1000);`);
    // Kill the host (SIGKILL: no cleanup) once its progress shows the task running.
    const exited = new Promise((resolve) => child.once("close", resolve));
    await new Promise<void>((resolve) => {
      let seen = "";
      child.stderr.on("data", (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes("running  nap (sleeper)")) {
          child.kill("SIGKILL");
          resolve();
        }
      });
    });
    await exited;
    const result = await runCli(["tasks"], { cwd });
    const row = normalize(result.stdout)
      .split("\n")
      .map((line) => line.replace(/ +/g, " "))[1];
    expect(row).toMatch(/^<id> lost sleeper nap 1 0 bytes <t> host_exited_while_running: the host \(pid \d+\) exited/);
  });
});

describe("Ctrl-C during a run", () => {
  it("aborts the program, prints what it had, exits 1, and its subagents end canceled (not lost)", async () => {
    const cwd = tempProject({ agentsDir: "agents" });
    mkdirSync(join(cwd, "agents"));
    writeFileSync(join(cwd, "agents", "sleeper.md"), '---\nname: sleeper\ndescription: sleeps\ndriver: command\ncommand: [sleep, "30"]\n---\nSleeps.\n');
    const child = spawn(process.execPath, [CLI, "run", "-"], { cwd, env: { ...process.env, CODEMODE_PROGRESS: "1" }, stdio: ["pipe", "pipe", "pipe"] });
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    child.stdin.end(`text("started"); await tools.ptc_subagent({ agent: "sleeper", task: "x", background: true, label: "nap" }); for (;;) await sleep(100);`);
    let stderr = "";
    await new Promise<void>((resolve) => {
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes("running  nap (sleeper)")) resolve();
      });
    });
    child.kill("SIGINT");
    expect(await exited).toBe(1);
    expect(stderr.replace(/^\[task .*\n/gm, "")).toBe(
      "Script failed (aborted): the run was aborted by the host\n\nstarted\n\nTool calls made before the failure (not undone):\n- tools.ptc_subagent: ok\n" +
        "codemode: 1 background task was still running and is stopped now that the program ended; wait for them in the program (await tools.ptc_task_wait({})) to keep their results\n",
    );
    const row = normalize((await runCli(["tasks"], { cwd })).stdout)
      .split("\n")
      .map((line) => line.replace(/ +/g, " "))[1];
    expect(row).toBe("<id> canceled sleeper nap 1 0 bytes <t>");
  });
});

describe("codemode task --follow", () => {
  it("prints a running task's output as it arrives, from another process sharing the data dir, until it ends", async () => {
    const cwd = tempProject({ agentsDir: "agents" });
    mkdirSync(join(cwd, "agents"));
    writeFileSync(join(cwd, "agents", "ticker.md"), '---\nname: ticker\ndescription: ticks\ndriver: command\ncommand: [sh, -c, "echo one; sleep 1; echo two; sleep 1; echo three"]\n---\nTicks.\n');
    const host = spawn(process.execPath, [CLI, "run", "-"], { cwd, env: { ...process.env, CODEMODE_PROGRESS: "1" }, stdio: ["pipe", "pipe", "pipe"] });
    const exited = new Promise((resolve) => host.once("close", resolve));
    host.stdin.end(
      `const h = await tools.ptc_subagent({ agent: "ticker", task: "x", background: true }); while ((await tools.ptc_task_output({ task_id: h.task_id })).status === "running") await sleep(50);`,
    );
    const id = await new Promise<string>((resolve) => {
      let seen = "";
      host.stderr.on("data", (chunk: Buffer) => {
        seen += chunk.toString();
        const m = /\[task ([0-9A-Z]{26})\] running/.exec(seen);
        if (m) resolve(m[1]!);
      });
    });
    const follow = await runCli(["task", id, "--follow"], { cwd });
    await exited;
    expect(follow.code).toBe(0);
    expect(follow.stdout).toBe("one\ntwo\nthree\n");
    expect(follow.stderr.split("\n")[0]).toBe(`task ${id}  succeeded  agent ticker  label "x"  depth 1`);
  });
});

describe("records a hostile child tried to break", () => {
  it("a child's usage of 1e308 twice (and NaN, -1) is stored finite: the table renders, the full views validate", async () => {
    const cwd = tempProject({ agentsDir: "agents" });
    mkdirSync(join(cwd, "agents"));
    const lines = [
      { type: "usage", input_tokens: 1e308, output_tokens: 1e308, cost_usd: 1e308 },
      { type: "usage", input_tokens: 1e308, output_tokens: "NaN", cost_usd: -1 },
      { type: "usage", input_tokens: 10, output_tokens: 5, cost_usd: 0.5 },
      { type: "text", text: "done" },
    ].map((l) => JSON.stringify(l));
    writeFileSync(
      join(cwd, "agents", "liar.md"),
      `---\nname: liar\ndescription: lies about usage\ndriver: command\nprotocol: jsonl\ncommand: [printf, "${lines.join("\\n").replace(/"/g, '\\"')}\\n"]\n---\nLies.\n`,
    );
    const run = await runCli(["run", "-"], {
      cwd,
      stdin: `const r = await tools.ptc_subagent({ agent: "liar", task: "x", result_view: "full" }); const o = await tools.ptc_task_output({ task_id: r.task.id, result_view: "full" }); const l = await tools.ptc_task_list({ result_view: "full" }); return [r.usage, o.task.usage, l.tasks[0].usage]`,
    });
    expect(run.code, run.stderr).toBe(0);
    const usage = { input: 10, output: 5, cost: 0.5, turns: 0 };
    expect(JSON.parse(run.stdout)).toEqual([usage, usage, usage]);
    const table = await runCli(["tasks"], { cwd });
    expect([table.code, table.stderr]).toEqual([0, ""]);
    expect(table.stdout).toContain("in 10 · out 5 · $0.5000 · 0 turns");
  });

  it("codemode task <id> streams a 600 MB log instead of reading it into one string", { timeout: 120_000 }, async () => {
    // 600 MB: past V8's longest string (~512 MB), which is what `codemode task` used to build.
    const cwd = tempProject({ dataDir: "data" });
    const { sqliteTaskStore, currentOwner } = await import("../../src/tasks/index.js");
    const store = sqliteTaskStore(join(cwd, "data"));
    const id = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    const size = 600 * 1024 * 1024;
    store.insert({
      id,
      agent: "big",
      driver: "command",
      task: "t",
      label: "big",
      depth: 1,
      background: true,
      cwd,
      status: "succeeded",
      owner: currentOwner(),
      createdAt: 1,
      startedAt: 1,
      endedAt: 2,
      exitCode: 0,
      usage: { input: 0, output: 0, cost: 0, turns: 0 },
      outputBytes: size,
    });
    const log = store.outputPath(id)!;
    store.close();
    // A sparse file: 600 MB of zero bytes, then a last line.
    writeFileSync(log, "");
    truncateSync(log, size - 5);
    writeFileSync(log, "end!\n", { flag: "a" });
    const child = spawn(process.execPath, [CLI, "task", id], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let bytes = 0;
    let tail = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      tail = (tail + chunk.subarray(-8).toString("latin1")).slice(-8);
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
    const code = await new Promise((resolve) => child.once("close", resolve));
    expect([code, bytes, tail.endsWith("end!\n")], stderr).toEqual([0, size, true]);
    expect(stderr).toMatch(/^task 01ARZ3NDEKTSV4RRFFQ69G5FAV {2}succeeded/);
  });

  it("codemode task <id> --json streams the output into the same JSON as before", async () => {
    const cwd = tempProject({ dataDir: "data" });
    const { sqliteTaskStore, currentOwner } = await import("../../src/tasks/index.js");
    const store = sqliteTaskStore(join(cwd, "data"));
    const id = "01ARZ3NDEKTSV4RRFFQ69G5FAW";
    const text = Array.from({ length: 40_000 }, (_, i) => `line ${i} "quoted" é\t😀`).join("\n") + "\n";
    store.insert({
      id,
      agent: "big",
      driver: "command",
      task: "t",
      label: "big",
      depth: 1,
      background: true,
      cwd,
      status: "succeeded",
      owner: currentOwner(),
      createdAt: 1,
      outputBytes: Buffer.byteLength(text),
    });
    store.appendOutput(id, Buffer.from(text));
    store.close();
    const result = await runCli(["task", id, "--json"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    const parsed = JSON.parse(result.stdout);
    expect(parsed.output).toBe(text);
    expect(result.stdout).toBe(JSON.stringify({ task: parsed.task, output: text }, null, 2) + "\n");
  });
});
