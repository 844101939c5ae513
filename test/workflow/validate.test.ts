// The validation rules of docs/workflows.md#validation, each with its exact code and message, each proving that
// nothing ran: no tool executed, no agent ran, no task was created.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createCodemode, defineTool, describeTool } from "../../src/index.js";
import { expectNothingRan, openFixture, SEED_REQUIRES_FULL, seedWorkflow, validateOnly, type Fixture } from "./helpers.js";

let f: Fixture;
beforeAll(async () => {
  const note = defineTool({ name: "note", description: "a text tool", input: z.object({}), execute: () => "plain text" });
  f = await openFixture({ tools: [note] });
});
afterAll(async () => {
  await f.cm.close();
});

const error = (code: string, message: string, at: { node?: string; path?: string; line?: number } = {}) => ({ code, ...at, message });

describe("a reference into the compact view stops the workflow before start", () => {
  it("without result_view: full, result_view_field_requires_full, naming the tool as its descriptor does", async () => {
    expect(await validateOnly(f.cm, seedWorkflow())).toStrictEqual({
      valid: false,
      errors: [error("result_view_field_requires_full", SEED_REQUIRES_FULL, { node: "report", path: "graph.nodes[1].params.prompt", line: 15 })],
      warnings: [],
    });
    expectNothingRan(f);
  });

  it("a run is refused the same way: it rejects with every problem, and nothing runs", async () => {
    const result = await f.cm.run(`
      try { await tools.ptc_workflow({ workflow: ${JSON.stringify(seedWorkflow())}, inputs: { session_id: "sess-example" } }); }
      catch (e) { return { name: e.name, code: e.code, message: e.message }; }`);
    expect(result.structuredContent.value).toStrictEqual({
      name: "ToolError",
      code: "workflow_invalid",
      message: `the workflow is invalid (1 problem); nothing ran:\n\nerror: result_view_field_requires_full\n${SEED_REQUIRES_FULL}\n  at line 15`,
    });
    expectNothingRan(f);
  });

  it("with result_view: full it is valid, and the contract it would pin is the full view's digest", async () => {
    const workflow = seedWorkflow("        result_view: full\n");
    expect(await validateOnly(f.cm, workflow)).toStrictEqual({ valid: true, errors: [], warnings: [] });
    const full = await f.cm.callTool("ptc_workflow", { workflow, validate_only: true, result_view: "full" });
    const digest = describeTool(f.cm.toolList().find((t) => t.id === "session_status")!).output_views!.full.digest;
    expect(full.structuredContent).toStrictEqual({ valid: true, errors: [], warnings: [], contract: [{ node: "inspect", tool: "session_status", view: "full", digest }] });
    expectNothingRan(f);
  });

  it("result_view must be a literal: a template (or any other value) is result_view_not_literal", async () => {
    for (const value of ['"{{ .inputs.view }}"', "medium", "true"]) {
      const workflow = seedWorkflow(`        result_view: ${value}\n`).replace("  session_id: {}\n", "  session_id: {}\n  view: { default: full }\n");
      expect(await validateOnly(f.cm, workflow)).toStrictEqual({
        valid: false,
        errors: [error("result_view_not_literal", 'node "inspect" params.result_view must be a literal "compact" or "full"', { node: "inspect", path: "graph.nodes[0].params.result_view", line: 11 })],
        warnings: [],
      });
    }
    expectNothingRan(f);
  });

  it("a path neither view has is unresolvable_path, saying which segment is missing", async () => {
    const deep = seedWorkflow("        result_view: full\n", "{{ .nodes.inspect.output.session.lineage.policy }}");
    const top = seedWorkflow("", "{{ .nodes.inspect.output.sessions.id }}");
    expect(await validateOnly(f.cm, deep)).toStrictEqual({
      valid: false,
      errors: [
        error(
          "unresolvable_path",
          'node "report" reads nodes.inspect.output.session.lineage.policy, which neither the compact nor the full result of session_status has: session.lineage has no field "policy"; check the field names with tool_info({ tool_id: "session_status" })',
          { node: "report", path: "graph.nodes[1].params.prompt", line: 16 },
        ),
      ],
      warnings: [],
    });
    expect(((await validateOnly(f.cm, top)).errors as unknown[])[0]).toStrictEqual(
      error(
        "unresolvable_path",
        'node "report" reads nodes.inspect.output.sessions.id, which neither the compact nor the full result of session_status has: its result has no field "sessions" (it has session); check the field names with tool_info({ tool_id: "session_status" })',
        { node: "report", path: "graph.nodes[1].params.prompt", line: 15 },
      ),
    );
    expectNothingRan(f);
  });

  it("with result_view: full, a path into an open part of the full schema is accepted with a warning that it cannot be proven", async () => {
    const open = seedWorkflow("        result_view: full\n", "{{ .nodes.inspect.output.session.diagnostics.last_heartbeat_ms }}");
    expect(await validateOnly(f.cm, open)).toStrictEqual({
      valid: true,
      errors: [],
      warnings: [
        error(
          "unproven_path",
          'node "report" reads nodes.inspect.output.session.diagnostics.last_heartbeat_ms, which the full schema of session_status leaves open at session.diagnostics: the path cannot be proven, and a field missing at run time resolves to an empty value; check the name against a real result',
          { node: "report", path: "graph.nodes[1].params.prompt", line: 16 },
        ),
      ],
    });
    // The same path without full: only the full view can hold it.
    const compact = await validateOnly(f.cm, open.replace("        result_view: full\n", ""));
    expect((compact.errors as Array<{ code: string }>).map((e) => e.code)).toEqual(["result_view_field_requires_full"]);
    expectNothingRan(f);
  });

  it("a tool node's own produces follows the same rules: a full-only field needs full, a field neither view has is unresolvable", async () => {
    const workflow = seedWorkflow("      produces: [session.id, session.lineage.permission_policy.tools, session.nope, 'a..b']\n", "{{ .nodes.inspect.output.session.id }}");
    expect(await validateOnly(f.cm, workflow)).toStrictEqual({
      valid: false,
      errors: [
        error(
          "result_view_field_requires_full",
          'node "inspect" produces session.lineage.permission_policy.tools, which the compact result of session_status does not include; fix: add `result_view: full` to the params of node "inspect"',
          { node: "inspect", path: "graph.nodes[0].produces[1]", line: 10 },
        ),
        error(
          "unresolvable_path",
          'node "inspect" produces session.nope, which neither the compact nor the full result of session_status has: session has no field "nope"; check the field names with tool_info({ tool_id: "session_status" })',
          { node: "inspect", path: "graph.nodes[0].produces[2]", line: 10 },
        ),
        error("invalid_definition", 'node "inspect" produces "a..b", which is not a field path; write it like session.lineage.permission_policy.tools or tasks[0].id', {
          node: "inspect",
          path: "graph.nodes[0].produces[3]",
          line: 10,
        }),
      ],
      warnings: [],
    });
    expect(
      await validateOnly(
        f.cm,
        workflow.replace(
          "      produces: [session.id, session.lineage.permission_policy.tools, session.nope, 'a..b']\n",
          "        result_view: full\n      produces: [session.lineage.permission_policy.tools]\n",
        ),
      ),
    ).toStrictEqual({
      valid: true,
      errors: [],
      warnings: [],
    });
    expectNothingRan(f);
  });

  it("result_view on a single-result tool is the tool's own input error, found before start", async () => {
    const workflow = { graph: { nodes: [{ id: "skill", kind: "skill_view", params: { skill: "x", result_view: "full" } }] } };
    expect(await validateOnly(f.cm, workflow)).toStrictEqual({
      valid: false,
      errors: [error("tool_invalid_input", 'tool "skill_view" returns a single result and does not accept "result_view"', { node: "skill", path: "graph.nodes[0].params.result_view" })],
      warnings: [],
    });
    expectNothingRan(f);
  });
});

describe("what a user expects validation to catch", () => {
  it("an unknown tool names the closest tools", async () => {
    const workflow = seedWorkflow().replace("kind: session_status", "kind: sesion_status");
    expect((await validateOnly(f.cm, workflow)).errors).toStrictEqual([
      error("unknown_tool", 'node "inspect" kind "sesion_status" is neither a tool nor "run-agent"; closest tools: "session_status", "tool_search", "skill_view"', {
        node: "inspect",
        path: "graph.nodes[0].kind",
        line: 7,
      }),
    ]);
    expectNothingRan(f);
  });

  it("an unknown agent names the known ones; an agent must be a literal", async () => {
    const unknown = seedWorkflow("        result_view: full\n").replace("agent: general", "agent: genral");
    expect((await validateOnly(f.cm, unknown)).errors).toStrictEqual([
      error(
        "unknown_agent",
        'node "report" params.agent: unknown agent "genral"; known agents: failing, general, slow (loaded from code). Use one of them, or add genral.md to one of those directories',
        { node: "report", path: "graph.nodes[1].params.agent", line: 15 },
      ),
    ]);
    const templated = seedWorkflow("        result_view: full\n").replace("agent: general", 'agent: "{{ .inputs.session_id }}"');
    expect((await validateOnly(f.cm, templated)).errors).toStrictEqual([
      error("invalid_params", 'node "report" params.agent must be a literal agent name, not a template, so it can be checked before the workflow starts', {
        node: "report",
        path: "graph.nodes[1].params.agent",
        line: 15,
      }),
    ]);
    const shape = { graph: { nodes: [{ id: "a", kind: "run-agent", params: { agent: "general", task: "x", background: "yes" } }] } };
    expect((await validateOnly(f.cm, shape)).errors).toStrictEqual([
      error("invalid_params", 'node "a" params.task is not a run-agent param; it takes agent, prompt, background, label, model', { node: "a", path: "graph.nodes[0].params.task" }),
      error("invalid_params", 'node "a" params.prompt is required: the task for the agent (templates allowed)', { node: "a", path: "graph.nodes[0].params.prompt" }),
      error("invalid_params", 'node "a" params.background must be true or false (a literal)', { node: "a", path: "graph.nodes[0].params.background" }),
    ]);
    expectNothingRan(f);
  });

  it("duplicate ids, and edges naming nodes that do not exist", async () => {
    const workflow = {
      graph: {
        nodes: [
          { id: "a", kind: "skill_view", params: { skill: "x" } },
          { id: "b", kind: "skill_view", params: { skill: "y" } },
          { id: "a", kind: "skill_view", params: { skill: "z" } },
        ],
        edges: [
          { from: "a", to: "bb" },
          { from: "c", to: "b" },
        ],
      },
    };
    expect((await validateOnly(f.cm, workflow)).errors).toStrictEqual([
      error("duplicate_node_id", 'node id "a" is used by graph.nodes[0] and graph.nodes[2]; give each node a unique id', { node: "a", path: "graph.nodes[2].id" }),
      error("unknown_node", 'graph.edges[0].to names node "bb", which does not exist; closest: "b", "a"', { path: "graph.edges[0].to" }),
      error("unknown_node", 'graph.edges[1].from names node "c", which does not exist; closest: "a", "b"', { path: "graph.edges[1].from" }),
    ]);
    expectNothingRan(f);
  });

  it("cycles are named, through edges and references alike; a node reading itself is one too", async () => {
    const node = (id: string, reads?: string) => ({ id, kind: "run-agent", params: { agent: "general", prompt: reads ? `after {{ .nodes.${reads}.output.text }}` : "go" } });
    const workflow = {
      graph: {
        nodes: [node("start"), node("a", "c"), node("b"), node("c"), node("self", "self")],
        edges: [
          { from: "start", to: "a" },
          { from: "a", to: "b" },
          { from: "b", to: "c" },
        ],
      },
    };
    expect((await validateOnly(f.cm, workflow)).errors).toStrictEqual([
      error("cycle", "the graph has a cycle: a → b → c → a (each must finish before the next starts, through edges or {{ .nodes.<id>.output }} references); remove one of these dependencies", {
        node: "a",
        path: "graph",
      }),
      error("cycle", 'node "self" depends on itself (self → self): a node cannot read its own output or have an edge to itself', { node: "self", path: "graph" }),
    ]);
    expectNothingRan(f);
  });

  it("literal params are checked against the tool's own input schema, with the tool's own message; templated ones wait for the run", async () => {
    const workflow = {
      inputs: { id: {} },
      graph: {
        nodes: [
          { id: "wrong", kind: "session_status", params: { session_id: 42 } },
          { id: "missing", kind: "skill_view", params: { max_lines: -1 } },
          { id: "templated", kind: "session_status", params: { session_id: "{{ .inputs.id }}" } },
        ],
      },
    };
    expect((await validateOnly(f.cm, workflow)).errors).toStrictEqual([
      error("tool_invalid_input", 'tool "session_status" input "session_id" must be string, received number', { node: "wrong", path: "graph.nodes[0].params" }),
      error(
        "tool_invalid_input",
        'tool "skill_view" input "skill" is required: expected string, received undefined; tool "skill_view" input "max_lines" is invalid: Too small: expected number to be >0',
        { node: "missing", path: "graph.nodes[1].params" },
      ),
    ]);
    expectNothingRan(f);
  });

  it("a template error is reported at the offending template and character", async () => {
    const workflow = seedWorkflow("        result_view: full\n", "a {{ .nodes.inspect.outpt.session }} b");
    expect((await validateOnly(f.cm, workflow)).errors).toStrictEqual([
      error(
        "template_invalid",
        'node "report" params.prompt: template {{ .nodes.inspect.outpt.session }} at character 20: expected ".output" after ".nodes.inspect", as in {{ .nodes.inspect.output.<path> }}',
        { node: "report", path: "graph.nodes[1].params.prompt", line: 16 },
      ),
    ]);
    const unclosed = { graph: { nodes: [{ id: "a", kind: "run-agent", params: { agent: "general", prompt: "see {{ .inputs.x" } }] } };
    expect((await validateOnly(f.cm, unclosed)).errors).toStrictEqual([
      error("template_invalid", 'node "a" params.prompt: template {{ .inputs.x at character 5: "{{" is not closed with "}}"', { node: "a", path: "graph.nodes[0].params.prompt" }),
    ]);
    expectNothingRan(f);
  });

  it("inputs: a reference to an undeclared input; a run without a required value or with an unknown one", async () => {
    const undeclared = seedWorkflow("        result_view: full\n").replace('"{{ .inputs.session_id }}"', '"{{ .inputs.sesion_id }}"');
    expect((await validateOnly(f.cm, undeclared)).errors).toStrictEqual([
      error("unknown_input", 'node "inspect" reads inputs.sesion_id, which the workflow does not declare; its inputs are session_id: add "sesion_id" under "inputs"', {
        node: "inspect",
        path: "graph.nodes[0].params.session_id",
        line: 9,
      }),
    ]);
    const workflow = seedWorkflow("        result_view: full\n");
    expect((await validateOnly(f.cm, workflow, { inputs: { sesion_id: "x" } })).errors).toStrictEqual([
      error("unknown_input", "inputs.sesion_id is not an input of this workflow; its inputs are session_id", { path: "inputs.sesion_id", line: 2 }),
      error("missing_input", 'input "session_id" has no value and no default; pass it in inputs (CLI: --input session_id=…)', { path: "inputs.session_id", line: 2 }),
    ]);
    const run = await f.cm.callTool("ptc_workflow", { workflow });
    expect(run.isError).toBe(true);
    expect(run.structuredContent).toStrictEqual({
      error: {
        code: "workflow_invalid",
        message:
          'the workflow is invalid (1 problem); nothing ran:\n\nerror: missing_input\ninput "session_id" has no value and no default; pass it in inputs (CLI: --input session_id=…)\n  at line 2',
      },
    });
    expectNothingRan(f);
  });

  it("the definition's own shape: YAML syntax (with its line), unknown fields, wrong types, an empty graph", async () => {
    expect(await validateOnly(f.cm, "graph:\n  nodes: [\n")).toStrictEqual({
      valid: false,
      errors: [error("invalid_definition", "the workflow is not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 3, column 1", { line: 3 })],
      warnings: [],
    });
    const shape = "name: 7\ngrpah: {}\ngraph:\n  nodes:\n    - id: 1bad\n      class: gate\n      kind: ''\n      extra: x\n    - just a string\n  edges: {}\n";
    expect((await validateOnly(f.cm, shape)).errors).toStrictEqual([
      error("invalid_definition", 'unknown field "grpah"; a workflow has "name", "description", "inputs", "graph"', { path: "grpah", line: 2 }),
      error("invalid_definition", '"name" must be a string, received the number 7', { path: "name", line: 1 }),
      error("invalid_definition", 'unknown field "extra" of node "1bad"; a node has "id", "class", "kind", "params", "produces"', { node: "1bad", path: "graph.nodes[0].extra", line: 8 }),
      error("invalid_definition", 'node id "1bad" must be 1–64 letters, digits, "_" or "-", starting with a letter or "_" (templates read it as {{ .nodes.<id>.output }})', {
        node: "1bad",
        path: "graph.nodes[0].id",
        line: 5,
      }),
      error("invalid_definition", 'node "1bad" has class the string "gate"; the only node class is "action"', { node: "1bad", path: "graph.nodes[0].class", line: 6 }),
      error("invalid_definition", 'node "1bad" needs a "kind": a tool id (e.g. read_file) or "run-agent", received the string ""', { node: "1bad", path: "graph.nodes[0].kind", line: 7 }),
      error("invalid_definition", 'graph.nodes[1] must be a mapping { id, class: action, kind, params }, received the string "just a string"', { path: "graph.nodes[1]", line: 9 }),
      error("invalid_definition", '"graph.edges" must be a list of { from, to }, received a mapping', { path: "graph.edges", line: 10 }),
    ]);
    expect((await validateOnly(f.cm, "graph: { nodes: [] }")).errors).toStrictEqual([
      error("invalid_definition", '"graph.nodes" must be a non-empty list of nodes { id, class: action, kind, params }, received a list', { path: "graph.nodes", line: 1 }),
    ]);
    expect((await validateOnly(f.cm, "- a list")).errors).toStrictEqual([
      error("invalid_definition", 'a workflow must be a mapping with "graph" (and optionally "name", "description", "inputs"), received a list', { line: 1 }),
    ]);
    expectNothingRan(f);
  });

  it("a reference into a tool that declares no output schema is unresolvable: its result is text", async () => {
    const workflow = {
      graph: {
        nodes: [
          { id: "n", kind: "note" },
          { id: "a", kind: "run-agent", params: { agent: "general", prompt: "{{ .nodes.n.output.title }} / {{ .nodes.n.output }}" } },
        ],
      },
    };
    expect((await validateOnly(f.cm, workflow)).errors).toStrictEqual([
      error(
        "unresolvable_path",
        'node "a" reads nodes.n.output.title, but note declares no output schema, so nothing declares the fields of its result (the value its execute returned); read the whole value with {{ .nodes.n.output }}',
        { node: "a", path: "graph.nodes[1].params.prompt" },
      ),
    ]);
    expectNothingRan(f);
  });

  it("every problem at once, in one answer", async () => {
    const workflow = `inputs:
  session_id: {}
graph:
  nodes:
    - id: inspect
      kind: session_status
      params: { session_id: "{{ .inputs.session_id }}", result_view: "{{ .inputs.session_id }}" }
    - id: report
      kind: run-agent
      params: { agent: nobody, prompt: "{{ .nodes.inspect.output.session.lineage.permission_policy.tools }} {{ .nodes.ghost.output.x }}" }
    - id: skill
      kind: skill_view
      params: { skill: 3, result_view: full }
    - id: report
      kind: run-agent
      params: { agent: general, prompt: x }
  edges:
    - { from: skill, to: skill }
`;
    const result = await validateOnly(f.cm, workflow);
    // In the order of the definition, whatever order the checks ran in.
    expect((result.errors as Array<{ code: string; node?: string; line?: number }>).map((e) => `${e.line} ${e.code} ${e.node ?? ""}`.trim())).toEqual([
      "7 result_view_not_literal inspect",
      "10 unknown_node report",
      "10 unknown_agent report",
      "13 tool_invalid_input skill",
      "13 tool_invalid_input skill",
      "14 duplicate_node_id report",
      "4 cycle skill",
    ]);
    expectNothingRan(f);
  });

  it("a workflow whose agents would nest too deep is refused before start", async () => {
    const shallow = await createCodemode({ agents: [{ name: "general", description: "d", driver: "function", run: async () => "x" }], agentDirs: [], tasks: { maxDepth: 1 }, workers: { min: 0 } });
    try {
      const workflow = { graph: { nodes: [{ id: "a", kind: "run-agent", params: { agent: "general", prompt: "go" } }] } };
      expect((await validateOnly(shallow, workflow)).errors).toStrictEqual([
        error(
          "task_depth_exceeded",
          'node "a" would spawn a subagent at depth 2, but subagents nest at most 1 deep and this workflow runs at depth 1; run the workflow from a shallower program, or do this work in a tool node',
          { node: "a", path: "graph.nodes[0].kind" },
        ),
      ]);
      expect(shallow.tasks.list().total).toBe(0);
    } finally {
      await shallow.close();
    }
  });

  it("a definition past the size, node or edge caps, or a YAML alias bomb, is refused; the next validation works", async () => {
    const huge = "# " + "x".repeat(1024 * 1024) + "\ngraph: {}\n";
    expect((await validateOnly(f.cm, huge)).errors).toStrictEqual([error("invalid_definition", "the workflow is 1.0 MiB; a definition is at most 1.0 MiB")]);
    const many = { graph: { nodes: Array.from({ length: 1001 }, (_, i) => ({ id: `n${i}`, kind: "skill_view", params: { skill: "x" } })) } };
    expect((await validateOnly(f.cm, many)).errors).toStrictEqual([error("invalid_definition", '"graph.nodes" lists 1001 nodes; a workflow has at most 1000', { path: "graph.nodes" })]);
    const edges = { graph: { nodes: [{ id: "a", kind: "skill_view", params: { skill: "x" } }], edges: Array.from({ length: 10_001 }, () => ({ from: "a", to: "a" })) } };
    expect((await validateOnly(f.cm, edges)).errors).toStrictEqual([error("invalid_definition", '"graph.edges" lists 10001 edges; a workflow has at most 10000', { path: "graph.edges" })]);
    // A YAML alias bomb (9^9 strings once expanded) is refused by the parser's alias budget.
    let bomb = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n";
    let prev = "a";
    for (const name of ["b", "c", "d", "e", "f", "g", "h", "i"]) {
      bomb += `${name}: &${name} [${Array(9).fill(`*${prev}`).join(",")}]\n`;
      prev = name;
    }
    expect((await validateOnly(f.cm, bomb)).errors).toStrictEqual([
      error("invalid_definition", "the workflow is not valid YAML: Excessive alias count indicates a resource exhaustion attack", { line: 1 }),
    ]);
    const chain = { graph: { nodes: Array.from({ length: 1000 }, (_, i) => ({ id: `n${i}`, kind: "skill_view", params: { skill: i === 0 ? "x" : `{{ .nodes.n${i - 1}.output.name }}` } })) } };
    expect(await validateOnly(f.cm, chain)).toStrictEqual({ valid: true, errors: [], warnings: [] });
    expectNothingRan(f);
  });
});
