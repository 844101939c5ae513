// Live progress of subagents while `codemode run` runs: on a terminal, one line per task redrawn
// in place (status, label, bytes, time, usage when the agent counts tokens); elsewhere
// (CODEMODE_PROGRESS=1) a line whenever a task changes status. Reads the task host's records;
// never touches the program's output.
//
// Drawing is log-update's: it moves back over the last frame from the first column (so an echoed
// ^C cannot glue onto a redrawn line), rewrites only what changed, and never draws more lines
// than the terminal has, which keeps every frame on screen and none in the scrollback. Lines are
// cut to the terminal's width in columns by cli-truncate (a CJK character or an emoji is two),
// and past the terminal's height the oldest tasks are summed up in one line. What is drawn comes
// from progressLine, which passes every field through forTerminal: a label cannot carry an
// escape sequence to the terminal, and the only ones written are log-update's and our colours.
import { createLogUpdate } from "log-update";
import type { TaskHost, TaskRecord } from "../tasks/index.js";
import { forTerminal } from "./io.js";
import { progressLine, truncateColumns } from "./task-view.js";
import { frameColumns, frameRows, type ProgressMode, type TerminalStream } from "./progress-mode.js";

/** Lines cut to the terminal's width. */
export function fitWidth(lines: readonly string[], columns: number): string[] {
  return lines.map((line) => truncateColumns(line, columns));
}

const STATUS_ORDER = ["running", "queued", "stopping", "succeeded", "failed", "canceled", "lost"];

/** "… 12 earlier tasks: 9 succeeded, 3 failed". */
function summary(hidden: readonly TaskRecord[]): string {
  const counts = new Map<string, number>();
  for (const record of hidden) counts.set(record.status, (counts.get(record.status) ?? 0) + 1);
  const parts = [...counts].sort(([a], [b]) => STATUS_ORDER.indexOf(a) - STATUS_ORDER.indexOf(b)).map(([status, n]) => `${n} ${forTerminal(status)}`);
  return `… ${hidden.length} earlier task${hidden.length === 1 ? "" : "s"}: ${parts.join(", ")}`;
}

export class ProgressView {
  private timer: NodeJS.Timeout | undefined;
  private readonly seen = new Map<string, string>();
  private readonly since: number;
  private draw: ReturnType<typeof createLogUpdate> | undefined;

  constructor(
    private readonly host: TaskHost,
    private readonly stream: TerminalStream,
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

  /** A last look, so every task's final state is shown once; later output starts on a clean line. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.mode === "off") return;
    this.tick();
    if (this.draw) {
      this.draw.done();
      this.draw = undefined;
      // The cursor waits on the line after the frame, where a terminal may have echoed ^C.
      this.stream.write("\r\x1b[2K");
    }
  }

  /** The frame as it would be drawn now: at most the terminal's rows, each at most its columns. */
  frame(records: readonly TaskRecord[] = this.records()): string[] {
    const rows = frameRows(this.stream);
    let shown: readonly TaskRecord[] = records;
    const lines: string[] = [];
    if (records.length > rows) {
      shown = records.slice(records.length - (rows - 1));
      lines.push(summary(records.slice(0, records.length - shown.length)));
    }
    for (const record of shown) lines.push(progressLine(record, this.options));
    return fitWidth(lines, frameColumns(this.stream));
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
    // showCursor: a hidden cursor is restored only by an exit handler, and a crash would leave it hidden.
    this.draw ??= createLogUpdate(this.stream, { showCursor: true });
    this.draw(this.frame(records).join("\n"));
  }
}
