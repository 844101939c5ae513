// The script runner streams a program's text() output into its task's log in batches: a flood of
// flushes (one per tool call) becomes a few log writes, in order, with nothing lost.
import { describe, expect, it } from "vitest";
import { codemodeScriptRunner, type ProgramHost } from "../../src/ptc/index.js";
import type { AgentDefinition } from "../../src/tasks/index.js";

const agent: AgentDefinition = { name: "s", description: "d", driver: "script", readOnly: false, report: false, prompt: "", source: "code", scriptCode: "x" };

function hostFlushing(flushes: string[][], outcome: { ok: boolean; warnings?: string[] } = { ok: true }): ProgramHost {
  return {
    async runInternal(_code, options) {
      for (const chunks of flushes) options.onOutput?.(chunks);
      return {
        content: [{ type: "text", text: "(content)" }],
        structuredContent: outcome.ok ? { status: "ok" } : { status: "error", error: { kind: "exception", message: "Error: boom", line: 2, column: 7 } },
        details: { warnings: outcome.warnings ?? [] },
      };
    },
  };
}

const options = (onText?: (text: string) => void) => ({ task: "t", agent, signal: new AbortController().signal, depth: 1, taskId: "T", cwd: "/", readOnly: false, ...(onText ? { onText } : {}) });

describe("codemodeScriptRunner", () => {
  it("joins a thousand flushes into one batch, pieces separated by newlines as in the run's content", async () => {
    const writes: string[] = [];
    const flushes = Array.from({ length: 1000 }, (_, i) => [`line ${i}`]);
    const result = await codemodeScriptRunner(hostFlushing(flushes))(
      "x",
      options((text) => writes.push(text)),
    );
    expect(writes).toStrictEqual([flushes.map(([line]) => line).join("\n")]);
    expect(result).toStrictEqual({ output: "", ok: true });
  });

  it("writes a batch once it holds 64 KiB, without waiting for the timer", async () => {
    const writes: string[] = [];
    const big = "x".repeat(40 * 1024);
    await codemodeScriptRunner(hostFlushing([[big], [big], ["tail"]]))(
      "x",
      options((text) => writes.push(text)),
    );
    expect(writes).toStrictEqual([`${big}\n${big}`, "\ntail"]);
  });

  it("after streamed text, the log gets the failure and the warnings; with nothing printed, the run's content", async () => {
    const failed = await codemodeScriptRunner(hostFlushing([["partial"]], { ok: false, warnings: ["w1"] }))(
      "x",
      options(() => undefined),
    );
    expect(failed).toStrictEqual({ output: "\n\nScript failed (exception): Error: boom (line 2, column 7)\n\nWarnings:\n- w1", ok: false, error: "exception: Error: boom" });
    const silent = await codemodeScriptRunner(hostFlushing([]))(
      "x",
      options(() => undefined),
    );
    expect(silent).toStrictEqual({ output: "(content)", ok: true });
  });
});
