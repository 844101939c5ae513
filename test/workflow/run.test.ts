// Running workflows: from a program and from cm.callTool, with the view each node selected pinned
// on its call, independent nodes at once within the caps, agent nodes as child tasks whose usage
// is the workflow's, stop cascading to running nodes, and records kept by the task store.
import { afterEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { AgentRegistry, defineTool, describeTool, invokeTool, projectViews, TaskHost, type PreCallEvent, type TaskRecord, type Tool } from "../../src/index.js";
import type { Usage } from "../../src/tasks/types.js";
import { memoryTaskStore } from "../../src/tasks/index.js";
import { ptcWorkflowTool } from "../../src/workflow/index.js";
import { newCalls, sampleRecord, sessionStatusTool } from "../tools/sample-tools.js";
import { deferred, GENERAL_COST, openFixture, seedWorkflow, type Fixture } from "./helpers.js";

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function fixture(options: Parameters<typeof openFixture>[0] = {}): Promise<Fixture> {
  const f = await openFixture(options);
  cleanup.push(() => {
    f.gate.resolve();
    return f.cm.close();
  });
  return f;
}

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const FULL_SESSION = projectViews(sessionStatusTool(newCalls()), sampleRecord()).full;
const generalUsage: Usage = { input: 100, output: 20, cost: GENERAL_COST, turns: 1 };

function sum(records: readonly TaskRecord[]): Usage {
  const total = { input: 0, output: 0, cost: 0, turns: 0 };
  for (const r of records) {
    total.input += r.usage!.input;
    total.output += r.usage!.output;
    total.cost += r.usage!.cost;
    total.turns += r.usage!.turns;
  }
  return { ...total, cost: Math.round(total.cost * 1e9) / 1e9 };
}

/** The end-to-end graph: a tool node with views (full requested), an agent prompted with a full-only field, a node depending on both. */
const E2E =
  "name: session-review\n" +
  seedWorkflow("        result_view: full\n").replace(
    "  edges:\n",
    `    - id: final
      class: action
      kind: run-agent
      params:
        agent: general
        label: final word
        prompt: "{{ .nodes.inspect.output.session.name }} / {{ .nodes.report.output.text }}"
  edges:
`,
  );

function expectedOutputs(report: TaskRecord, final: TaskRecord) {
  return {
    inspect: FULL_SESSION,
    report: { task_id: report.id, status: "succeeded", text: 'general: Tools allowed: ["read_file","bash"]', exit_code: 0, report_channel: "none", usage: generalUsage },
    final: { task_id: final.id, status: "succeeded", text: 'general: Fix flaky upload test / general: Tools allowed: ["read_file","bash"]', exit_code: 0, report_channel: "none", usage: generalUsage },
  };
}

describe("the end-to-end workflow", () => {
  it("is validated and run from a program; the agent read a full-only field; usage is the sum of its agents'", async () => {
    const f = await fixture();
    const result = await f.cm.run(`
      const workflow = ${JSON.stringify(E2E)};
      const check = await tools.ptc_workflow({ workflow, validate_only: true });
      const run = await tools.ptc_workflow({ workflow, inputs: { session_id: "sess-example" } });
      return { check, run };
    `);
    expect(result.structuredContent.status).toBe("ok");
    const { check, run } = result.structuredContent.value as { check: unknown; run: Record<string, unknown> };
    expect(check).toStrictEqual({ valid: true, errors: [], warnings: [] });

    const workflowTask = f.cm.tasks.get(run.task_id as string)!;
    const children = f.cm.tasks.store.children(workflowTask.id);
    const [report, final] = ["report", "final word"].map((label) => children.find((c) => c.label === label)!);
    expect(run).toStrictEqual({ valid: true, warnings: [], task_id: workflowTask.id, status: "succeeded", outputs: expectedOutputs(report!, final!), usage: sum(children) });
    expect(sum(children)).toStrictEqual({ input: 200, output: 40, cost: 2 * GENERAL_COST, turns: 2 });
    // The host counted the workflow's usage itself: it is on the record, equal to its agents' sum.
    expect(workflowTask).toMatchObject({ agent: "workflow", driver: "workflow", label: "session-review", depth: 1, status: "succeeded", usage: sum(children), reportChannel: "opted-out" });
    expect(children.map((c) => [c.agent, c.depth, c.parentId, c.status])).toStrictEqual([
      ["general", 2, workflowTask.id, "succeeded"],
      ["general", 2, workflowTask.id, "succeeded"],
    ]);
    expect(f.agentRuns).toStrictEqual(['Tools allowed: ["read_file","bash"]', 'Fix flaky upload test / general: Tools allowed: ["read_file","bash"]']);
    expect(f.calls.inputs).toStrictEqual([{ session_id: "sess-example" }]);
    // The pinned contract is part of the persisted record.
    const digest = describeTool(f.cm.toolList().find((t) => t.id === "session_status")!).output_views!.full.digest;
    expect(workflowTask.task).toBe(
      [
        'workflow "session-review": 3 nodes, inputs {"session_id":"sess-example"}',
        `inspect: session_status, full view, pinned digest ${digest}`,
        "report: run-agent general (after inspect)",
        "final: run-agent general (after inspect, report)",
      ].join("\n"),
    );
  });

  it("is run from cm.callTool: both views, the model text, and the task's one JSON line per node", async () => {
    const f = await fixture();
    const result = await f.cm.callTool("ptc_workflow", { workflow: E2E, inputs: { session_id: "sess-example" }, result_view: "full" });
    expect(result.isError).toBeUndefined();
    const sc = result.structuredContent as Record<string, unknown>;
    expect(JSON.parse(JSON.stringify(sc))).toStrictEqual(sc);
    const id = sc.task_id as string;
    const children = f.cm.tasks.store.children(id);
    const [report, final] = children;
    const digest = describeTool(f.cm.toolList().find((t) => t.id === "session_status")!).output_views!.full.digest;
    const nodes = sc.nodes as Array<Record<string, unknown>>;
    expect(
      nodes.map(({ duration_ms, ...rest }) => {
        expect(typeof duration_ms).toBe("number");
        return rest;
      }),
    ).toStrictEqual([
      { node: "inspect", status: "succeeded", kind: "session_status", view: "full" },
      { node: "report", status: "succeeded", kind: "run-agent", agent: "general", task_id: report!.id },
      { node: "final", status: "succeeded", kind: "run-agent", agent: "general", task_id: final!.id },
    ]);
    expect({ ...sc, nodes: undefined, task: undefined }).toStrictEqual({
      valid: true,
      warnings: [],
      task_id: id,
      status: "succeeded",
      outputs: expectedOutputs(report!, final!),
      usage: sum(children),
      contract: [{ node: "inspect", tool: "session_status", view: "full", digest }],
      nodes: undefined,
      task: undefined,
    });
    expect(sc.task).toMatchObject({ id, driver: "workflow", agent: "workflow", status: "succeeded", usage: sum(children) });
    const text = result.content[0]!.text.split("\n");
    expect(text.slice(0, 2)).toStrictEqual([`Workflow task ${id} ("session-review") succeeded: 3 nodes.`, `usage: input=200 output=40 cost=${2 * GENERAL_COST} turns=2`]);
    // The model text previews each output (its first 300 bytes); structuredContent has all of it.
    expect(text[2]).toBe(`- inspect (session_status, full view): ${JSON.stringify(FULL_SESSION).slice(0, 300)}…`);

    const page = await f.cm.callTool("ptc_task_output", { task_id: id });
    const lines = (page.structuredContent!.output as string)
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.node, l.status])).toStrictEqual([
      ["inspect", "succeeded"],
      ["report", "succeeded"],
      ["final", "succeeded"],
    ]);
    expect(lines[0].output).toStrictEqual(FULL_SESSION);
    expect(page.structuredContent!.usage).toStrictEqual(sum(children));
    const listed = await f.cm.callTool("ptc_task_list", {});
    expect((listed.structuredContent!.tasks as Array<{ agent: string }>).map((t) => t.agent)).toStrictEqual(["workflow", "general", "general"]);
  });

  it("background: returns the task at once; it is stopped mid-run from a program, its running agent too, and its usage is what its agents cost", async () => {
    const f = await fixture();
    const workflow = {
      graph: {
        nodes: [
          { id: "inspect", kind: "session_status", params: { session_id: "s" } },
          { id: "quick", kind: "run-agent", params: { agent: "general", prompt: "id {{ .nodes.inspect.output.session.id }}" } },
          { id: "wait", kind: "run-agent", params: { agent: "slow", prompt: "hold" } },
          { id: "after", kind: "run-agent", params: { agent: "general", prompt: "{{ .nodes.wait.output.text }}" } },
        ],
        edges: [{ from: "quick", to: "wait" }],
      },
    };
    const result = await f.cm.run(`
      const started = await tools.ptc_workflow({ workflow: ${JSON.stringify(workflow)}, background: true, label: "stoppable" });
      // Wait until the slow agent runs: its task is the workflow's child.
      for (;;) {
        const live = await tools.ptc_task_list({ status: ["running"], result_view: "full" });
        if (live.tasks.some((t) => t.agent === "slow" && t.parent_task_id === started.task_id)) break;
        await sleep(5);
      }
      const stopped = await tools.ptc_task_stop({ task_id: started.task_id, reason: "enough" });
      const out = await tools.ptc_task_output({ task_id: started.task_id });
      return { started, stopped, status: out.status, usage: out.usage, lines: out.output.trimEnd().split("\\n").map((l) => JSON.parse(l)) };
    `);
    expect(result.structuredContent.status).toBe("ok");
    const v = result.structuredContent.value as { started: Record<string, unknown>; stopped: unknown; status: string; usage: Usage; lines: Array<Record<string, unknown>> };
    const id = v.started.task_id as string;
    expect(v.started).toStrictEqual({ valid: true, warnings: [], task_id: id, status: "running" });
    expect(v.stopped).toStrictEqual({ task_id: id, status: "canceled", from_status: "running", stop_reason: "enough" });
    const children = f.cm.tasks.store.children(id);
    expect(children.map((c) => [c.agent, c.status, c.stopReason])).toStrictEqual([
      ["general", "succeeded", undefined],
      ["slow", "canceled", `parent task ${id} was stopped`],
    ]);
    expect(v.lines.map(({ duration_ms: _d, output: _o, ...rest }) => rest)).toStrictEqual([
      { node: "inspect", status: "succeeded", kind: "session_status", view: "compact" },
      { node: "quick", status: "succeeded", kind: "run-agent", agent: "general", task_id: children[0]!.id },
      { node: "after", status: "canceled", kind: "run-agent", agent: "general", reason: "the workflow was stopped before it ran" },
      { node: "wait", status: "canceled", kind: "run-agent", agent: "slow", task_id: children[1]!.id, reason: "the workflow was stopped" },
    ]);
    // The canceled agent's cost counts too: 100+40 in, 20+4 out, two turns.
    expect(v.usage).toStrictEqual(sum(children));
    expect(v.usage).toStrictEqual({ input: 140, output: 24, cost: Math.round((GENERAL_COST + 0.5) * 1e9) / 1e9, turns: 2 });
    expect(f.cm.tasks.get(id)).toMatchObject({ status: "canceled", stopReason: "enough", usage: v.usage });
    expect(f.agentRuns).toStrictEqual(["id sess-example", "hold"]);
    // The host still runs the next workflow.
    f.gate.resolve();
    const next = await f.cm.callTool("ptc_workflow", { workflow: { graph: { nodes: [{ id: "a", kind: "run-agent", params: { agent: "general", prompt: "again" } }] } } });
    expect(next.structuredContent).toMatchObject({ status: "succeeded", usage: generalUsage });
  });

  it("a foreground run is stopped when its caller is cancelled", async () => {
    const f = await fixture();
    const controller = new AbortController();
    const running = f.cm.callTool("ptc_workflow", { workflow: { graph: { nodes: [{ id: "wait", kind: "run-agent", params: { agent: "slow", prompt: "hold" } }] } } }, { signal: controller.signal });
    await f.slowStarted.promise;
    controller.abort();
    const result = await running;
    expect(result.isError).toBe(true);
    const [record] = f.cm.tasks.list().records;
    expect(record).toMatchObject({ agent: "workflow", status: "canceled", stopReason: "the calling program was cancelled" });
    expect((result.structuredContent as { error: { code: string; message: string } }).error).toStrictEqual({
      code: "workflow_failed",
      message: `workflow "workflow" (task ${record!.id}) was canceled (the calling program was cancelled): 0 of 1 nodes had succeeded; its node lines and usage stay readable with ptc_task_output({ task_id: "${record!.id}" })`,
      task_id: record!.id,
    });
    expect(record!.usage).toStrictEqual({ input: 40, output: 4, cost: 0.5, turns: 1 });
  });
});

describe("pinned views (docs/tool-contract.md#hooks-and-pinned-views)", () => {
  it("a preCall patch that changes a node's view fails the node with tool_denied / result_view_pinned; nothing downstream runs", async () => {
    const events: PreCallEvent[] = [];
    const f = await fixture({
      hooks: {
        preCall: (event) => {
          events.push(event);
          // A hook that wants the full record everywhere leaves pinned calls alone: patching a pinned view is denied.
          if (event.tool.id === "session_status") return { input: { ...event.input, result_view: event.input.result_view === "full" ? "compact" : "full" } };
        },
      },
    });
    const workflow = (view: string) => ({
      graph: {
        nodes: [
          { id: "inspect", kind: "session_status", params: { session_id: "s", ...(view ? { result_view: view } : {}) } },
          { id: "report", kind: "run-agent", params: { agent: "general", prompt: "{{ .nodes.inspect.output.session.id }}" } },
        ],
      },
    });
    for (const [view, pinned] of [
      ["", "compact"],
      ["full", "full"],
    ] as const) {
      const result = await f.cm.run(
        `try { await tools.ptc_workflow({ workflow: ${JSON.stringify(workflow(view))} }); } catch (e) { return { code: e.code, message: e.message, task_id: e.task_id, node: e.node, node_code: e.node_code, node_reason: e.node_reason }; }`,
      );
      const id = f.cm.tasks.list({ limit: 1 }).records[0]!.id;
      expect(result.structuredContent.value).toStrictEqual({
        code: "workflow_failed",
        message: `workflow "workflow" (task ${id}) failed: node "inspect" failed (tool_denied, result_view_pinned): tool "session_status" result view is pinned to "${pinned}" by the caller; 1 node was skipped; its node lines and usage stay readable with ptc_task_output({ task_id: "${id}" })`,
        task_id: id,
        node: "inspect",
        node_code: "tool_denied",
        node_reason: "result_view_pinned",
      });
      const lines = f.cm.tasks
        .output(id)
        .output.trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(lines.map(({ duration_ms: _d, ...rest }) => rest)).toStrictEqual([
        {
          node: "inspect",
          status: "failed",
          kind: "session_status",
          view: pinned,
          error: { code: "tool_denied", reason: "result_view_pinned", message: `tool "session_status" result view is pinned to "${pinned}" by the caller` },
        },
        { node: "report", status: "skipped", kind: "run-agent", agent: "general", reason: 'it depends on "inspect", which failed' },
      ]);
      expect(f.cm.tasks.get(id)).toMatchObject({ status: "failed", usage: { input: 0, output: 0, cost: 0, turns: 0 } });
      expect(f.cm.tasks.store.children(id)).toStrictEqual([]);
    }
    // The hook saw the pin on the tool reference, and the tool never ran; no agent did either.
    const seen = events
      .filter((e) => e.tool.id === "session_status")
      .map((e) => ({ input: e.input, has_result_views: e.has_result_views, pinned: e.pinned_result_view, task: e.ctx.taskId !== undefined }));
    expect(seen).toStrictEqual([
      { input: { session_id: "s" }, has_result_views: true, pinned: "compact", task: true },
      { input: { session_id: "s", result_view: "full" }, has_result_views: true, pinned: "full", task: true },
    ]);
    expect(f.calls.count).toBe(0);
    expect(f.agentRuns).toStrictEqual([]);
  });

  it("a patch adding result_view to a single-result tool's call fails the node with the single-result input error; postCall says which view a record holds", async () => {
    const post: Array<{ tool: string; result_view?: string; has_result_views: boolean }> = [];
    const f = await fixture({
      hooks: {
        preCall: (event) => (event.tool.id === "skill_view" ? { input: { ...event.input, result_view: "full" } } : undefined),
        postCall: (event) => void post.push({ tool: event.tool.id, has_result_views: event.has_result_views, ...(event.result_view ? { result_view: event.result_view } : {}) }),
      },
    });
    const workflow = {
      graph: {
        nodes: [
          { id: "inspect", kind: "session_status", params: { session_id: "s", result_view: "full" } },
          { id: "skill", kind: "skill_view", params: { skill: "x" } },
        ],
      },
    };
    const result = await f.cm.callTool("ptc_workflow", { workflow });
    const id = f.cm.tasks.list({ limit: 1 }).records[0]!.id;
    expect((result.structuredContent as { error: { code: string } }).error.code).toBe("workflow_failed");
    const lines = f.cm.tasks
      .output(id)
      .output.trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.find((l) => l.node === "skill").error).toStrictEqual({
      code: "tool_invalid_input",
      reason: "schema_invalid",
      message: 'tool "skill_view" returns a single result and does not accept "result_view"',
    });
    expect(f.calls.inputs).toStrictEqual([{ session_id: "s" }]);
    expect(post).toStrictEqual([{ tool: "session_status", has_result_views: true, result_view: "full" }]);
  });

  it("a hook that leaves the view alone is obeyed, and the record it gets is the one the node pinned", async () => {
    const f = await fixture({ hooks: { preCall: (event) => (event.tool.id === "session_status" ? { input: { ...event.input, session_id: "patched" } } : undefined) } });
    const result = await f.cm.callTool("ptc_workflow", { workflow: { graph: { nodes: [{ id: "inspect", kind: "session_status", params: { session_id: "s", result_view: "full" } }] } } });
    expect(result.structuredContent).toMatchObject({ status: "succeeded", outputs: { inspect: FULL_SESSION } });
    expect(f.calls.inputs).toStrictEqual([{ session_id: "patched" }]);
  });

  it("a run keeps the contract it pinned when the tool changes while it runs; a new run is checked against the new one", async () => {
    const gate = deferred();
    const started = deferred();
    const v1 = defineTool({
      name: "policy",
      description: "v1",
      input: z.object({}),
      views: { compact: z.object({ id: z.string() }), full: z.object({ id: z.string(), rules: z.array(z.string()) }) },
      execute: async () => {
        started.resolve();
        await gate.promise;
        return { id: "p1", rules: ["no force-push"] };
      },
    });
    const v2 = defineTool({
      name: "policy",
      description: "v2",
      input: z.object({}),
      views: { compact: z.object({ id: z.string() }), full: z.object({ id: z.string(), owner: z.string() }) },
      execute: () => ({ id: "p2", owner: "ops" }),
    });
    const host = new TaskHost({
      store: memoryTaskStore(),
      agents: new AgentRegistry({ dirs: [], agents: [{ name: "echo", description: "d", driver: "function", run: async ({ task }) => `echo ${task}` }] }),
    });
    cleanup.push(() => host.close());
    const catalog: Tool[] = [v1];
    const tool = ptcWorkflowTool({ host, tools: () => catalog, limits: { maxInFlight: 4, maxCrossingBytes: 1024 * 1024 } });
    const workflow = {
      graph: {
        nodes: [
          { id: "p", kind: "policy", params: { result_view: "full" } },
          { id: "a", kind: "run-agent", params: { agent: "echo", prompt: "{{ .nodes.p.output.rules }}" } },
        ],
      },
    };
    const ctx = { signal: new AbortController().signal, callId: "c", runId: "r", depth: 0 };
    const running = invokeTool(tool, { workflow, result_view: "full" }, { ctx });
    await started.promise;
    catalog[0] = v2;
    gate.resolve();
    const result = (await running).structuredContent as { outputs: Record<string, { text?: string }>; contract: unknown };
    expect(result.outputs.p).toStrictEqual({ id: "p1", rules: ["no force-push"] });
    expect(result.outputs.a!.text).toBe('echo ["no force-push"]');
    expect(result.contract).toStrictEqual([{ node: "p", tool: "policy", view: "full", digest: describeTool(v1).output_views!.full.digest }]);
    expect(describeTool(v2).output_views!.full.digest).not.toBe(describeTool(v1).output_views!.full.digest);
    const again = (await invokeTool(tool, { workflow, validate_only: true }, { ctx })).structuredContent as { errors: Array<{ code: string }> };
    expect(again.errors.map((e) => e.code)).toStrictEqual(["unresolvable_path"]);
  });
});

describe("scheduling", () => {
  function tickTool(stats: { active: number; max: number }): Tool {
    return defineTool({
      name: "tick",
      description: "takes a few milliseconds",
      input: z.object({ n: z.number() }),
      output: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        stats.active++;
        stats.max = Math.max(stats.max, stats.active);
        await new Promise((r) => setTimeout(r, 5));
        stats.active--;
        return { n };
      },
    });
  }
  // Four independent nodes, then one that reads a number from the last (a whole-string reference keeps its type).
  const fan = {
    graph: {
      nodes: [0, 1, 2, 3].map((n) => ({ id: `t${n}`, kind: "tick", params: { n } })).concat([{ id: "join", kind: "tick", params: { n: "{{ .nodes.t3.output.n }}" as unknown as number } }]),
      edges: [0, 1, 2].map((n) => ({ from: `t${n}`, to: "join" })),
    },
  };

  it("independent nodes run at once; dependents after; the in-flight cap holds", async () => {
    for (const [maxInFlight, expected] of [
      [16, 4],
      [1, 1],
    ] as const) {
      const stats = { active: 0, max: 0 };
      const f = await fixture({ tools: [tickTool(stats)], limits: { maxInFlight } });
      const result = await f.cm.callTool("ptc_workflow", { workflow: fan, result_view: "full" });
      expect(stats.max).toBe(expected);
      const sc = result.structuredContent as { outputs: unknown; nodes: Array<{ node: string }> };
      expect(sc.outputs).toStrictEqual({ t0: { n: 0 }, t1: { n: 1 }, t2: { n: 2 }, t3: { n: 3 }, join: { n: 3 } });
      expect(sc.nodes.at(-1)!.node).toBe("join");
    }
  });

  it("agent nodes run at once within the host's running cap", async () => {
    const stats = { active: 0, max: 0 };
    const f = await fixture({
      tasks: { maxRunning: 2 },
      extraAgents: [
        {
          name: "busy",
          description: "takes a few milliseconds",
          driver: "function",
          run: async ({ task }) => {
            stats.active++;
            stats.max = Math.max(stats.max, stats.active);
            await new Promise((r) => setTimeout(r, 5));
            stats.active--;
            return `done ${task}`;
          },
        },
      ],
    });
    const workflow = { graph: { nodes: [1, 2, 3, 4].map((n) => ({ id: `a${n}`, kind: "run-agent", params: { agent: "busy", prompt: String(n) } })) } };
    const result = await f.cm.callTool("ptc_workflow", { workflow });
    expect(result.structuredContent).toMatchObject({ status: "succeeded" });
    expect(stats.max).toBe(2);
  });

  it("a failed agent node skips what depends on it, independent nodes still run, and what it cost is counted", async () => {
    const f = await fixture();
    const workflow = {
      graph: {
        nodes: [
          { id: "a", kind: "run-agent", params: { agent: "failing", prompt: "try" } },
          { id: "b", kind: "run-agent", params: { agent: "general", prompt: "independent" } },
          { id: "c", kind: "run-agent", params: { agent: "general", prompt: "{{ .nodes.a.output.text }}" } },
        ],
      },
    };
    const result = await f.cm.callTool("ptc_workflow", { workflow });
    const id = f.cm.tasks.list().records[0]!.id;
    const children = f.cm.tasks.store.children(id);
    const failed = children.find((c) => c.agent === "failing")!;
    expect(result.structuredContent).toStrictEqual({
      error: {
        code: "workflow_failed",
        message: `workflow "workflow" (task ${id}) failed: node "a" failed (task_failed): subagent task ${failed.id} (agent "failing") failed: the disk is full; its output and usage stay readable with ptc_task_output({ task_id: "${failed.id}" }); 1 node was skipped; its node lines and usage stay readable with ptc_task_output({ task_id: "${id}" })`,
        // The rejection's fields travel in the structured error too: no id has to be parsed from prose.
        task_id: id,
        node: "a",
        node_code: "task_failed",
      },
    });
    expect(f.agentRuns.sort()).toStrictEqual(["independent", "try"]);
    expect(f.cm.tasks.get(id)).toMatchObject({ status: "failed", usage: sum(children) });
    expect(sum(children)).toStrictEqual({ input: 107, output: 23, cost: Math.round((0.25 + GENERAL_COST) * 1e9) / 1e9, turns: 2 });
  });

  it("a background agent node hands its task to the next node; the workflow ends when that task does, counting it", async () => {
    const f = await fixture();
    const workflow = {
      graph: {
        nodes: [
          { id: "bg", kind: "run-agent", params: { agent: "slow", prompt: "in the background", background: true } },
          { id: "peek", kind: "ptc_task_output", params: { task_id: "{{ .nodes.bg.output.task_id }}" } },
        ],
      },
    };
    const started = await f.cm.callTool("ptc_workflow", { workflow, background: true });
    const id = (started.structuredContent as { task_id: string }).task_id;
    await f.slowStarted.promise;
    while (!f.cm.tasks.output(id).output.includes('"node":"peek"')) await new Promise((r) => setTimeout(r, 5));
    expect(f.cm.tasks.get(id)!.status).toBe("running");
    f.gate.resolve();
    const final = await f.cm.tasks.wait(id);
    const [child] = f.cm.tasks.store.children(id);
    const lines = f.cm.tasks
      .output(id)
      .output.trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines[0].output).toStrictEqual({ task_id: child!.id, status: "running" });
    expect(lines[1].output).toMatchObject({ task_id: child!.id, status: "running", output: "working\n" });
    expect(final).toMatchObject({ status: "succeeded", usage: { input: 40, output: 4, cost: 0.5, turns: 1 } });
    expect(child).toMatchObject({ status: "succeeded", parentId: id, usage: final.usage });
  });

  it("a missing field at run time resolves to an empty value", async () => {
    const f = await fixture();
    const workflow = seedFull("[{{ .nodes.inspect.output.session.diagnostics.not_there }}] {{ .nodes.inspect.output.session.diagnostics.notes }}");
    const result = await f.cm.callTool("ptc_workflow", { workflow });
    expect(result.structuredContent).toMatchObject({ status: "succeeded", warnings: [{ code: "unproven_path" }, { code: "unproven_path" }] });
    expect(f.agentRuns).toStrictEqual(['[] ["warm"]']);
  });

  it("a node whose output is larger than one value may be fails with node_output_too_large; the next run works", async () => {
    const big = defineTool({ name: "big", description: "d", input: z.object({ n: z.number() }), output: z.object({ text: z.string() }), execute: ({ n }) => ({ text: "x".repeat(n) }) });
    const f = await fixture({ tools: [big], limits: { maxCrossingBytes: 1024 } });
    const failed = await f.cm.callTool("ptc_workflow", { workflow: { graph: { nodes: [{ id: "big", kind: "big", params: { n: 2000 } }] } } });
    expect((failed.structuredContent as { error: { message: string } }).error.message).toContain(
      'node "big" failed (node_output_too_large): node "big" returned 2.0 KiB of JSON; a node\'s output is limited to 1.0 KiB (limits.maxCrossingBytes)',
    );
    const ok = await f.cm.callTool("ptc_workflow", { workflow: { graph: { nodes: [{ id: "big", kind: "big", params: { n: 10 } }] } } });
    expect(ok.structuredContent).toMatchObject({ status: "succeeded", outputs: { big: { text: "xxxxxxxxxx" } } });
  });

  it("a tool whose own input is named result_view (an upstream tool, say) gets it like any param, templates rendered", async () => {
    const plain = { name: "echo_input", description: "echoes its input", execute: (input: Record<string, unknown>) => JSON.stringify(input) };
    const f = await fixture({ tools: [plain] });
    const workflow = { inputs: { v: { default: "everything" } }, graph: { nodes: [{ id: "e", kind: "echo_input", params: { result_view: "{{ .inputs.v }}" } }] } };
    const result = await f.cm.callTool("ptc_workflow", { workflow });
    expect(result.structuredContent).toMatchObject({ status: "succeeded", outputs: { e: '{"result_view":"everything"}' } });
  });

  it("hostile ids and keys stay plain data: __proto__ is no id, a reference to constructor finds nothing", async () => {
    const f = await fixture();
    const refused = await f.cm.callTool("ptc_workflow", { workflow: seedFull("x").replace(/inspect/g, "__proto__"), validate_only: true });
    expect((refused.structuredContent as { errors: unknown[] }).errors).toStrictEqual([
      {
        code: "invalid_definition",
        node: "__proto__",
        path: "graph.nodes[0].id",
        line: 3,
        message: 'node id "__proto__" is reserved (it would not survive as a key of the outputs); choose another id',
      },
    ]);
    const result = await f.cm.callTool("ptc_workflow", {
      workflow: seedFull("{{ .nodes.inspect.output.session.diagnostics.constructor }}|{{ .nodes.inspect.output.session.diagnostics.__proto__ }}|{{ .nodes.inspect.output.session.id }}"),
    });
    const outputs = (result.structuredContent as { outputs: Record<string, unknown> }).outputs;
    expect(Object.keys(outputs)).toStrictEqual(["inspect", "report"]);
    expect(f.agentRuns).toStrictEqual(["||sess-example"]);
  });
});

function seedFull(prompt: string): string {
  return `graph:
  nodes:
    - id: inspect
      kind: session_status
      params: { session_id: s, result_view: full }
    - id: report
      kind: run-agent
      params: { agent: general, prompt: ${JSON.stringify(prompt)} }
`;
}

describe("the task store keeps workflows", () => {
  const node = process.execPath;
  const dist = join(import.meta.dirname, "..", "..", "dist", "src", "index.js");

  it("a finished workflow's record, node lines and usage outlive the host", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wf-store-"));
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const first = await openFixture({ dataDir });
    const run = await first.cm.callTool("ptc_workflow", { workflow: seedFull("{{ .nodes.inspect.output.session.name }}") });
    const id = (run.structuredContent as { task_id: string }).task_id;
    await first.cm.close();
    const second = await fixture({ dataDir });
    const listed = await second.cm.callTool("ptc_task_list", { result_view: "full" });
    const row = (listed.structuredContent!.tasks as Array<Record<string, unknown>>).find((t) => t.id === id)!;
    expect(row).toMatchObject({ agent: "workflow", driver: "workflow", status: "succeeded", usage: generalUsage });
    const page = await second.cm.callTool("ptc_task_output", { task_id: id });
    expect(
      (page.structuredContent!.output as string)
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l).node),
    ).toStrictEqual(["inspect", "report"]);
  });

  it("a workflow whose host dies is marked lost by the next host, with its running agent", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "wf-lost-"));
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const script = join(dataDir, "host.mjs");
    writeFileSync(
      script,
      `import { createCodemode } from ${JSON.stringify(dist)};
const cm = await createCodemode({ dataDir: ${JSON.stringify(dataDir)}, agentDirs: [], workers: { min: 0 },
  agents: [{ name: "hang", description: "never ends", driver: "function", run: async ({ emit }) => { emit({ type: "text", text: "started\\n" }); await new Promise(() => {}); } }] });
const r = await cm.callTool("ptc_workflow", { workflow: { graph: { nodes: [{ id: "h", kind: "run-agent", params: { agent: "hang", prompt: "hang" } }] } }, background: true });
const id = r.structuredContent.task_id;
while (cm.tasks.store.children(id).length === 0) await new Promise((ok) => setTimeout(ok, 5));
process.stdout.write(id + "\\n");
setInterval(() => {}, 1000);
`,
    );
    const child = spawn(node, [script], { stdio: ["ignore", "pipe", "inherit"] });
    const id = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) resolve(out.trim());
      });
      child.on("exit", (code) => reject(new Error(`the host exited early (${code})`)));
    });
    expect(id).toMatch(ULID);
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    const next = await fixture({ dataDir });
    const record = next.cm.tasks.get(id)!;
    expect(record).toMatchObject({ agent: "workflow", driver: "workflow", status: "lost", lostReason: "host_exited_while_running" });
    expect(Object.hasOwn(record, "usage")).toBe(false);
    expect(next.cm.tasks.store.children(id).map((c) => [c.agent, c.status, c.lostReason])).toStrictEqual([["hang", "lost", "host_exited_while_running"]]);
  });
});
