// What a `run-agent` node's output is, as a schema (so references into it are checked like
// references into a tool's result) and as the value built from the subagent's task record.
import { z } from "zod";
import { reportChannelSchema, reportSchema, statusSchema, usageSchema } from "../ptc/records.js";
import type { TaskHost, TaskRecord } from "../tasks/index.js";
import { jsonSchemaOf } from "../tools/schema.js";
import type { ToolDescriptor } from "../tools/types.js";

export const foregroundAgentOutput = z.object({
  task_id: z.string(),
  status: statusSchema,
  /** The agent's output: the last 50 KB / 2,000 lines, as ptc_task_output pages it. */
  text: z.string(),
  exit_code: z.number().int(),
  report_channel: reportChannelSchema,
  report: reportSchema.optional(),
  usage: usageSchema,
});

/** A background node finishes once its subagent is started: its output is the handle. */
export const backgroundAgentOutput = z.object({ task_id: z.string(), status: statusSchema });

export type ForegroundAgentOutput = z.infer<typeof foregroundAgentOutput>;

// Worked out on the first workflow that has a run-agent node, not when the package is imported:
// zod's JSON Schema conversion at module top level was on every cold start's critical path.
let descriptors: Record<"foreground" | "background", Pick<ToolDescriptor, "output_schema">> | undefined;

export const AGENT_NODE_FIELDS = {
  foreground: Object.keys(foregroundAgentOutput.shape),
  background: Object.keys(backgroundAgentOutput.shape),
};

export function agentNodeDescriptor(background: boolean): Pick<ToolDescriptor, "output_schema"> {
  descriptors ??= {
    foreground: { output_schema: jsonSchemaOf(foregroundAgentOutput, "output", "run-agent output") },
    background: { output_schema: jsonSchemaOf(backgroundAgentOutput, "output", "run-agent background output") },
  };
  return background ? descriptors.background : descriptors.foreground;
}

export function foregroundOutputOf(host: TaskHost, record: TaskRecord): ForegroundAgentOutput {
  const out: ForegroundAgentOutput = {
    task_id: record.id,
    status: record.status,
    text: host.output(record.id).output,
    exit_code: record.exitCode ?? 0,
    report_channel: record.reportChannel ?? "none",
    usage: record.usage ? { ...record.usage } : { input: 0, output: 0, cost: 0, turns: 0 },
  };
  if (record.report) out.report = structuredClone(record.report);
  return out;
}
