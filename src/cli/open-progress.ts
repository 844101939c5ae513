// The progress view a command starts and stops around its run, loaded only when it will show
// something: ProgressView (progress.ts) and the terminal libraries it draws with are not part of
// a `codemode run` whose stderr is not a terminal. Apart from progress-mode.ts, which progress.ts
// itself imports.
import type { TaskHost } from "../tasks/index.js";
import type { ProgressMode, TerminalStream } from "./progress-mode.js";
/** What a command starts before its run and stops after it. */
export interface Progress {
  start(): void;
  stop(): void;
}

/** A view that shows nothing, as ProgressView does in mode "off". */
const NO_PROGRESS: Progress = { start() {}, stop() {} };

/** The progress view for `mode`: ProgressView (progress.ts, loaded now) unless it would show nothing. */
export async function openProgress(host: TaskHost, stream: TerminalStream, mode: ProgressMode, options: { color: boolean; intervalMs?: number }): Promise<Progress> {
  if (mode === "off") return NO_PROGRESS;
  const { ProgressView } = await import("./progress.js");
  return new ProgressView(host, stream, mode, options);
}
