// `ptc_run_code`: running a program offered as an ordinary tool, so a host can hand codemode to a
// model directly or over MCP. Its description states the binding contract and the declarations of
// every tool a program can reach, so a model never has to guess a result shape.
import { z } from "zod";
import { ToolError, toolResult, type Tool } from "../tools/index.js";
import { defineBuiltinTool } from "../tools/define.js";
import { ContinuationError, type PendingApproval } from "./continuation.js";
import type { ApprovalAnswerInput } from "./approvals.js";
import type { ProgramHost, ProgramRunOptions } from "../ptc/script-runner.js";
import type { ApprovalAsker, RunApprovals } from "./run.js";
import { runStructuredSchema, type RunResult } from "./run-result.js";
import { SESSION_NAME } from "./sessions.js";
import { formatBytes, summaryLine } from "../text.js";

export const RUN_CODE_TOOL = "ptc_run_code";

/** What a run started by this tool is given besides what any program run takes. */
interface RunCodeOptions extends ProgramRunOptions {
  timeoutMs?: number;
  askApproval?: ApprovalAsker;
  resumeHint?: RunApprovals["resumeHint"];
}

/**
 * The runtime as this tool sees it (Codemode matches it): it runs a program, and resumes an
 * interrupted one. Narrow, so the tool does not depend on the runtime that offers it.
 */
export interface RunCodeHost extends ProgramHost<RunCodeOptions, RunResult> {
  resumeInternal(
    continuation: string,
    options: { approvals?: Record<string, ApprovalAnswerInput>; code?: string; session?: string; signal?: AbortSignal; askApproval?: ApprovalAsker },
    internal: Pick<RunCodeOptions, "resumeHint" | "onOutput" | "depth" | "taskId" | "trace">,
  ): Promise<RunResult>;
}

const answer = z.union([
  z.enum(["allow", "deny"]),
  z.object({
    decision: z.enum(["allow", "deny"]),
    remember: z.boolean().optional().describe("Also allow (or deny) the same call for the rest of the session"),
    reason: z.string().max(500).optional(),
  }),
]);

/** How an interrupted run's content tells a model to resume through this tool; the continuation is in the text, since a model reads only content. */
function toolResumeHint(continuation: string, pending: readonly PendingApproval[]): string {
  const approvals = `{ ${pending.map((p) => `${JSON.stringify(p.approval_id)}: "allow"`).join(", ")} }`;
  return `call ${RUN_CODE_TOOL} with { "resume": ${JSON.stringify(continuation)}, "approvals": ${approvals} } (no code needed).`;
}

export const BINDING_CONTRACT = `Run a JavaScript (or TypeScript: types are stripped) program in a sandbox (QuickJS: no file system, network, require or import).
Top-level await works; \`return\` ends the program with a value.
- \`await tools.<name>(args)\` calls a tool: it resolves to the tool's structured result (the types below) or, for tools without an output type, the value the tool returned (\`unknown\`: check it before use); unknown argument keys are refused; a failure rejects with an Error whose name, code and message say what failed, and whose stack names the line where you awaited it.
- Only \`text(value)\` output reaches you (strings as is, other values as JSON); console.* goes to logs. Print only what you need.
- \`store(key, value)\` / \`load(key)\` keep JSON values between runs of the same session; \`sleep(ms)\`, setTimeout/clearTimeout work.
- \`budget()\` returns what is left of this run: { ms_left, tool_calls_left, output_bytes_left }; check it in long loops and print what you have before it runs out.
- Subagents: \`tools.ptc_subagent({ agent, task, background: true })\` returns a task_id at once; \`await tools.ptc_task_wait({})\` then waits for every background task the program spawned, in one call (no polling loop, no sleep) and returns before the deadline at the latest.
- Unawaited tool calls are cancelled when the program ends.
- A call that needs a person's approval stops the program (status "interrupted", with the pending calls and a continuation): ask the user, then call this tool with { resume, approvals } — the program runs again from the start and its earlier calls are not repeated. A denied call rejects with code "tool_denied", reason "approval_denied".`;

/**
 * `declarations` renders the program tools' declarations for the description: called at the
 * description's first read (an MCP listing, tool_info), not here — a run never reads it.
 */
export function runCodeTool(cm: RunCodeHost, declarations: () => string): Tool {
  return defineBuiltinTool(
    {
      name: RUN_CODE_TOOL,
      title: "Run a codemode program",
      // A program may call every bound tool (write_file, upstream servers) and spawn subagents.
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      description: `${BINDING_CONTRACT}\n\nTools a program can call:\n`,
      input: z.object({
        code: z.string().min(1).optional().describe("The JavaScript program (leave out when resuming)"),
        timeout_ms: z.number().int().min(1).max(600_000).optional().describe("Wall-clock deadline (default 30000)"),
        session: z.string().regex(SESSION_NAME).optional().describe("Runs of one session share store()/load()"),
        resume: z.string().min(1).optional().describe("The continuation of an interrupted run, to continue it"),
        approvals: z.record(z.string(), answer).optional().describe('With resume: the person\'s answer per approval_id: "allow", "deny", or { decision, remember: true }'),
      }),
      output: runStructuredSchema,
      execute: async (input, ctx) => {
        const onOutput = ctx.progress ? outputProgress(ctx.progress) : undefined;
        const ask = ctx.askApproval;
        if (input.resume === undefined) {
          if (input.approvals !== undefined)
            throw new ToolError("tool_invalid_input", `tool "${RUN_CODE_TOOL}" input "approvals" answers an interrupted run: give it together with "resume"`, { reason: "schema_invalid" });
          if (input.code === undefined)
            throw new ToolError("tool_invalid_input", `tool "${RUN_CODE_TOOL}" input needs "code" (the program), or "resume" (a continuation) to continue an interrupted run`, {
              reason: "schema_invalid",
            });
        } else if (input.timeout_ms !== undefined) {
          throw new ToolError("tool_invalid_input", `tool "${RUN_CODE_TOOL}" input "timeout_ms" cannot change on resume: a resumed run keeps the limits it started with`, { reason: "schema_invalid" });
        }
        let result: RunResult;
        if (input.resume !== undefined) {
          try {
            result = await cm.resumeInternal(
              input.resume,
              {
                ...(input.approvals ? { approvals: input.approvals as Record<string, ApprovalAnswerInput> } : {}),
                ...(input.code !== undefined ? { code: input.code } : {}),
                ...(input.session !== undefined ? { session: input.session } : {}),
                signal: ctx.signal,
                ...(ask ? { askApproval: ask } : {}),
              },
              { resumeHint: toolResumeHint, depth: ctx.depth, ...(ctx.taskId ? { taskId: ctx.taskId } : {}), ...(onOutput ? { onOutput } : {}), ...(ctx.trace ? { trace: ctx.trace } : {}) },
            );
          } catch (error) {
            if (error instanceof ContinuationError) throw new ToolError(error.code, error.message, { reason: error.reason });
            if (error instanceof TypeError) throw new ToolError("tool_invalid_input", error.message, { reason: "schema_invalid" });
            throw error;
          }
        } else {
          result = await cm.runInternal(input.code!, {
            timeoutMs: input.timeout_ms,
            session: input.session,
            signal: ctx.signal,
            depth: ctx.depth,
            taskId: ctx.taskId,
            resumeHint: toolResumeHint,
            ...(ask ? { askApproval: ask } : {}),
            ...(onOutput ? { onOutput } : {}),
            ...(ctx.trace ? { trace: ctx.trace } : {}),
          });
        }
        // A program that failed is an error result for the model, though the tool itself worked.
        return toolResult(result.structuredContent, {
          modelOutput: result.content.map((block) => block.text).join("\n"),
          details: result.details,
          isError: result.structuredContent.status === "error",
        });
      },
    },
    { descriptionTail: declarations },
  );
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
