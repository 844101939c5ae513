// The live views in a real terminal (a tmux pane of 80×12): `codemode run`'s progress and
// `codemode tasks --watch` redraw in place with more tasks than the pane has rows, leave no copies
// of a frame in the scrollback, cut a CJK/emoji label to the pane's width, and Ctrl-C leaves no
// line glued to an echoed "^C" (before: 46 copies of one line, and "rurunning …").
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import stringWidth from "string-width";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, tempProject } from "../mcp/helpers.js";

const COLUMNS = 80;
const ROWS = 12;
const STATUS = /^(queued|running|stopping|succeeded|failed|canceled|lost) {2}/;
const WIDE = "漢字のラベル🙂とても長いラベルなのでターミナルの幅で切られます🙂🙂🙂🙂🙂🙂🙂";

function project(): string {
  const cwd = tempProject({ agentsDir: "agents", limits: { timeoutMs: 60000 } });
  mkdirSync(join(cwd, "agents"));
  writeFileSync(join(cwd, "agents", "napper.md"), '---\nname: napper\ndescription: naps a second\ndriver: command\ncommand: [sh, -c, "sleep 1; echo ok"]\nreport: false\n---\nNaps.\n');
  writeFileSync(join(cwd, "agents", "sleeper.md"), '---\nname: sleeper\ndescription: sleeps\ndriver: command\ncommand: [sleep, "30"]\nreport: false\n---\nSleeps.\n');
  const labels = [...Array.from({ length: 20 }, (_, i) => `job ${i}`), WIDE];
  writeFileSync(
    join(cwd, "fanout.js"),
    `for (const label of ${JSON.stringify(labels)}) await tools.ptc_subagent({ agent: "napper", task: "x", background: true, label });
while ((await tools.ptc_task_list({ status: ["running", "queued"] })).count > 0) await sleep(100);
text("all done");`,
  );
  writeFileSync(join(cwd, "sleepers.js"), `for (let i = 0; i < 3; i++) await tools.ptc_subagent({ agent: "sleeper", task: "x", background: true, label: "nap " + i }); for (;;) await sleep(100);`);
  writeFileSync(
    join(cwd, "later.js"),
    `for (let i = 0; i < 3; i++) await tools.ptc_subagent({ agent: "napper", task: "x", background: true, label: "late " + i }); while ((await tools.ptc_task_list({ status: ["running", "queued"] })).count > 0) await sleep(100);`,
  );
  return cwd;
}

describe("live views in a real terminal (tmux, 80×12)", () => {
  const socket = `codemode-ui-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync("tmux", ["-L", socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
  const cli = `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)}`;
  let cwd: string;

  beforeAll(() => {
    cwd = project();
    tmux("new-session", "-d", "-s", "t", "-x", String(COLUMNS), "-y", String(ROWS), "sh");
    tmux("set-option", "-g", "history-limit", "5000");
    tmux("send-keys", "-t", "t", `cd ${JSON.stringify(cwd)}`, "Enter");
  });
  afterAll(() => {
    try {
      tmux("kill-server");
    } catch {
      // already gone
    }
  });

  /** Everything the pane holds, scrollback first, one string per row (wrapped rows not joined). */
  const everything = (): string[] => tmux("capture-pane", "-p", "-S", "-", "-t", "t").split("\n");
  const screen = (): string[] => tmux("capture-pane", "-p", "-t", "t").split("\n");
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  async function until(what: string, test: () => boolean): Promise<void> {
    for (let i = 0; i < 400; i++) {
      if (test()) return;
      await sleep(50);
    }
    throw new Error(`the terminal never showed ${what}:\n${everything().join("\n")}`);
  }

  /** A clean pane and scrollback, then the command; resolves once the shell is back. */
  async function inPane(command: string, during?: () => Promise<void>): Promise<void> {
    tmux("send-keys", "-t", "t", "clear", "Enter");
    await sleep(200);
    tmux("clear-history", "-t", "t");
    const marker = `__done_${Math.random().toString(36).slice(2)}__`;
    tmux("send-keys", "-t", "t", `${command}; echo ${marker}`, "Enter");
    await during?.();
    await until("the command's end", () => everything().some((row) => row.trim() === marker));
  }

  const copies = (rows: string[], text: string) => rows.filter((row) => row.includes(text)).length;

  it("run: more tasks than rows are drawn in place (each once, a summary line for the rest), cut to the width in columns", async () => {
    let redraws = 0;
    await inPane(`${cli} run fanout.js`, async () => {
      // While it runs, every frame fits the pane and nothing is pushed into the scrollback.
      await until("the progress", () => screen().some((row) => row.includes("(napper)")));
      for (let i = 0; i < 10; i++) {
        const rows = everything();
        expect(rows.filter((row) => STATUS.test(row)).length).toBeLessThanOrEqual(ROWS - 1);
        for (const label of ["job 0 (", "job 19 (", "漢字"]) expect(copies(rows, label)).toBeLessThanOrEqual(1);
        if (screen().some((row) => row.startsWith("… "))) redraws++;
        await sleep(150);
      }
    });
    expect(redraws).toBeGreaterThan(0);
    const rows = everything();
    // The last frame: a summary of the oldest tasks, then the newest, each line once.
    const summary = rows.find((row) => row.startsWith("… "));
    expect(summary).toMatch(/^… \d+ earlier tasks: \d+ succeeded$/);
    for (let i = 0; i < 20; i++) expect(copies(rows, `job ${i} (napper)`)).toBeLessThanOrEqual(1);
    expect(rows.filter((row) => row.includes("(napper)")).every((row) => STATUS.test(row))).toBe(true);
    // The wide label: cut with "…" within the pane's width (each CJK character and emoji is two columns), never wrapped.
    const wide = rows.find((row) => row.includes("漢字"))!;
    expect(wide).toMatch(/^succeeded {2}漢字のラベル🙂.*…$/u);
    expect(stringWidth(wide)).toBeLessThan(COLUMNS);
    expect(rows).toContain("all done");
  });

  it("Ctrl-C during a run leaves every progress line whole: no status glued to an echoed ^C", async () => {
    await inPane(`${cli} run sleepers.js`, async () => {
      await until("the sleepers running", () => screen().filter((row) => row.includes("(sleeper)") && row.startsWith("running")).length === 3);
      tmux("send-keys", "-t", "t", "C-c");
    });
    const rows = everything();
    const lines = rows.filter((row) => row.includes("(sleeper)"));
    expect(lines.length).toBe(3);
    expect(
      lines.every((row) => STATUS.test(row)),
      lines.join("\n"),
    ).toBe(true);
    expect(rows.some((row) => /\S(running|canceled|stopping) {2}nap/.test(row))).toBe(false);
    expect(rows.some((row) => row.startsWith("Script failed (aborted)"))).toBe(true);
  });

  it("tasks --watch redraws in place until nothing runs, within the pane's rows, without filling the scrollback", async () => {
    // Three more tasks start in the background (their host prints nothing); --watch follows them.
    tmux("send-keys", "-t", "t", `CODEMODE_PROGRESS=0 ${cli} run later.js >/dev/null 2>&1 &`, "Enter");
    await sleep(1000);
    let frames = 0;
    await inPane(`${cli} tasks --watch --interval 200ms`, async () => {
      for (let i = 0; i < 8; i++) {
        const rows = everything();
        if (rows.some((row) => row.includes("late 0"))) frames++;
        expect(copies(rows, "late 0")).toBeLessThanOrEqual(1);
        expect(copies(rows, "id  ")).toBeLessThanOrEqual(1);
        await sleep(150);
      }
    });
    expect(frames).toBeGreaterThan(0);
    const rows = everything();
    expect(copies(rows, "late 2")).toBe(1);
    expect(copies(rows, "earlier tasks above, not shown")).toBe(1);
    // The last frame, header to summary, fits the pane with the cursor's line to spare.
    const header = rows.findIndex((row) => row.startsWith("id "));
    const end = rows.findIndex((row) => row.includes("earlier tasks above, not shown"));
    expect(end - header + 1, rows.join("\n")).toBeLessThanOrEqual(ROWS - 1);
    for (const row of rows.slice(header, end + 1)) expect(stringWidth(row)).toBeLessThan(COLUMNS);
  });
});
