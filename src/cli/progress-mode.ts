// Whether and how `codemode run` shows its subagents' progress, and the size of a frame: apart
// from progress.ts, so a run that shows none (stderr is not a terminal) decides so without
// loading the view and the terminal libraries it draws with.
import type { Writable } from "node:stream";

export type ProgressMode = "tty" | "lines" | "off";

export function progressMode(stderr: { isTTY?: boolean }, env: NodeJS.ProcessEnv): ProgressMode {
  const setting = env.CODEMODE_PROGRESS;
  if (setting === "0") return "off";
  if (setting === "1") return stderr.isTTY ? "tty" : "lines";
  return stderr.isTTY ? "tty" : "off";
}

export type TerminalStream = Writable & { columns?: number; rows?: number; isTTY?: boolean };

/** Rows of a terminal a frame may use: all but the line the cursor waits on. */
export function frameRows(stream: TerminalStream): number {
  return Math.max(2, (stream.rows || 24) - 1);
}

/** Columns a line may take: all but the last (a line that fills it wraps on some terminals). */
export function frameColumns(stream: TerminalStream): number {
  return Math.max(20, (stream.columns || 80) - 1);
}
