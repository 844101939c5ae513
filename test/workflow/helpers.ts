// A runtime for workflow tests: a session_status tool (a real tool with views) and
// skill_view (a single-result tool), function agents that count their runs and report usage,
// and a way to prove that nothing ran.
import { expect } from "vitest";
import { createCodemode, type Codemode, type CodemodeOptions } from "../../src/index.js";
import type { AgentInput } from "../../src/tasks/index.js";
import { newCalls, sessionStatusTool, skillViewTool, type Calls } from "../tools/sample-tools.js";

export interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

export function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

export interface Fixture {
  cm: Codemode;
  calls: Calls;
  /** Tasks each agent was given, in the order the agents ran. */
  agentRuns: string[];
  /** Released by a test to let the `slow` agent finish. */
  gate: Deferred;
  /** Resolves once the `slow` agent has started. */
  slowStarted: Deferred;
}

/** general: 100 in / 20 out tokens and one turn per run, priced at $2 / $10 per million tokens. */
export const GENERAL_COST = (100 * 2 + 20 * 10) / 1_000_000;

export async function openFixture(options: Partial<CodemodeOptions> & { extraAgents?: AgentInput[] } = {}): Promise<Fixture> {
  const calls = newCalls();
  const agentRuns: string[] = [];
  const fixture = { calls, agentRuns, gate: deferred(), slowStarted: deferred() } as Fixture;
  const agents: AgentInput[] = [
    {
      name: "general",
      description: "answers from its task",
      driver: "function",
      prices: { input: 2, output: 10 },
      run: async ({ task, emit }) => {
        agentRuns.push(task);
        emit({ type: "turn" });
        emit({ type: "usage", input: 100, output: 20 });
        return `general: ${task}`;
      },
    },
    {
      name: "slow",
      description: "waits until the test releases it (or it is stopped)",
      driver: "function",
      run: async ({ task, emit, signal }) => {
        agentRuns.push(task);
        emit({ type: "turn" });
        emit({ type: "usage", input: 40, output: 4, cost: 0.5 });
        emit({ type: "text", text: "working\n" });
        fixture.slowStarted.resolve();
        await Promise.race([fixture.gate.promise, new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("stopped"))))]);
        return `slow: ${task}`;
      },
    },
    {
      name: "failing",
      description: "costs something, then fails",
      driver: "function",
      run: async ({ task, emit }) => {
        agentRuns.push(task);
        emit({ type: "turn" });
        emit({ type: "usage", input: 7, output: 3, cost: 0.25 });
        throw new Error("the disk is full");
      },
    },
    ...(options.extraAgents ?? []),
  ];
  const { extraAgents: _extra, ...rest } = options;
  fixture.cm = await createCodemode({
    tools: [sessionStatusTool(calls), skillViewTool(calls), ...(rest.tools ?? [])],
    agents,
    agentDirs: [],
    tasks: { killGraceMs: 100, ...rest.tasks },
    workers: { min: 0, max: 2 },
    ...Object.fromEntries(Object.entries(rest).filter(([key]) => key !== "tools" && key !== "tasks")),
  });
  return fixture;
}

/** No tool executed, no task was created, no agent ran. */
export function expectNothingRan(f: Fixture): void {
  expect(f.calls.count).toBe(0);
  expect(f.agentRuns).toEqual([]);
  expect(f.cm.tasks.list().total).toBe(0);
}

/** `ptc_workflow({ validate_only: true })` through cm.callTool: the compact result, checked to survive JSON. */
export async function validateOnly(cm: Codemode, workflow: unknown, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const result = await cm.callTool("ptc_workflow", { workflow, validate_only: true, ...extra });
  expect(result.isError).toBeUndefined();
  expect(JSON.parse(JSON.stringify(result.structuredContent))).toStrictEqual(result.structuredContent);
  return result.structuredContent!;
}

/** The review loop of docs/workflows.md: inspect reads a session, report prompts an agent with a field of it. */
export function seedWorkflow(inspectExtra = "", prompt = "Tools allowed: {{ .nodes.inspect.output.session.lineage.permission_policy.tools }}"): string {
  return `inputs:
  session_id: {}
graph:
  nodes:
    - id: inspect
      class: action
      kind: session_status
      params:
        session_id: "{{ .inputs.session_id }}"
${inspectExtra}    - id: report
      class: action
      kind: run-agent
      params:
        agent: general
        prompt: "${prompt}"
  edges:
    - from: inspect
      to: report
`;
}

export const SEED_REQUIRES_FULL =
  'node "report" reads nodes.inspect.output.session.lineage.permission_policy.tools, which the compact result of session_status does not include; fix: add `result_view: full` to the params of node "inspect"';
