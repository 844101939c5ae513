// Running a validated workflow: nodes in dependency order, independent ones at once (within the
// in-flight cap, and agent nodes within the host's running cap), each tool call through
// invokeTool with the node's view pinned, each agent node a child task of the workflow's own
// task. One JSON line per node is emitted as it finishes; agent usage is re-emitted as the
// workflow's, so the host's count for the workflow is the sum of its agents' counts.
import type { DriverEvent, TaskHost, TaskRecord, Usage } from "../tasks/index.js";
import { TaskError, zeroUsage } from "../tasks/index.js";
import { invokeToolForProgram, ToolError, type ResultView, type ToolHooks } from "../tools/index.js";
import { setKey } from "../tools/json.js";
import type { TraceScope } from "../tracing.js";
import { formatBytes, messageOf } from "../text.js";
import { backgroundAgentOutput, foregroundOutputOf } from "./agent-node.js";
import { renderTemplate, setValueAt, valueAt, type Reference } from "./template.js";
import type { PlannedNode, WorkflowPlan } from "./validate.js";

export type NodeStatus = "succeeded" | "failed" | "skipped" | "canceled";

/** What the log holds about one node once it finished (one JSON line each). */
export interface NodeLine {
  node: string;
  status: NodeStatus;
  /** The tool id, or "run-agent". */
  kind: string;
  view?: ResultView;
  agent?: string;
  task_id?: string;
  duration_ms?: number;
  output?: unknown;
  error?: { code: string; reason?: string; message: string };
  /** Why a node was skipped or canceled. */
  reason?: string;
}

export interface WorkflowRunEnvironment {
  host: TaskHost;
  /** The workflow's own task: the parent of its agent nodes' tasks and its tool calls' ctx.taskId. */
  taskId: string;
  depth: number;
  signal: AbortSignal;
  emit: (event: DriverEvent) => void;
  hooks?: ToolHooks;
  development?: boolean;
  /** Nodes running at once. */
  maxInFlight: number;
  /** The largest node output (its JSON), like one value crossing the sandbox wall. */
  maxOutputBytes: number;
  /** Where the nodes' spans go (the workflow task's run span). */
  trace?: TraceScope;
}

export interface WorkflowOutcome {
  status: "succeeded" | "failed" | "canceled";
  /** In the order the nodes finished. */
  lines: NodeLine[];
  /** Each succeeded node's output, by node id. */
  outputs: Record<string, unknown>;
  /** The sum of the agent nodes' host-counted usage. */
  usage: Usage;
  /** What went wrong, in one sentence (failed or canceled runs). */
  failure?: string;
}

interface Running {
  node: PlannedNode;
  controller: AbortController;
}

const STOPPED = "the workflow was stopped";

export function runWorkflow(plan: WorkflowPlan, inputs: Record<string, unknown>, env: WorkflowRunEnvironment): Promise<WorkflowOutcome> {
  const total = plan.nodes.length;
  const byId = new Map(plan.nodes.map((node) => [node.id, node]));
  const dependents = new Map<string, string[]>(plan.nodes.map((node) => [node.id, []]));
  const waiting = new Map<string, number>();
  for (const node of plan.nodes) {
    waiting.set(node.id, node.deps.length);
    for (const dep of node.deps) dependents.get(dep)!.push(node.id);
  }
  const results = new Map<string, NodeLine>();
  const lines: NodeLine[] = [];
  const outputs = new Map<string, unknown>();
  const ready: PlannedNode[] = plan.nodes.filter((node) => node.deps.length === 0);
  const running = new Map<string, Running>();
  const background: string[] = [];
  const usage = zeroUsage();
  let agentsRunning = 0;
  let finished = false;

  const count = (record: TaskRecord | undefined): void => {
    const u = record?.usage;
    if (!u) return;
    usage.input += u.input;
    usage.output += u.output;
    usage.cost += u.cost;
    usage.turns += u.turns;
    env.emit({ type: "usage", input: u.input, output: u.output, cost: u.cost });
    for (let i = 0; i < u.turns; i++) env.emit({ type: "turn" });
  };

  const resolve = (ref: Reference): unknown => (ref.kind === "input" ? (Object.hasOwn(inputs, ref.name) ? inputs[ref.name] : undefined) : valueAt(outputs.get(ref.node), ref.path));

  const paramsOf = (node: PlannedNode, asText: boolean): Record<string, unknown> => {
    const params = structuredClone(node.params);
    for (const site of node.sites) setValueAt(params, site.at, renderTemplate(site.template, resolve, asText));
    return params;
  };

  async function runTool(node: Extract<PlannedNode, { type: "tool" }>, signal: AbortSignal): Promise<unknown> {
    // A node gets what a program would: the structured result, or what a tool without an output returned.
    return invokeToolForProgram(node.tool, paramsOf(node, false), {
      ctx: { signal, callId: `${env.taskId}:${node.id}`, runId: `workflow-${env.taskId}`, depth: env.depth, taskId: env.taskId },
      ...(env.hooks ? { hooks: env.hooks } : {}),
      development: env.development ?? false,
      // Nodes read the structured result: its size is bounded below, not by the model's budget.
      outputBudget: Infinity,
      ...(node.view ? { pinnedResultView: node.view } : {}),
      ...(env.trace ? { trace: env.trace } : {}),
    });
  }

  async function runAgent(node: Extract<PlannedNode, { type: "agent" }>, signal: AbortSignal, line: NodeLine): Promise<unknown> {
    const params = paramsOf(node, true);
    let record: TaskRecord;
    try {
      record = await env.host.spawn(
        {
          agent: node.agent,
          task: params.prompt as string,
          background: node.background,
          label: typeof params.label === "string" && params.label !== "" ? params.label : node.id,
          ...(typeof params.model === "string" && params.model !== "" ? { model: params.model } : {}),
        },
        { parentTaskId: env.taskId, signal, ...(env.trace ? { trace: env.trace } : {}) },
      );
    } catch (error) {
      // A failed child still cost what it cost: its usage is the workflow's too.
      if (error instanceof TaskError && error.taskId) {
        line.task_id = error.taskId;
        count(env.host.get(error.taskId));
      }
      throw error;
    }
    line.task_id = record.id;
    if (node.background) {
      background.push(record.id);
      return backgroundAgentOutput.parse({ task_id: record.id, status: record.status });
    }
    count(record);
    return foregroundOutputOf(env.host, record);
  }

  return new Promise<WorkflowOutcome>((done) => {
    const emitLine = (line: NodeLine): boolean => {
      if (results.has(line.node)) return false;
      results.set(line.node, line);
      lines.push(line);
      env.emit({ type: "text", text: `${JSON.stringify(line)}\n` });
      return true;
    };
    const base = (node: PlannedNode): NodeLine =>
      node.type === "tool"
        ? { node: node.id, status: "succeeded", kind: node.tool.id, ...(node.view ? { view: node.view } : {}) }
        : { node: node.id, status: "succeeded", kind: "run-agent", agent: node.agent };

    const skipDependents = (id: string, why: string): void => {
      for (const next of dependents.get(id)!) {
        if (results.has(next)) continue;
        emitLine({ ...base(byId.get(next)!), status: "skipped", reason: `it depends on "${id}", which ${why}` });
        skipDependents(next, "was skipped");
      }
    };

    const settle = (node: PlannedNode, line: NodeLine): void => {
      if (running.get(node.id)?.node === node) {
        running.delete(node.id);
        if (node.type === "agent") agentsRunning--;
      }
      if (!emitLine(line)) {
        pump();
        return;
      }
      if (line.status === "succeeded") {
        outputs.set(node.id, line.output);
        for (const next of dependents.get(node.id)!) {
          const left = waiting.get(next)! - 1;
          waiting.set(next, left);
          if (left === 0 && !results.has(next)) ready.push(byId.get(next)!);
        }
      } else {
        skipDependents(node.id, line.status === "canceled" ? "was canceled" : "failed");
      }
      pump();
    };

    const start = (node: PlannedNode): void => {
      const controller = new AbortController();
      running.set(node.id, { node, controller });
      if (node.type === "agent") agentsRunning++;
      const started = performance.now();
      const line = base(node);
      const work = node.type === "tool" ? runTool(node, controller.signal) : runAgent(node, controller.signal, line);
      work
        .then((output) => {
          const json = JSON.stringify(output) ?? "null";
          const bytes = Buffer.byteLength(json);
          if (bytes > env.maxOutputBytes) {
            throw new ToolError(
              "node_output_too_large",
              `node "${node.id}" returned ${formatBytes(bytes)} of JSON; a node's output is limited to ${formatBytes(env.maxOutputBytes)} (limits.maxCrossingBytes)`,
            );
          }
          settle(node, { ...line, duration_ms: elapsed(started), output: JSON.parse(json) });
        })
        .catch((error: unknown) => {
          if (env.signal.aborted) settle(node, { ...line, status: "canceled", duration_ms: elapsed(started), reason: STOPPED });
          else settle(node, { ...line, status: "failed", duration_ms: elapsed(started), error: errorOf(error) });
        });
    };

    const cancelRest = (): void => {
      ready.length = 0;
      for (const { node, controller } of [...running.values()]) {
        controller.abort(env.signal.reason);
        // A tool that ignores its signal is not waited for; an agent node is (its child is being
        // stopped by the host's cascade, and what it cost must be counted).
        if (node.type === "tool") {
          running.delete(node.id);
          emitLine({ ...base(node), status: "canceled", reason: STOPPED });
        }
      }
      for (const node of plan.nodes) {
        if (!results.has(node.id) && !running.has(node.id)) emitLine({ ...base(node), status: "canceled", reason: `${STOPPED} before it ran` });
      }
    };

    const pump = (): void => {
      if (finished) return;
      if (env.signal.aborted) cancelRest();
      else {
        ready.sort((a, b) => a.index - b.index);
        for (let i = 0; i < ready.length && running.size < env.maxInFlight; ) {
          const node = ready[i]!;
          if (node.type === "agent" && agentsRunning >= env.host.maxRunning) {
            i++;
            continue;
          }
          ready.splice(i, 1);
          start(node);
        }
      }
      if (results.size === total && running.size === 0) void finish();
    };

    const finish = async (): Promise<void> => {
      finished = true;
      env.signal.removeEventListener("abort", pump);
      // Background agents keep running after their node; the workflow ends when they do, so
      // its usage is the whole cost of what it started.
      for (const id of background) count(await env.host.wait(id).catch(() => env.host.get(id)));
      const failed = lines.filter((l) => l.status === "failed");
      const status = env.signal.aborted ? "canceled" : failed.length > 0 ? "failed" : "succeeded";
      const out: Record<string, unknown> = {};
      for (const node of plan.nodes) if (outputs.has(node.id)) setKey(out, node.id, outputs.get(node.id));
      const outcome: WorkflowOutcome = { status, lines, outputs: out, usage: { ...usage, cost: Math.round(usage.cost * 1e9) / 1e9 } };
      if (status === "failed") outcome.failure = failureOf(failed, lines);
      if (status === "canceled") outcome.failure = `${STOPPED}: ${lines.filter((l) => l.status === "succeeded").length} of ${total} nodes had succeeded`;
      done(outcome);
    };

    env.signal.addEventListener("abort", pump, { once: true });
    pump();
  });
}

function failureOf(failed: NodeLine[], lines: NodeLine[]): string {
  const first = failed[0]!;
  const e = first.error!;
  let text = `node "${first.node}" failed (${e.code}${e.reason ? `, ${e.reason}` : ""}): ${e.message}`;
  const skipped = lines.filter((l) => l.status === "skipped").length;
  const more = [
    failed.length > 1 ? `${failed.length - 1} more node${failed.length > 2 ? "s" : ""} failed` : "",
    skipped > 0 ? `${skipped} node${skipped === 1 ? " was" : "s were"} skipped` : "",
  ].filter(Boolean);
  if (more.length > 0) text += `; ${more.join(", ")}`;
  return text;
}

function errorOf(error: unknown): NonNullable<NodeLine["error"]> {
  const raw = (error as { code?: unknown } | null)?.code;
  const code = typeof raw === "string" && /^[a-z][a-z0-9_]*$/.test(raw) ? raw : "node_failed";
  return { code, ...(error instanceof ToolError && error.reason !== undefined ? { reason: error.reason } : {}), message: messageOf(error) };
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}
