// The live progress view of `codemode run`, driven frame by frame over a real task host.
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import stringWidth from "string-width";
import { stripVTControlCharacters as stripAnsi } from "node:util";
import { useColor } from "../../src/cli/io.js";
import { ProgressView } from "../../src/cli/progress.js";
import { progressMode } from "../../src/cli/progress-mode.js";
import { createCodemode, type Codemode } from "../../src/index.js";

class Capture extends Writable {
  text = "";
  constructor(
    readonly isTTY: boolean,
    readonly columns?: number,
    readonly rows?: number,
  ) {
    super();
  }
  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
  take(): string {
    const out = this.text;
    this.text = "";
    return out;
  }
}

const open: Codemode[] = [];
afterEach(async () => {
  for (const cm of open.splice(0)) await cm.close();
});

async function hostWithGate(): Promise<{ cm: Codemode; release: () => void }> {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const cm = await createCodemode({
    agentDirs: [],
    workers: { min: 0 },
    tasks: { maxRunning: 16 },
    agents: [
      {
        name: "slow",
        description: "waits for the test",
        driver: "function",
        run: async () => {
          await gate;
          return "done";
        },
      },
    ],
  });
  open.push(cm);
  return { cm, release };
}

const TIME = /\b\d+(\.\d+)?(ms|s)\b/g;

describe("ProgressView", () => {
  it("on a terminal draws one line per task, cut to the terminal's width in columns, and sums up what does not fit its height", async () => {
    const { cm, release } = await hostWithGate();
    const stream = new Capture(true, 41, 6);
    const view = new ProgressView(cm.tasks, stream, "tty", { color: false, intervalMs: 60_000 });
    const labels = ["first", "漢字のラベルはとても長いのでここで切られるはずです", "🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂", ...Array.from({ length: 7 }, (_, i) => `job ${i}`)];
    const ids: string[] = [];
    for (const label of labels) {
      const spawned = await cm.callTool("ptc_subagent", { agent: "slow", task: "t", background: true, label });
      ids.push((spawned.structuredContent as { task_id: string }).task_id);
    }
    const frame = view.frame();
    // Six rows: five for the frame (the cursor waits on the last), the oldest tasks summed up.
    expect(frame).toHaveLength(5);
    expect(frame[0]).toBe("… 6 earlier tasks: 6 running");
    expect(frame.slice(1).map((line) => line.replace(TIME, "<t>"))).toEqual(["job 3", "job 4", "job 5", "job 6"].map((label) => `running  ${label} (slow)  0 bytes  <t>`));
    const wide = new Capture(true, 41, 40);
    const all = new ProgressView(cm.tasks, wide, "tty", { color: true, intervalMs: 60_000 }).frame();
    expect(all).toHaveLength(10);
    for (const line of all) expect(stringWidth(line)).toBeLessThanOrEqual(40);
    // Wide characters count twice: the CJK and emoji labels are cut at 40 columns, not 40 characters.
    expect(stripAnsi(all[1]!)).toMatch(/^running {2}漢字の.*…$/);
    expect(stringWidth(all[1]!)).toBeGreaterThanOrEqual(39);
    expect(stripAnsi(all[2]!)).toMatch(/^running {2}🙂+…$/u);
    release();
    for (const id of ids) await cm.tasks.wait(id);
    view.start();
    view.stop();
    // Drawn with log-update: the last frame is on the stream and it ends on a cleared line.
    expect(stream.text).toContain("succeeded  job 6 (slow)  4 bytes");
    expect(stream.text.endsWith("\r\x1b[2K")).toBe(true);
  });

  it("elsewhere prints a line per status change, once", async () => {
    const { cm, release } = await hostWithGate();
    const stream = new Capture(false);
    const view = new ProgressView(cm.tasks, stream, "lines", { color: false, intervalMs: 60_000 });
    const spawned = await cm.callTool("ptc_subagent", { agent: "slow", task: "t", background: true, label: "job" });
    const id = (spawned.structuredContent as { task_id: string }).task_id;
    view.stop();
    view.stop();
    release();
    await cm.tasks.wait(id);
    view.stop();
    expect(stream.take().replace(TIME, "<t>")).toBe(`[task ${id}] running  job (slow)  0 bytes  <t>\n[task ${id}] succeeded  job (slow)  4 bytes  <t>\n`);
  });

  it("is on for a terminal, off otherwise, and CODEMODE_PROGRESS overrides", () => {
    expect(progressMode({ isTTY: true }, {})).toBe("tty");
    expect(progressMode({ isTTY: false }, {})).toBe("off");
    expect(progressMode({ isTTY: true }, { CODEMODE_PROGRESS: "0" })).toBe("off");
    expect(progressMode({ isTTY: false }, { CODEMODE_PROGRESS: "1" })).toBe("lines");
  });
});

describe("useColor", () => {
  it("FORCE_COLOR forces colour on (anything but 0 or false) and wins; NO_COLOR turns it off; otherwise a terminal that is not dumb", () => {
    expect(useColor({ isTTY: false }, { FORCE_COLOR: "1" })).toBe(true);
    expect(useColor({ isTTY: false }, { FORCE_COLOR: "" })).toBe(true);
    expect(useColor({ isTTY: true }, { FORCE_COLOR: "0" })).toBe(false);
    expect(useColor({ isTTY: true }, { FORCE_COLOR: "false" })).toBe(false);
    expect(useColor({ isTTY: true }, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(true);
    expect(useColor({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(useColor({ isTTY: true }, { NO_COLOR: "" })).toBe(true);
    expect(useColor({ isTTY: true }, { TERM: "dumb" })).toBe(false);
    expect(useColor({ isTTY: false }, {})).toBe(false);
  });
});
