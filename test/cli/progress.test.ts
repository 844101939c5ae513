// The live progress view of `codemode run`, driven frame by frame over a real task host.
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { ProgressView, progressMode } from "../../src/cli/progress.js";
import { createCodemode, type Codemode } from "../../src/index.js";

class Capture extends Writable {
  text = "";
  constructor(readonly isTTY: boolean, readonly columns?: number) {
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
    agents: [{ name: "slow", description: "waits for the test", driver: "function", run: async () => {
      await gate;
      return "done";
    } }],
  });
  open.push(cm);
  return { cm, release };
}

const TIME = /\b\d+(\.\d+)?(ms|s)\b/g;

describe("ProgressView", () => {
  it("on a terminal redraws one line per task in place, cut to the terminal width", async () => {
    const { cm, release } = await hostWithGate();
    const stream = new Capture(true, 41);
    const view = new ProgressView(cm.tasks, stream, "tty", { color: false, intervalMs: 60_000 });
    const spawned = await cm.callTool("ptc_subagent", { agent: "slow", task: "t", background: true, label: "first" });
    const id = (spawned.structuredContent as { task_id: string }).task_id;
    view.stop(); // one frame
    expect(stream.take().replace(TIME, "<t>")).toBe("running  first (slow)  0 B  <t>\n");
    release();
    await cm.tasks.wait(id);
    view.stop();
    // Move up over the last frame, clear it, draw the new one (40 visible columns at most).
    const frame = stream.take();
    expect(frame.startsWith("\x1b[1A\x1b[0J")).toBe(true);
    const line = frame.slice("\x1b[1A\x1b[0J".length);
    expect(line.endsWith("\x1b[0m\n")).toBe(true);
    const visible = line.slice(0, -"\x1b[0m\n".length);
    expect(visible).toHaveLength(40);
    expect("succeeded  first (slow)  4 B  <t>  in 0 · out 0 · $0.0000 · 0 turns".startsWith(visible.replace(TIME, "<t>").slice(0, 30))).toBe(true);
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
    expect(stream.take().replace(TIME, "<t>")).toBe(`[task ${id}] running  job (slow)  0 B  <t>\n[task ${id}] succeeded  job (slow)  4 B  <t>  in 0 · out 0 · $0.0000 · 0 turns\n`);
  });

  it("is on for a terminal, off otherwise, and CODEMODE_PROGRESS overrides", () => {
    expect(progressMode({ isTTY: true }, {})).toBe("tty");
    expect(progressMode({ isTTY: false }, {})).toBe("off");
    expect(progressMode({ isTTY: true }, { CODEMODE_PROGRESS: "0" })).toBe("off");
    expect(progressMode({ isTTY: false }, { CODEMODE_PROGRESS: "1" })).toBe("lines");
  });
});
