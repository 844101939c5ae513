// `ptc_run_code`: running a program offered as an ordinary tool, so a host can hand codemode to a
// model directly or over MCP. Its description states the binding contract and the declarations of
// every tool a program can reach, so a model never has to guess a result shape.
import { z } from "zod";
import { defineTool, type Tool } from "../tools/index.js";
import type { Codemode } from "./codemode.js";
import { runStructuredSchema } from "./run-result.js";
import { SESSION_NAME } from "./sessions.js";
import { formatBytes, summaryLine } from "../text.js";

export const RUN_CODE_TOOL = "ptc_run_code";


export const BINDING_CONTRACT = `Run a JavaScript (or TypeScript: types are stripped) program in a sandbox (QuickJS: no file system, network, require or import).
Top-level await works; \`return\` ends the program with a value.
- \`await tools.<name>(args)\` calls a tool: it resolves to the tool's structured result (the types below) or, for tools without an output type, the value the tool returned (\`unknown\`: check it before use); unknown argument keys are refused; a failure rejects with an Error whose name, code and message say what failed, and whose stack names the line where you awaited it.
- Only \`text(value)\` output reaches you (strings as is, other values as JSON); console.* goes to logs. Print only what you need.
- \`store(key, value)\` / \`load(key)\` keep JSON values between runs of the same session; \`sleep(ms)\`, setTimeout/clearTimeout work.
- \`budget()\` returns what is left of this run: { ms_left, tool_calls_left, output_bytes_left }; check it in long loops and print what you have before it runs out.
- Subagents: \`tools.ptc_subagent({ agent, task, background: true })\` returns a task_id at once; \`await tools.ptc_task_wait({})\` then waits for every background task the program spawned, in one call (no polling loop, no sleep) and returns before the deadline at the latest.
- Unawaited tool calls are cancelled when the program ends.`;

export function runCodeTool(cm: Codemode, declarations: string): Tool {
  return defineTool({
    name: RUN_CODE_TOOL,
    title: "Run a codemode program",
    // A program may call every bound tool (write_file, upstream servers) and spawn subagents.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    description: `${BINDING_CONTRACT}\n\nTools a program can call:\n${declarations}`,
    input: z.object({
      code: z.string().min(1).describe("The JavaScript program"),
      timeout_ms: z.number().int().min(1).max(600_000).optional().describe("Wall-clock deadline (default 30000)"),
      session: z.string().regex(SESSION_NAME).optional().describe("Runs of one session share store()/load()"),
    }),
    output: runStructuredSchema,
    execute: async (input, ctx) => {
      const onOutput = ctx.progress ? outputProgress(ctx.progress) : undefined;
      const result = await cm.runInternal(input.code, {
        timeoutMs: input.timeout_ms,
        session: input.session,
        signal: ctx.signal,
        depth: ctx.depth,
        taskId: ctx.taskId,
        ...(onOutput ? { onOutput } : {}),
        ...(ctx.trace ? { trace: ctx.trace } : {}),
      });
      return { output: result.structuredContent, modelOutput: result.content.map((block) => block.text).join("\n"), details: result.details };
    },
  });
}

/** What a listener hears of a running program: how much it has printed and its latest line. */
function outputProgress(report: (message: string) => void): (chunks: readonly string[]) => void {
  let bytes = 0;
  let blocks = 0;
  return (chunks) => {
    for (const chunk of chunks) bytes += Buffer.byteLength(chunk) + (blocks++ > 0 ? 1 : 0);
    const last = lastLine(chunks);
    report(`output so far: ${formatBytes(bytes)}${last === undefined ? "" : `, last line: ${summaryLine(last, 200)}`}`);
  };
}

/** The last non-blank line, read from the end of the output only (a flush may hold megabytes). */
function lastLine(chunks: readonly string[]): string | undefined {
  for (let i = chunks.length - 1; i >= 0; i--) {
    const tail = chunks[i]!.slice(-4096).trimEnd();
    if (tail !== "") return tail.slice(tail.lastIndexOf("\n") + 1);
  }
  return undefined;
}
