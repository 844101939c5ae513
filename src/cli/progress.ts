// Live progress of subagents while `codemode run` runs: on a terminal, one line per task redrawn
// in place (status, label, bytes, time, usage); elsewhere (CODEMODE_PROGRESS=1) a line whenever a
// task changes status. Reads the task host's records; never touches the program's output. Labels,
// errors and ids reach the terminal only through progressLine / forTerminal, so a label cannot
// carry an escape sequence to it.
import type { Writable } from "node:stream";
import type { TaskHost, TaskRecord } from "../tasks/index.js";
import { forTerminal } from "./io.js";
import { progressLine } from "./task-view.js";

export type ProgressMode = "tty" | "lines" | "off";

export function progressMode(stderr: { isTTY?: boolean }, env: NodeJS.ProcessEnv): ProgressMode {
  const setting = env.CODEMODE_PROGRESS;
  if (setting === "0") return "off";
  if (setting === "1") return stderr.isTTY ? "tty" : "lines";
  return stderr.isTTY ? "tty" : "off";
}

const MAX_LINES = 20;

export class ProgressView {
  private timer: NodeJS.Timeout | undefined;
  private drawn = 0;
  private readonly seen = new Map<string, string>();
  private readonly since: number;

  constructor(
    private readonly host: TaskHost,
    private readonly stream: Writable & { columns?: number },
    private readonly mode: ProgressMode,
    private readonly options: { color: boolean; intervalMs?: number },
  ) {
    this.since = Date.now();
  }

  start(): void {
    if (this.mode === "off") return;
    this.timer = setInterval(() => this.tick(), this.options.intervalMs ?? 200);
    this.timer.unref();
  }

  /** A last look, so every task's final state is shown once. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.mode !== "off") this.tick();
  }

  private records(): TaskRecord[] {
    return this.host.list({ limit: 1000 }).records.filter((record) => record.createdAt >= this.since - 1000);
  }

  private tick(): void {
    const records = this.records();
    if (this.mode === "lines") {
      for (const record of records) {
        const key = `${record.status}`;
        if (this.seen.get(record.id) === key) continue;
        this.seen.set(record.id, key);
        this.stream.write(`[task ${forTerminal(record.id)}] ${progressLine(record, { color: false })}\n`);
      }
      return;
    }
    if (records.length === 0) return;
    const width = Math.max(20, (this.stream.columns || 120) - 1);
    const shown = records.slice(-MAX_LINES);
    const lines = shown.map((record) => clip(progressLine(record, this.options), width));
    if (records.length > shown.length) lines.unshift(`… ${records.length - shown.length} earlier tasks`);
    const erase = this.drawn > 0 ? `\x1b[${this.drawn}A\x1b[0J` : "";
    this.stream.write(erase + lines.join("\n") + "\n");
    this.drawn = lines.length;
  }
}

/** Cut a line to the terminal width, counting visible characters only (colour codes are free). */
function clip(line: string, width: number): string {
  let visible = 0;
  let out = "";
  for (let i = 0; i < line.length; i++) {
    if (line[i] === "\x1b") {
      const end = line.indexOf("m", i);
      if (end !== -1) {
        out += line.slice(i, end + 1);
        i = end;
        continue;
      }
    }
    if (visible >= width) return out + "\x1b[0m";
    out += line[i];
    visible++;
  }
  return out;
}
