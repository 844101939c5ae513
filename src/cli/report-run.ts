// How `codemode run` and `codemode resume` end: the run's result printed (content, or all three
// channels with --json), background tasks that closing stops named, and the exit code.
import type { RunResult } from "../codemode/run-result.js";
import { EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, line, write, writeOutput, type Io } from "./io.js";
import type { Runtime } from "./runtime.js";

/** Prints a run's result (content, or all three channels with --json) and returns the exit code. */
export async function reportRun(result: RunResult, json: boolean, io: Io, runtime: Runtime): Promise<number> {
  // Upstream servers that did not start are part of this run's story too.
  if (runtime.warnings.length > 0) result.details.warnings = [...runtime.warnings, ...result.details.warnings];
  const ok = result.structuredContent.status === "ok";
  if (json) {
    await write(io.stdout, JSON.stringify(result, null, 2) + "\n");
  } else {
    // The program's own text: exact into a pipe, its control characters made visible on a terminal.
    const text = result.content.map((block) => block.text).join("\n");
    await writeOutput(ok || result.structuredContent.status === "interrupted" ? io.stdout : io.stderr, line(text));
  }
  // Background subagents live as long as this process: say so when closing stops some.
  const active = runtime.cm.tasks.running + runtime.cm.tasks.queued;
  if (active > 0) {
    await write(
      io.stderr,
      `codemode: ${active} background task${active === 1 ? " was" : "s were"} still running and ${active === 1 ? "is" : "are"} stopped now that the program ended; wait for them in the program (await tools.ptc_task_wait({})) to keep their results\n`,
    );
  }
  if (result.structuredContent.status === "interrupted") return EXIT_INTERRUPTED;
  return ok ? EXIT_OK : EXIT_FAILED;
}
