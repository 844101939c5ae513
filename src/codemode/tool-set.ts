// The tools of one runtime, in three kinds: the runtime's own (ptc_*, tool_info, tool_search…),
// the host's, and entry points — tools a model calls to start a program (ptc_run_code). A
// program reaches the first two through its `tools` namespace, each at one path; entry points
// are never there: a program does not start programs, it spawns subagents. This is the one place
// that knows which tools a program, a task's agent, a search or a model can see.
import { hasApprovalPolicy, type Tool } from "../tools/index.js";

export type ToolKind = "runtime" | "host" | "entry";

/** A tool's full path in a program's `tools` namespace: `read_file`, `github.create_issue`. */
export function toolPath(tool: Tool): string {
  return tool.path.join(".");
}

/** Which tools a program may call, by full path (an agent's allow-list, a task's filter). */
export type ToolFilter = (path: string, tool: Tool) => boolean;

export class ToolSet {
  private readonly groups: Record<ToolKind, Tool[]> = { runtime: [], host: [], entry: [] };
  private byPath: ReadonlyMap<string, Tool> = new Map();

  /**
   * Adds tools of one kind. Two program tools at one path are refused (naming both, and the
   * fix); the set is unchanged then.
   */
  add(tools: readonly Tool[], kind: ToolKind): void {
    const next = { ...this.groups, [kind]: [...this.groups[kind], ...tools] };
    const paths = new Map<string, Tool>();
    for (const tool of [...next.runtime, ...next.host]) {
      const path = toolPath(tool);
      const clash = paths.get(path);
      if (clash) throw new TypeError(`options.tools: two tools are reached as tools.${path} ("${clash.id}" and "${tool.id}"); rename one`);
      paths.set(path, tool);
    }
    this.groups[kind] = next[kind];
    this.byPath = paths;
  }

  /** Every tool a model can call: the runtime's own first (its entry points with them), then the host's. */
  all(): Tool[] {
    return [...this.groups.runtime, ...this.groups.entry, ...this.groups.host];
  }

  /** The tools a program reaches, by path. */
  get paths(): ReadonlyMap<string, Tool> {
    return this.byPath;
  }

  /** The tools a program reaches (what a subagent may be offered, what a search finds). */
  programTools(): Tool[] {
    return [...this.byPath.values()];
  }

  /** The program tools `allow` admits, by path; all of them without a filter. */
  allowed(allow: ToolFilter | undefined): ReadonlyMap<string, Tool> {
    if (!allow) return this.byPath;
    const kept = new Map<string, Tool>();
    for (const [path, tool] of this.byPath) if (allow(path, tool)) kept.set(path, tool);
    return kept;
  }

  /** What a call sees: every tool a model can call, or — under a task's filter — the program tools it admits. */
  visible(filter: ToolFilter | undefined): Tool[] {
    return filter ? [...this.allowed(filter).values()] : this.all();
  }

  isHost(tool: Tool): boolean {
    return this.groups.host.includes(tool);
  }

  /** A tool a model names by id or by name. */
  find(name: string): Tool | undefined {
    return this.all().find((candidate) => candidate.id === name || candidate.name === name);
  }
}

/** What every run reads of its tools: the paths the guest binds, and whether any call may need an approval. */
export interface ToolMapFacts {
  /** The paths, in the map's order: shared by the runs of one map, so never changed. */
  readonly paths: string[];
  /** Some tool has an approval policy of its own (`approval` in defineTool). */
  readonly approvalPolicy: boolean;
}

const factsOf = new WeakMap<ReadonlyMap<string, Tool>, ToolMapFacts>();

/**
 * The facts of a map of tools, worked out once per map instead of on every run. Sound because a
 * map is never changed once made: `ToolSet.add` makes a new one, and `allowed` a new one per filter.
 */
export function toolMapFacts(tools: ReadonlyMap<string, Tool>): ToolMapFacts {
  let facts = factsOf.get(tools);
  if (!facts) {
    facts = { paths: [...tools.keys()], approvalPolicy: [...tools.values()].some(hasApprovalPolicy) };
    factsOf.set(tools, facts);
  }
  return facts;
}
