// `ptc_workflow`: validate a workflow, or run it as a task (status, output, usage and stop go
// through ptc_task_list/output/stop like any task's). Failures reject, like every ptc tool's.
import { z } from "zod";
import { detailRecord, statusSchema, taskRecordSchema, toSnake, usageLine, usageSchema } from "../ptc/records.js";
import { TaskError, type FunctionAgent, type TaskHost, type TaskRecord } from "../tasks/index.js";
import { pinnedText, ToolError, type PinnedText, type Tool, type ToolContext, type ToolHooks } from "../tools/index.js";
import { defineBuiltinTool } from "../tools/define.js";
import { takeHead } from "../text.js";
import type { WorkflowProblem } from "./definition.js";
import { formatProblems } from "./report.js";
import { runWorkflow, type NodeLine, type WorkflowOutcome } from "./run.js";
import { validateWorkflow, type ContractEntry, type WorkflowPlan } from "./validate.js";

export const WORKFLOW_TOOL = "ptc_workflow";
/** The agent name a workflow task is recorded under (its driver is "workflow"). */
export const WORKFLOW_AGENT = "workflow";

export interface WorkflowToolOptions {
  host: TaskHost;
  /** The tools nodes may call, read when a workflow is validated (so tools added later are found). */
  tools: () => readonly Tool[];
  hooks?: ToolHooks;
  development?: boolean;
  /** Nodes running at once, and the largest node output. */
  limits: { maxInFlight: number; maxCrossingBytes: number };
}

const problemSchema = z.object({
  code: z.string(),
  node: z.string().optional(),
  path: z.string().optional().describe("Where in the definition, e.g. graph.nodes[1].params.prompt"),
  line: z.number().int().optional().describe("The line, when the workflow was given as text"),
  message: z.string(),
});

const contractSchema = z.object({ node: z.string(), tool: z.string(), view: z.enum(["compact", "full"]).optional(), digest: z.string().optional() });

const nodeSchema = z.object({
  node: z.string(),
  status: z.enum(["succeeded", "failed", "skipped", "canceled"]),
  kind: z.string(),
  view: z.enum(["compact", "full"]).optional(),
  agent: z.string().optional(),
  task_id: z.string().optional(),
  duration_ms: z.number().int().optional(),
  error: z.object({ code: z.string(), reason: z.string().optional(), message: z.string() }).optional(),
  reason: z.string().optional(),
});

const compact = z.object({
  valid: z.boolean(),
  errors: z.array(problemSchema).optional().describe("validate_only: every problem found (a run with problems rejects instead)"),
  warnings: z.array(problemSchema),
  task_id: z.string().optional().describe("The workflow's task (absent for validate_only)"),
  status: statusSchema.optional().describe("Background: running or queued; foreground: succeeded"),
  outputs: z.record(z.string(), z.unknown()).optional().describe("Foreground: each node's output, by node id"),
  usage: usageSchema.optional().describe("Foreground: the sum of its agent nodes' host-counted usage"),
});

const full = compact.extend({
  contract: z.array(contractSchema).describe("What the run pins: each tool node's view and its schema digest"),
  nodes: z.array(nodeSchema).optional().describe("Foreground: how each node ended, in the order they finished"),
  task: taskRecordSchema.optional(),
});

type Out = z.input<typeof full>;

const DESCRIPTION = `Validate or run a workflow: a graph of tool and agent nodes whose params may read earlier nodes' outputs, checked against the result view each node selected before anything runs.
Definition (object or YAML/JSON text): { name?, inputs?: { <name>: { default? } }, graph: { nodes: [{ id, class: action, kind, params, produces? }], edges?: [{ from, to }] } }.
kind is a tool id (params are its input; result_view: full selects the full record) or "run-agent" (params: agent, prompt, background?, label?, model?).
String params may hold {{ .inputs.<name> }} and {{ .nodes.<id>.output.<path> }}; a reference also orders the nodes.
validate_only: true returns { valid, errors, warnings } and runs nothing. Otherwise a valid workflow runs as a task (background: true returns its task_id at once; its output has one JSON line per node as it finishes) and a foreground run returns every node's output; an invalid one rejects with every problem.`;

export function ptcWorkflowTool(options: WorkflowToolOptions): Tool {
  const { host } = options;
  return defineBuiltinTool({
    name: WORKFLOW_TOOL,
    title: "Run a workflow",
    // Its agent nodes are subagents; validate_only: true runs nothing.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    description: DESCRIPTION,
    input: z.object({
      workflow: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).describe("The definition object, or its YAML (or JSON) text"),
      inputs: z.record(z.string(), z.unknown()).optional().describe("Values of the workflow's inputs; those not given take their defaults"),
      validate_only: z.boolean().optional().describe("Check the workflow and run nothing"),
      background: z.boolean().optional().describe("Return the task_id at once instead of waiting"),
      label: z.string().optional().describe("Short label for task lists (default: the workflow's name)"),
    }),
    views: { compact, full },
    execute: async (input, ctx: ToolContext): Promise<Out> => {
      const parent = ctx.taskId !== undefined ? host.get(ctx.taskId) : undefined;
      const depth = (parent ? parent.depth : ctx.depth) + 1;
      const checked = validateWorkflow(
        input.workflow,
        { tools: options.tools(), agents: host.agents, depth, maxDepth: host.maxDepth },
        input.inputs !== undefined || !input.validate_only ? { inputs: input.inputs ?? {} } : {},
      );
      if (input.validate_only) return { valid: checked.valid, errors: checked.errors, warnings: checked.warnings, contract: checked.contract };
      if (!checked.valid || !checked.plan) {
        const n = checked.errors.length;
        throw new ToolError("workflow_invalid", `the workflow is invalid (${n} problem${n === 1 ? "" : "s"}); nothing ran:\n\n${formatProblems(checked.errors, checked.warnings)}`);
      }
      const plan = checked.plan;
      const label = input.label ?? plan.name ?? WORKFLOW_AGENT;
      let outcome: WorkflowOutcome | undefined;
      const run: FunctionAgent = async ({ taskId, signal, emit, trace }) => {
        outcome = await runWorkflow(plan, checked.inputs ?? {}, {
          host,
          taskId,
          depth: host.get(taskId)?.depth ?? depth,
          signal,
          emit,
          ...(options.hooks ? { hooks: options.hooks } : {}),
          development: options.development ?? false,
          maxInFlight: options.limits.maxInFlight,
          maxOutputBytes: options.limits.maxCrossingBytes,
          ...(trace ? { trace } : {}),
        });
        if (outcome.status !== "succeeded") throw new Error(outcome.failure);
      };
      let record: TaskRecord;
      try {
        record = await host.spawn(
          { agent: WORKFLOW_AGENT, task: taskText(plan, checked.inputs ?? {}), background: input.background ?? false, label, workflow: run },
          { depth: ctx.depth, signal: ctx.signal, runId: ctx.runId, ...(ctx.trace ? { trace: ctx.trace } : {}), ...(ctx.taskId !== undefined ? { parentTaskId: ctx.taskId } : {}) },
        );
      } catch (error) {
        if (error instanceof TaskError && error.code === "task_failed" && error.taskId && outcome) throw workflowFailed(host, error.taskId, label, outcome);
        if (error instanceof TaskError) throw new ToolError(error.code, error.message, error.taskId ? { fields: { task_id: error.taskId } } : undefined);
        throw error;
      }
      const base = { valid: true, warnings: checked.warnings, task_id: record.id, status: record.status, contract: plan.contract };
      if (record.background || !outcome) return { ...base, task: toSnake(record) };
      return { ...base, outputs: outcome.outputs, usage: record.usage ?? outcome.usage, nodes: outcome.lines.map(withoutOutput), task: toSnake(record) };
    },
    toModelOutput: (r: Out) => modelText(r),
    toDetails: (r: Out) => {
      const record = r.task_id ? host.get(r.task_id) : undefined;
      return { ...(record ? { task: detailRecord(host, record) } : {}), contract: r.contract, ...(r.nodes ? { nodes: r.nodes } : {}) };
    },
  });
}

function withoutOutput(line: NodeLine): Omit<NodeLine, "output"> {
  const { output: _output, ...rest } = line;
  return rest;
}

/** The record's task text: what ran, with which inputs, under which pinned contract. */
function taskText(plan: WorkflowPlan, inputs: Record<string, unknown>): string {
  const head = `workflow${plan.name ? ` "${plan.name}"` : ""}: ${plan.nodes.length} node${plan.nodes.length === 1 ? "" : "s"}, inputs ${JSON.stringify(inputs)}`;
  const pinned = new Map<string, ContractEntry>(plan.contract.map((c) => [c.node, c]));
  const lines = plan.nodes.map((node) => {
    const after = node.deps.length > 0 ? ` (after ${node.deps.join(", ")})` : "";
    if (node.type === "agent") return `${node.id}: run-agent ${node.agent}${node.background ? " in the background" : ""}${after}`;
    const c = pinned.get(node.id);
    return `${node.id}: ${node.tool.id}${c?.view ? `, ${c.view} view` : ""}${c?.digest ? `, pinned digest ${c.digest}` : ""}${after}`;
  });
  return [head, ...lines].join("\n");
}

function workflowFailed(host: TaskHost, taskId: string, label: string, outcome: WorkflowOutcome): ToolError {
  const record = host.get(taskId);
  const read = `its node lines and usage stay readable with ptc_task_output({ task_id: "${taskId}" })`;
  const fields: Record<string, string> = { task_id: taskId };
  const failed = outcome.lines.find((l) => l.status === "failed");
  if (failed?.error) {
    fields.node = failed.node;
    fields.node_code = failed.error.code;
    if (failed.error.reason) fields.node_reason = failed.error.reason;
  }
  const what =
    outcome.status === "canceled" || record?.status === "canceled"
      ? `was canceled${record?.stopReason ? ` (${record.stopReason})` : ""}: ${outcome.lines.filter((l) => l.status === "succeeded").length} of ${outcome.lines.length} nodes had succeeded`
      : `failed: ${outcome.failure}`;
  return new ToolError("workflow_failed", `workflow "${label}" (task ${taskId}) ${what}; ${read}`, { fields });
}

function preview(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "");
  const head = takeHead(text.replace(/\s+/g, " "), 300);
  return head === text ? text : `${head}…`;
}

function modelText(r: Out): string | PinnedText {
  if (r.task_id === undefined) {
    const errors = (r.errors ?? []) as WorkflowProblem[];
    const warnings = r.warnings as WorkflowProblem[];
    const head = r.valid
      ? `The workflow is valid (${r.contract.length} tool node${r.contract.length === 1 ? "" : "s"} pinned${r.contract.length > 0 ? `: ${r.contract.map((c) => `${c.node}=${c.tool}${c.view ? `/${c.view}` : ""}`).join(", ")}` : ""}); nothing ran.`
      : `The workflow is invalid (${errors.length} problem${errors.length === 1 ? "" : "s"}); nothing ran.`;
    const body = formatProblems(errors, warnings);
    return body === "" ? head : `${head}\n\n${body}`;
  }
  const label = r.task?.label ?? WORKFLOW_AGENT;
  if (!r.outputs) {
    return `Started workflow task ${r.task_id} ("${label}"), status ${r.status}. Poll it with ptc_task_output({ task_id: "${r.task_id}" }): its output has one JSON line per node as it finishes; ptc_task_stop stops it and its running nodes.`;
  }
  const lines: string[] = [];
  for (const line of r.nodes ?? []) {
    const kind = line.kind === "run-agent" ? `run-agent ${line.agent}` : `${line.kind}${line.view ? `, ${line.view} view` : ""}`;
    lines.push(`- ${line.node} (${kind}): ${preview(r.outputs[line.node])}`);
  }
  for (const w of r.warnings) lines.push(`warning: ${w.code}: ${w.message}`);
  // The status and usage lines survive any cut of the budget; the node lines are what gets cut.
  return pinnedText(`Workflow task ${r.task_id} ("${label}") ${r.status}: ${Object.keys(r.outputs).length} nodes.\n${usageLine(r.usage)}`, lines.join("\n"));
}
