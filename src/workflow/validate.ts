// Validation before anything runs (docs/workflows.md#validation): every problem of a workflow at once —
// its shape, its templates, the tools and agents its nodes name, its graph, and each reference
// `{{ .nodes.<id>.output.<path> }}` checked against the view the source node selected, through
// the one path-against-view resolver (src/tools/view-paths.ts).
import * as zc from "zod/v4/core";
import { toolInternals } from "../tools/define.js";
import { describeTool } from "../tools/describe.js";
import { closestNames } from "../tools/identifiers.js";
import { formatIssues } from "../tools/issues.js";
import { isPlainObject, setKey } from "../tools/json.js";
import { findTool } from "../tools/tool-info.js";
import type { ResultView, ToolDescriptor } from "../tools/types.js";
import type { Tool } from "../tools/define.js";
import { classifyViewPath, formatSegments, topLevelKeys, type PathSegment } from "../tools/view-paths.js";
import { messageOf } from "../text.js";
import { parseWorkflow, RUN_AGENT, type InputSpec, type NodeSpec, type WorkflowProblem } from "./definition.js";
import { AGENT_NODE_FIELDS, agentNodeDescriptor } from "./agent-node.js";
import { hasTemplate, parseTemplate, setValueAt, TemplateError, type ParsedTemplate, type Reference } from "./template.js";

export interface WorkflowCatalog {
  /** The tools a node's `kind` may name (by id, name or program path). */
  tools: readonly Tool[];
  /** The agents `run-agent` nodes may name; `get` throws the host's "unknown agent" error. */
  agents: { get(name: string): unknown };
  /** The depth the workflow's own task would run at; its agent nodes run one deeper. */
  depth?: number;
  maxDepth?: number;
}

export interface ValidateOptions {
  /** Check these input values too (unknown names, missing required inputs). */
  inputs?: Record<string, unknown>;
}

/** What a run pins: the contract of the view each tool node selected. */
export interface ContractEntry {
  node: string;
  tool: string;
  /** Present for tools with views: the view the node selected (compact by default). */
  view?: ResultView;
  /** The digest of that view's schema (or of the single output schema). */
  digest?: string;
}

/** A string param holding templates, at `at` inside the node's params. */
export interface TemplateSite {
  at: PathSegment[];
  template: ParsedTemplate;
}

interface PlannedBase {
  id: string;
  index: number;
  /** Nodes that must succeed first (edges and references), in definition order. */
  deps: string[];
  params: Record<string, unknown>;
  sites: TemplateSite[];
}

export interface PlannedToolNode extends PlannedBase {
  type: "tool";
  tool: Tool;
  view?: ResultView;
  digest?: string;
}

export interface PlannedAgentNode extends PlannedBase {
  type: "agent";
  agent: string;
  background: boolean;
}

export type PlannedNode = PlannedToolNode | PlannedAgentNode;

export interface WorkflowPlan {
  name?: string;
  description?: string;
  inputs: InputSpec[];
  nodes: PlannedNode[];
  contract: ContractEntry[];
}

export interface WorkflowValidation {
  valid: boolean;
  errors: WorkflowProblem[];
  warnings: WorkflowProblem[];
  contract: ContractEntry[];
  /** Present when valid: what the runner executes, tools and views fixed. */
  plan?: WorkflowPlan;
  /** Present when valid and input values were given: the values with defaults applied. */
  inputs?: Record<string, unknown>;
}

const AGENT_PARAMS = ["agent", "prompt", "background", "label", "model"];
const AGENT_TEXT_PARAMS = new Set(["prompt", "label", "model"]);

/** Where a node's result comes from, for reference checks and messages. */
interface Target {
  descriptor: Pick<ToolDescriptor, "output_schema" | "output_views">;
  /** The tool id, as the descriptor has it; absent for agent nodes. */
  toolId?: string;
  view: ResultView;
  /** The view is unknown (its result_view is invalid): references into it are not checked. */
  unchecked?: boolean;
  background?: boolean;
}

export function validateWorkflow(source: unknown, catalog: WorkflowCatalog, options: ValidateOptions = {}): WorkflowValidation {
  const parsed = parseWorkflow(source);
  const { problem } = parsed;
  const warnings: WorkflowProblem[] = [];
  const warn = (code: string, at: readonly PathSegment[], message: string, node?: string): void => {
    warnings.push(problem(code, at, message, node));
    parsed.problems.pop();
  };
  const done = (plan?: WorkflowPlan, contract: ContractEntry[] = [], inputs?: Record<string, unknown>): WorkflowValidation => {
    const errors = inDefinitionOrder(parsed.problems);
    inDefinitionOrder(warnings);
    const result: WorkflowValidation = { valid: errors.length === 0, errors, warnings, contract };
    if (errors.length === 0 && plan) {
      result.plan = plan;
      if (inputs) result.inputs = inputs;
    }
    return result;
  };
  const def = parsed.definition;
  if (!def) return done();

  const inputNames = new Set(def.inputs.map((input) => input.name));
  const nodeAt = (node: NodeSpec, ...rest: PathSegment[]): PathSegment[] => ["graph", "nodes", node.index, ...rest];

  // Ids: the first node with an id owns it; later ones are reported, and left out of the graph.
  const byId = new Map<string, NodeSpec>();
  for (const node of def.nodes) {
    const first = byId.get(node.id);
    if (first) {
      problem("duplicate_node_id", nodeAt(node, "id"), `node id "${node.id}" is used by graph.nodes[${first.index}] and graph.nodes[${node.index}]; give each node a unique id`, node.id);
      continue;
    }
    byId.set(node.id, node);
  }
  const nodeIds = [...byId.keys()];
  const nodesHint = (id: string): string => {
    const closest = closestNames(id, nodeIds, 3);
    return closest.length > 0 ? `; closest: ${closest.map((c) => `"${c}"`).join(", ")}` : "";
  };

  const deps = new Map<string, Set<string>>(nodeIds.map((id) => [id, new Set<string>()]));
  const targets = new Map<string, Target>();
  const planned = new Map<string, PlannedNode>();
  const references: Array<{ reader: NodeSpec; ref: Extract<Reference, { kind: "node" }>; at: PathSegment[] }> = [];
  const toolIds = catalog.tools.map((tool) => tool.id);
  const agentNodes: NodeSpec[] = [];
  const descriptors = new Map<Tool, ToolDescriptor>();

  for (const node of byId.values()) {
    const tool = node.kind === RUN_AGENT ? undefined : findTool(catalog.tools, node.kind);
    // A tool that declares its own `result_view` input (or takes any input) gets it as any param;
    // for the others it is the selector, checked below with its own rules.
    const ownsSelector = tool !== undefined && !tool.hasResultViews && toolInternals(tool).ownsResultView;
    // Templates first: they are what the node reads, whatever its kind.
    const sites: TemplateSite[] = [];
    collectTemplates(node.params, [], (at, text) => {
      if (at.length === 1 && at[0] === "result_view" && !ownsSelector) return;
      try {
        const template = parseTemplate(text);
        sites.push({ at, template });
        for (const part of template.parts) {
          if (!("ref" in part)) continue;
          const ref = part.ref;
          if (ref.kind === "input") {
            if (!inputNames.has(ref.name)) {
              const declared = [...inputNames];
              problem(
                "unknown_input",
                nodeAt(node, "params", ...at),
                `node "${node.id}" reads ${ref.source}, which the workflow does not declare; ${declared.length > 0 ? `its inputs are ${declared.join(", ")}` : "it declares no inputs"}: add "${ref.name}" under "inputs"`,
                node.id,
              );
            }
          } else if (!byId.has(ref.node)) {
            if (!parsed.writtenIds.has(ref.node))
              problem("unknown_node", nodeAt(node, "params", ...at), `node "${node.id}" reads ${ref.source}, but no node has id "${ref.node}"${nodesHint(ref.node)}`, node.id);
          } else {
            deps.get(node.id)!.add(ref.node);
            references.push({ reader: node, ref, at });
          }
        }
      } catch (error) {
        if (!(error instanceof TemplateError)) throw error;
        problem(
          "template_invalid",
          nodeAt(node, "params", ...at),
          `node "${node.id}" params.${formatSegments(at)}: template ${error.template} at character ${error.character}: ${error.message}`,
          node.id,
        );
      }
    });

    if (node.kind === RUN_AGENT) {
      agentNodes.push(node);
      const background = checkAgentParams(node, catalog, problem, nodeAt(node));
      targets.set(node.id, { descriptor: agentNodeDescriptor(background === true), view: "compact", background: background === true });
      if (background !== undefined) {
        planned.set(node.id, { type: "agent", id: node.id, index: node.index, deps: [], params: node.params, sites, agent: node.params.agent as string, background });
      }
      checkProduces(node, targets.get(node.id)!, problem, warn, nodeAt(node));
      continue;
    }

    if (!tool) {
      const closest = closestNames(node.kind, toolIds, 3);
      problem(
        "unknown_tool",
        nodeAt(node, "kind"),
        `node "${node.id}" kind "${node.kind}" is neither a tool nor "${RUN_AGENT}"${closest.length > 0 ? `; closest tools: ${closest.map((c) => `"${c}"`).join(", ")}` : "; no tools are bound"}`,
        node.id,
      );
      continue;
    }
    const impl = toolInternals(tool);
    let descriptor = descriptors.get(tool);
    if (!descriptor) descriptors.set(tool, (descriptor = describeTool(tool)));
    let view: ResultView = "compact";
    let unchecked = false;
    const hasSelector = Object.hasOwn(node.params, "result_view") && node.params.result_view !== undefined;
    if (tool.hasResultViews) {
      if (hasSelector) {
        if (node.params.result_view === "compact" || node.params.result_view === "full") view = node.params.result_view;
        else {
          unchecked = true;
          problem("result_view_not_literal", nodeAt(node, "params", "result_view"), `node "${node.id}" params.result_view must be a literal "compact" or "full"`, node.id);
        }
      }
    } else if (hasSelector && !impl.ownsResultView) {
      problem("tool_invalid_input", nodeAt(node, "params", "result_view"), `tool "${tool.id}" returns a single result and does not accept "result_view"`, node.id);
    }
    checkLiteralParams(node, tool, sites, problem, nodeAt(node, "params"));
    const target: Target = { descriptor, toolId: tool.id, view, ...(unchecked ? { unchecked } : {}) };
    targets.set(node.id, target);
    checkProduces(node, target, problem, warn, nodeAt(node));
    const digest = tool.hasResultViews ? descriptor.output_views![view].digest : descriptor.output_schema_digest;
    planned.set(node.id, {
      type: "tool",
      id: node.id,
      index: node.index,
      deps: [],
      params: node.params,
      sites,
      tool,
      ...(tool.hasResultViews ? { view } : {}),
      ...(typeof digest === "string" ? { digest } : {}),
    });
  }

  for (const edge of def.edges) {
    let ok = true;
    for (const end of ["from", "to"] as const) {
      const id = edge[end];
      if (byId.has(id)) continue;
      ok = false;
      if (!parsed.writtenIds.has(id)) problem("unknown_node", ["graph", "edges", edge.index, end], `graph.edges[${edge.index}].${end} names node "${id}", which does not exist${nodesHint(id)}`);
    }
    if (ok) deps.get(edge.to)!.add(edge.from);
  }

  for (const { reader, ref, at } of references) {
    const target = targets.get(ref.node);
    if (!target || target.unchecked || ref.path.length === 0) continue;
    checkPath(`node "${reader.id}" reads ${ref.source}`, ref.path, ref.node, target, problem, warn, nodeAt(reader, "params", ...at), reader.id);
  }

  const order = checkCycles(
    def.nodes.filter((n) => byId.get(n.id) === n),
    deps,
    problem,
  );

  if (catalog.depth !== undefined && catalog.maxDepth !== undefined) {
    if (catalog.depth > catalog.maxDepth) {
      problem("task_depth_exceeded", [], `the workflow would run as a task at depth ${catalog.depth}, but tasks nest at most ${catalog.maxDepth} deep; run it from a shallower program`);
    } else {
      for (const node of agentNodes) {
        if (catalog.depth + 1 <= catalog.maxDepth) break;
        problem(
          "task_depth_exceeded",
          nodeAt(node, "kind"),
          `node "${node.id}" would spawn a subagent at depth ${catalog.depth + 1}, but subagents nest at most ${catalog.maxDepth} deep and this workflow runs at depth ${catalog.depth}; run the workflow from a shallower program, or do this work in a tool node`,
          node.id,
        );
      }
    }
  }

  let values: Record<string, unknown> | undefined;
  if (options.inputs !== undefined) values = checkInputs(def.inputs, options.inputs, problem);

  const contract: ContractEntry[] = [];
  for (const node of def.nodes) {
    const p = planned.get(node.id);
    if (p?.type !== "tool" || byId.get(node.id) !== node) continue;
    contract.push({ node: p.id, tool: p.tool.id, ...(p.view ? { view: p.view } : {}), ...(p.digest ? { digest: p.digest } : {}) });
  }
  if (parsed.problems.length > 0 || !order) return done(undefined, contract);
  const nodes = order.map((id) => {
    const p = planned.get(id)!;
    p.deps = [...deps.get(id)!].sort((a, b) => byId.get(a)!.index - byId.get(b)!.index);
    return p;
  });
  const plan: WorkflowPlan = { inputs: def.inputs, nodes, contract };
  if (def.name !== undefined) plan.name = def.name;
  if (def.description !== undefined) plan.description = def.description;
  return done(plan, contract, values);
}

/**
 * Problems in the order of the definition (its inputs and fields, each node in turn, the edges,
 * then the graph as a whole), whatever order the checks found them in; the sort is stable.
 */
function inDefinitionOrder(problems: WorkflowProblem[]): WorkflowProblem[] {
  const rank = (p: WorkflowProblem): number => {
    const path = p.path ?? "";
    const node = /^graph\.nodes(?:\[(\d+)\])?/.exec(path);
    if (node) return 1 + Number(node[1] ?? 0);
    const edge = /^graph\.edges(?:\[(\d+)\])?/.exec(path);
    if (edge) return 1e6 + Number(edge[1] ?? 0);
    return path === "graph" || p.code === "task_depth_exceeded" ? 2e6 : 0;
  };
  return problems.sort((a, b) => rank(a) - rank(b));
}

type Report = (code: string, at: readonly PathSegment[], message: string, node?: string) => unknown;

function collectTemplates(value: unknown, at: PathSegment[], visit: (at: PathSegment[], text: string) => void): void {
  if (typeof value === "string") {
    if (hasTemplate(value)) visit(at, value);
  } else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) collectTemplates(item, [...at, i], visit);
  } else if (isPlainObject(value)) {
    for (const [key, item] of Object.entries(value)) collectTemplates(item, [...at, key], visit);
  }
}

/** Returns whether the node runs in the background, or undefined when its params are unusable. */
function checkAgentParams(node: NodeSpec, catalog: WorkflowCatalog, problem: Report, at: PathSegment[]): boolean | undefined {
  const params = node.params;
  let ok = true;
  const bad = (key: string | undefined, message: string, code = "invalid_params"): void => {
    ok = false;
    problem(code, key === undefined ? [...at, "params"] : [...at, "params", key], message, node.id);
  };
  for (const key of Object.keys(params)) {
    if (!AGENT_PARAMS.includes(key)) bad(key, `node "${node.id}" params.${key} is not a ${RUN_AGENT} param; it takes ${AGENT_PARAMS.join(", ")}`);
  }
  const agent = params.agent;
  if (typeof agent !== "string" || agent.trim() === "") bad("agent", `node "${node.id}" params.agent is required: the name of the agent to run`);
  else if (hasTemplate(agent)) bad("agent", `node "${node.id}" params.agent must be a literal agent name, not a template, so it can be checked before the workflow starts`);
  else {
    try {
      catalog.agents.get(agent);
    } catch (error) {
      bad("agent", `node "${node.id}" params.agent: ${messageOf(error)}`, "unknown_agent");
    }
  }
  const prompt = params.prompt;
  if (typeof prompt !== "string" || prompt.trim() === "") bad("prompt", `node "${node.id}" params.prompt is required: the task for the agent (templates allowed)`);
  for (const key of AGENT_TEXT_PARAMS) {
    if (key !== "prompt" && params[key] !== undefined && typeof params[key] !== "string") bad(key, `node "${node.id}" params.${key} must be a string`);
  }
  if (params.background !== undefined && typeof params.background !== "boolean") bad("background", `node "${node.id}" params.background must be true or false (a literal)`);
  return ok ? params.background === true : undefined;
}

/**
 * The tool's own input check on the params known before the run (docs/tool-contract.md#input-what-is-refused-before-a-tool-runs): template
 * strings are filled in at run time, so what is reported at or below them is left to the call.
 */
function checkLiteralParams(node: NodeSpec, tool: Tool, sites: TemplateSite[], problem: Report, at: PathSegment[]): void {
  const input = toolInternals(tool).input;
  if (!input) return;
  const args = structuredClone(node.params) as Record<string, unknown>;
  if (tool.hasResultViews) delete args.result_view;
  for (const site of sites) setValueAt(args, site.at, "");
  const parsed = zc.safeParse(input, args);
  if (parsed.success) return;
  const issues = parsed.error.issues.filter((issue) => !sites.some((site) => startsWith(issue.path, site.at)));
  if (issues.length > 0) problem("tool_invalid_input", at, formatIssues(`tool "${tool.id}" input`, issues, args), node.id);
}

function startsWith(path: readonly PropertyKey[], prefix: readonly PathSegment[]): boolean {
  return prefix.length <= path.length && prefix.every((segment, i) => String(path[i]) === String(segment));
}

/** A node's own `produces`: the same rules as a reference into it (docs/workflows.md#validation). */
function checkProduces(node: NodeSpec, target: Target, problem: Report, warn: Report, at: PathSegment[]): void {
  if (!node.produces || target.unchecked) return;
  node.produces.forEach((text, i) => {
    const path = parseFieldPath(text);
    if (!path) {
      problem(
        "invalid_definition",
        [...at, "produces", i],
        `node "${node.id}" produces ${JSON.stringify(text)}, which is not a field path; write it like session.lineage.permission_policy.tools or tasks[0].id`,
        node.id,
      );
      return;
    }
    checkPath(`node "${node.id}" produces ${text}`, path, node.id, target, problem, warn, [...at, "produces", i], node.id);
  });
}

/** `a.b[0].c` or `a.b.0.c` as path segments; undefined when it is not a path. */
function parseFieldPath(text: string): PathSegment[] | undefined {
  try {
    const parsed = parseTemplate(`{{ .nodes.x.output.${text.trim()} }}`);
    return parsed.whole?.kind === "node" && parsed.whole.path.length > 0 ? parsed.whole.path : undefined;
  } catch {
    return undefined;
  }
}

function checkPath(subject: string, path: PathSegment[], targetId: string, target: Target, problem: Report, warn: Report, at: PathSegment[], node: string): void {
  const verdict = classifyViewPath(target.descriptor, path, target.view);
  const of = target.toolId ?? (target.background ? "a background run-agent node" : "a run-agent node");
  const fix = target.toolId
    ? `check the field names with tool_info({ tool_id: "${target.toolId}" })`
    : `a ${target.background ? "background " : ""}run-agent node's result has ${AGENT_NODE_FIELDS[target.background ? "background" : "foreground"].join(", ")}`;
  switch (verdict.verdict) {
    case "ok":
      return;
    case "requires_full":
      problem("result_view_field_requires_full", at, `${subject}, which the compact result of ${of} does not include; fix: add \`result_view: full\` to the params of node "${targetId}"`, node);
      return;
    case "unproven": {
      const schema = target.descriptor.output_views ? `${target.view} schema` : "output schema";
      const open = verdict.declaredSegments === 0 ? "its top level" : formatSegments(path.slice(0, verdict.declaredSegments));
      warn(
        "unproven_path",
        at,
        `${subject}, which the ${schema} of ${of} leaves open at ${open}: the path cannot be proven, and a field missing at run time resolves to an empty value; check the name against a real result`,
        node,
      );
      return;
    }
    case "no_schema":
      problem(
        "unresolvable_path",
        at,
        `${subject}, but ${of} declares no output schema, so nothing declares the fields of its result (the value its execute returned); read the whole value with {{ .nodes.${targetId}.output }}`,
        node,
      );
      return;
    case "unresolvable": {
      const which = target.descriptor.output_views ? `which neither the compact nor the full result of ${of} has` : `which the result of ${of} does not have`;
      const m = verdict.missingSegment;
      const segment = path[m]!;
      const what = typeof segment === "number" || /^(0|[1-9][0-9]*)$/.test(segment) ? `element [${segment}]` : `field "${segment}"`;
      const schema = target.descriptor.output_views ? target.descriptor.output_views.full.schema : target.descriptor.output_schema;
      const why = m === 0 ? `its result has no ${what} (it has ${topLevelKeys(schema).join(", ") || "no fields"})` : `${formatSegments(path.slice(0, m))} has no ${what}`;
      problem("unresolvable_path", at, `${subject}, ${which}: ${why}; ${fix}`, node);
      return;
    }
  }
}

/**
 * Dependency order (Kahn). Nodes left over sit on or behind a cycle; each cycle is named once,
 * found by walking dependencies back from a leftover node until one repeats.
 */
function checkCycles(nodes: NodeSpec[], deps: Map<string, Set<string>>, problem: Report): string[] | undefined {
  const indexOf = new Map(nodes.map((n, i) => [n.id, i]));
  const remaining = new Map(nodes.map((n) => [n.id, deps.get(n.id)!.size]));
  const dependents = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  for (const n of nodes) for (const d of deps.get(n.id)!) dependents.get(d)!.push(n.id);
  const ready = nodes.filter((n) => remaining.get(n.id) === 0).map((n) => n.id);
  const order: string[] = [];
  while (ready.length > 0) {
    ready.sort((a, b) => indexOf.get(a)! - indexOf.get(b)!);
    const id = ready.shift()!;
    order.push(id);
    for (const next of dependents.get(id)!) {
      const left = remaining.get(next)! - 1;
      remaining.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  if (order.length === nodes.length) return order;
  const placed = new Set(order);
  const reported = new Set<string>();
  for (const start of nodes) {
    if (placed.has(start.id) || reported.has(start.id)) continue;
    const seen = new Map<string, number>();
    const walk: string[] = [];
    let id = start.id;
    while (!seen.has(id)) {
      seen.set(id, walk.length);
      walk.push(id);
      // A leftover node always has a leftover dependency: the one it waits on. Prefer the earliest.
      id = [...deps.get(id)!].filter((d) => !placed.has(d)).sort((a, b) => indexOf.get(a)! - indexOf.get(b)!)[0]!;
    }
    const cycle = walk.slice(seen.get(id)!).reverse();
    if (cycle.some((c) => reported.has(c))) continue;
    for (const c of cycle) reported.add(c);
    // Start the cycle at its earliest node, in run order (each must finish before the next).
    const first = cycle.reduce((best, c, i) => (indexOf.get(c)! < indexOf.get(cycle[best]!)! ? i : best), 0);
    const ring = [...cycle.slice(first), ...cycle.slice(0, first)];
    const names = [...ring, ring[0]].join(" → ");
    problem(
      "cycle",
      ["graph"],
      ring.length === 1
        ? `node "${ring[0]}" depends on itself (${names}): a node cannot read its own output or have an edge to itself`
        : `the graph has a cycle: ${names} (each must finish before the next starts, through edges or {{ .nodes.<id>.output }} references); remove one of these dependencies`,
      ring[0],
    );
  }
  return undefined;
}

function checkInputs(declared: InputSpec[], given: Record<string, unknown>, problem: Report): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  const names = declared.map((d) => d.name);
  for (const key of Object.keys(given)) {
    if (!names.includes(key)) {
      problem("unknown_input", ["inputs", key], `inputs.${key} is not an input of this workflow; ${names.length > 0 ? `its inputs are ${names.join(", ")}` : "it declares no inputs"}`);
    }
  }
  for (const input of declared) {
    if (Object.hasOwn(given, input.name) && given[input.name] !== undefined) setKey(values, input.name, given[input.name]);
    else if (Object.hasOwn(input, "default")) setKey(values, input.name, input.default);
    else problem("missing_input", ["inputs", input.name], `input "${input.name}" has no value and no default; pass it in inputs (CLI: --input ${input.name}=…)`);
  }
  return values;
}
