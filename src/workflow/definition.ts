// A workflow definition (YAML or JSON text, or the object itself) read into a checked shape.
// Every problem found is collected, none thrown, so validation can report all of them at once;
// text definitions also say on which line each problem is.
import type { Document, LineCounter } from "yaml";
import { yamlLibrary } from "../yaml-library.js";
import { describeReceived, formatBytes, YAML_WORDS } from "../text.js";
import { isPlainObject } from "../tools/json.js";
import { formatSegments, type PathSegment } from "../tools/view-paths.js";
import { NAME_PATTERN } from "./template.js";

export interface WorkflowProblem {
  code: string;
  /** The node the problem is about. */
  node?: string;
  /** Where in the definition, as `graph.nodes[1].params.prompt`. */
  path?: string;
  /** The line of that place, when the definition was text. */
  line?: number;
  message: string;
}

export interface InputSpec {
  name: string;
  description?: string;
  /** Own property only when a default was given (a default may be null). */
  default?: unknown;
}

export interface NodeSpec {
  id: string;
  kind: string;
  params: Record<string, unknown>;
  produces?: string[];
  /** Position in graph.nodes. */
  index: number;
}

export interface EdgeSpec {
  from: string;
  to: string;
  index: number;
}

export interface WorkflowDefinition {
  name?: string;
  description?: string;
  inputs: InputSpec[];
  nodes: NodeSpec[];
  edges: EdgeSpec[];
}

/** A definition read so far, with the problems met and a way to point at a place in the source. */
export interface ParsedWorkflow {
  definition?: WorkflowDefinition;
  problems: WorkflowProblem[];
  /** Node ids as written (valid or not), so later checks do not report them missing. */
  writtenIds: Set<string>;
  problem(code: string, at: readonly PathSegment[], message: string, node?: string): WorkflowProblem;
}

export const MAX_WORKFLOW_BYTES = 1024 * 1024;
export const MAX_NODES = 1000;
export const MAX_EDGES = 10_000;
export const RUN_AGENT = "run-agent";
/** JSON keys that a parser or validator may turn into a prototype: never an id or a name. */
const RESERVED = "__proto__";
const TOP_KEYS = ["name", "description", "inputs", "graph"];
const GRAPH_KEYS = ["nodes", "edges"];
const NODE_KEYS = ["id", "class", "kind", "params", "produces"];
const INPUT_KEYS = ["name", "description", "default"];
const EDGE_KEYS = ["from", "to"];

const quoteList = (keys: readonly string[]): string => keys.map((k) => `"${k}"`).join(", ");

const kindOf = (value: unknown): string => describeReceived(value, YAML_WORDS);

/** Reads a workflow from YAML/JSON text or from the definition object. */
export function parseWorkflow(source: unknown): ParsedWorkflow {
  const problems: WorkflowProblem[] = [];
  const writtenIds = new Set<string>();
  // Set only for a definition written as text (the YAML library is loaded then).
  let doc: Document | undefined;
  let lines: LineCounter | undefined;
  const lineOf = (at: readonly PathSegment[]): number | undefined => {
    if (!doc || !lines) return undefined;
    for (let n = at.length; n >= 0; n--) {
      const found = doc.getIn(at.slice(0, n), true);
      if (yamlLibrary().isNode(found) && found.range) return lines.linePos(found.range[0]).line;
    }
    return undefined;
  };
  const problem = (code: string, at: readonly PathSegment[], message: string, node?: string): WorkflowProblem => {
    const line = lineOf(at);
    const p: WorkflowProblem = {
      code,
      ...(node !== undefined ? { node } : {}),
      ...(at.length > 0 ? { path: formatSegments(at) } : {}),
      ...(line !== undefined ? { line } : {}),
      message,
    };
    problems.push(p);
    return p;
  };
  const parsed: ParsedWorkflow = { problems, writtenIds, problem };

  let root: unknown = source;
  if (typeof source === "string") {
    const bytes = Buffer.byteLength(source);
    if (bytes > MAX_WORKFLOW_BYTES) {
      problem("invalid_definition", [], `the workflow is ${formatBytes(bytes)}; a definition is at most ${formatBytes(MAX_WORKFLOW_BYTES)}`);
      return parsed;
    }
    const yaml = yamlLibrary();
    lines = new yaml.LineCounter();
    doc = yaml.parseDocument(source, { lineCounter: lines });
    if (doc.errors.length > 0) {
      for (const error of doc.errors.slice(0, 20)) {
        const line = error.linePos?.[0]?.line;
        const message = `the workflow is not valid YAML: ${error.message.split("\n")[0]!.replace(/:$/, "")}`;
        problems.push({ code: "invalid_definition", ...(line !== undefined ? { line } : {}), message });
      }
      return parsed;
    }
    try {
      root = doc.toJS({ maxAliasCount: 100 });
    } catch (error) {
      problem("invalid_definition", [], `the workflow is not valid YAML: ${(error as Error).message}`);
      return parsed;
    }
  }
  if (!isPlainObject(root)) {
    problem("invalid_definition", [], `a workflow must be a mapping with "graph" (and optionally "name", "description", "inputs"), received ${kindOf(root)}`);
    return parsed;
  }
  for (const key of Object.keys(root)) {
    if (!TOP_KEYS.includes(key)) problem("invalid_definition", [key], `unknown field "${key}"; a workflow has ${quoteList(TOP_KEYS)}`);
  }
  const definition: WorkflowDefinition = { inputs: [], nodes: [], edges: [] };
  for (const key of ["name", "description"] as const) {
    const value = root[key];
    if (value === undefined) continue;
    if (typeof value === "string") definition[key] = value;
    else problem("invalid_definition", [key], `"${key}" must be a string, received ${kindOf(value)}`);
  }
  definition.inputs = readInputs(root.inputs, problem);

  const graph = root.graph;
  if (!isPlainObject(graph)) {
    problem(
      "invalid_definition",
      ["graph"],
      graph === undefined ? `"graph" is required: a mapping with "nodes" (and optionally "edges")` : `"graph" must be a mapping with "nodes" and "edges", received ${kindOf(graph)}`,
    );
    return { ...parsed, definition };
  }
  for (const key of Object.keys(graph)) {
    if (!GRAPH_KEYS.includes(key)) problem("invalid_definition", ["graph", key], `unknown field "graph.${key}"; a graph has ${quoteList(GRAPH_KEYS)}`);
  }
  const nodes = graph.nodes;
  if (!Array.isArray(nodes) || nodes.length === 0) {
    problem("invalid_definition", ["graph", "nodes"], `"graph.nodes" must be a non-empty list of nodes { id, class: action, kind, params }, received ${kindOf(nodes)}`);
  } else if (nodes.length > MAX_NODES) {
    problem("invalid_definition", ["graph", "nodes"], `"graph.nodes" lists ${nodes.length} nodes; a workflow has at most ${MAX_NODES}`);
  } else {
    nodes.forEach((raw, index) => {
      const node = readNode(raw, index, problem, writtenIds);
      if (node) definition.nodes.push(node);
    });
  }
  const edges = graph.edges;
  if (edges !== undefined) {
    if (!Array.isArray(edges)) problem("invalid_definition", ["graph", "edges"], `"graph.edges" must be a list of { from, to }, received ${kindOf(edges)}`);
    else if (edges.length > MAX_EDGES) problem("invalid_definition", ["graph", "edges"], `"graph.edges" lists ${edges.length} edges; a workflow has at most ${MAX_EDGES}`);
    else
      edges.forEach((raw, index) => {
        const edge = readEdge(raw, index, problem);
        if (edge) definition.edges.push(edge);
      });
  }
  return { ...parsed, definition };
}

type Report = ParsedWorkflow["problem"];

function readInputs(raw: unknown, problem: Report): InputSpec[] {
  if (raw === undefined || raw === null) return [];
  const out: InputSpec[] = [];
  const seen = new Set<string>();
  const add = (name: unknown, spec: unknown, at: PathSegment[]): void => {
    if (typeof name !== "string" || !NAME_PATTERN.test(name)) {
      problem("invalid_definition", at, `an input name must be letters, digits, "_" or "-", starting with a letter or "_", received ${kindOf(name)}`);
      return;
    }
    if (name === RESERVED) {
      problem("invalid_definition", at, `input name "${RESERVED}" is reserved (it would not survive as a key of inputs); choose another name`);
      return;
    }
    if (seen.has(name)) {
      problem("invalid_definition", at, `input "${name}" is declared twice`);
      return;
    }
    seen.add(name);
    const input: InputSpec = { name };
    if (spec !== null && spec !== undefined) {
      if (!isPlainObject(spec)) {
        problem("invalid_definition", at, `input "${name}" must be a mapping { description?, default? } (or nothing), received ${kindOf(spec)}`);
        return;
      }
      for (const key of Object.keys(spec)) {
        if (!INPUT_KEYS.includes(key) || (key === "name" && !Array.isArray(raw)))
          problem("invalid_definition", [...at, key], `unknown field "${key}" of input "${name}"; an input has "description" and "default"`);
      }
      if (spec.description !== undefined) {
        if (typeof spec.description === "string") input.description = spec.description;
        else problem("invalid_definition", [...at, "description"], `"description" of input "${name}" must be a string, received ${kindOf(spec.description)}`);
      }
      if (Object.hasOwn(spec, "default")) input.default = spec.default;
    }
    out.push(input);
  };
  if (Array.isArray(raw)) {
    for (const [index, item] of raw.entries()) {
      if (typeof item === "string") add(item, null, ["inputs", index]);
      else add(isPlainObject(item) ? item.name : item, item, ["inputs", index]);
    }
  } else if (isPlainObject(raw)) {
    for (const [name, spec] of Object.entries(raw)) add(name, spec, ["inputs", name]);
  } else {
    problem("invalid_definition", ["inputs"], `"inputs" must be a mapping of input names to { description?, default? } (or a list of names), received ${kindOf(raw)}`);
  }
  return out;
}

function readNode(raw: unknown, index: number, problem: Report, writtenIds: Set<string>): NodeSpec | undefined {
  const at: PathSegment[] = ["graph", "nodes", index];
  if (!isPlainObject(raw)) {
    problem("invalid_definition", at, `graph.nodes[${index}] must be a mapping { id, class: action, kind, params }, received ${kindOf(raw)}`);
    return undefined;
  }
  const named = typeof raw.id === "string" ? raw.id : undefined;
  if (named !== undefined) writtenIds.add(named);
  const who = named !== undefined ? `node "${named}"` : `graph.nodes[${index}]`;
  let ok = true;
  const bad = (key: string, message: string): void => {
    ok = false;
    problem("invalid_definition", [...at, key], message, named);
  };
  for (const key of Object.keys(raw)) {
    if (!NODE_KEYS.includes(key)) bad(key, `unknown field "${key}" of ${who}; a node has ${quoteList(NODE_KEYS)}`);
  }
  if (named === undefined) bad("id", `graph.nodes[${index}] needs an "id" (a string), received ${kindOf(raw.id)}`);
  else if (!NAME_PATTERN.test(named) || named.length > 64)
    bad("id", `node id ${JSON.stringify(named)} must be 1–64 letters, digits, "_" or "-", starting with a letter or "_" (templates read it as {{ .nodes.<id>.output }})`);
  else if (named === RESERVED) bad("id", `node id "${RESERVED}" is reserved (it would not survive as a key of the outputs); choose another id`);
  if (raw.class !== undefined && raw.class !== "action") bad("class", `${who} has class ${kindOf(raw.class)}; the only node class is "action"`);
  if (typeof raw.kind !== "string" || raw.kind === "") bad("kind", `${who} needs a "kind": a tool id (e.g. read_file) or "run-agent", received ${kindOf(raw.kind)}`);
  if (raw.params !== undefined && raw.params !== null && !isPlainObject(raw.params)) bad("params", `"params" of ${who} must be a mapping, received ${kindOf(raw.params)}`);
  let produces: string[] | undefined;
  if (raw.produces !== undefined) {
    if (!Array.isArray(raw.produces) || !raw.produces.every((p) => typeof p === "string"))
      bad("produces", `"produces" of ${who} must be a list of field paths (e.g. session.lineage.permission_policy.tools), received ${kindOf(raw.produces)}`);
    else produces = raw.produces as string[];
  }
  if (!ok) return undefined;
  const node: NodeSpec = { id: named!, kind: raw.kind as string, params: isPlainObject(raw.params) ? raw.params : {}, index };
  if (produces) node.produces = produces;
  return node;
}

function readEdge(raw: unknown, index: number, problem: Report): EdgeSpec | undefined {
  const at: PathSegment[] = ["graph", "edges", index];
  if (!isPlainObject(raw)) {
    problem("invalid_definition", at, `graph.edges[${index}] must be a mapping { from, to }, received ${kindOf(raw)}`);
    return undefined;
  }
  let ok = true;
  for (const key of Object.keys(raw)) {
    if (!EDGE_KEYS.includes(key)) {
      ok = false;
      problem("invalid_definition", [...at, key], `unknown field "${key}" of graph.edges[${index}]; an edge has "from" and "to"`);
    }
  }
  for (const key of EDGE_KEYS) {
    if (typeof raw[key] !== "string") {
      ok = false;
      problem("invalid_definition", [...at, key], `graph.edges[${index}] needs "${key}": a node id, received ${kindOf(raw[key])}`);
    }
  }
  return ok ? { from: raw.from as string, to: raw.to as string, index } : undefined;
}
