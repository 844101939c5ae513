// The host's tools as an openai child sees them: full paths, model-callable names, JSON Schemas and
// which are read-only; a call runs through invokeTool like any other and answers with the model text.
import { describeTool, invokeTool, type BoundOutput, type Tool, type ToolHooks } from "../tools/index.js";
import { toolInternals } from "../tools/define.js";
import type { ChildToolDescriptor, ChildToolProvider } from "../tasks/index.js";
import { WORKSPACE_READ_ONLY_TOOLS } from "../workspace/index.js";

export interface ChildToolOptions {
  /**
   * Full paths (or ids) of the tools that never change anything; read-only agents are offered
   * only these. Default: the workspace's read-only tools. An upstream MCP tool is read-only only
   * when its server declares it so (see connectUpstreams' `readOnlyTools`).
   */
  readOnlyTools?: readonly string[];
  hooks?: ToolHooks;
  /** How a result over the output budget is cut (and where its whole text is saved). */
  boundOutput?: BoundOutput;
}

/** A tool's full path as programs reach it: `read_file`, `github.create_issue`. */
export function toolPathOf(tool: Tool): string {
  return tool.path.join(".");
}

/** Whether a tool is one of `names`, matched by its full path or id, never by its bare name. */
export function toolListed(names: ReadonlySet<string>, tool: Tool): boolean {
  return names.has(toolPathOf(tool)) || names.has(tool.id);
}

/** OpenAI function names are `[A-Za-z0-9_-]{1,64}`: the path with "__" for each ".". */
function functionName(path: string, taken: Set<string>): string {
  const base = path
    .replace(/\./g, "__")
    .replace(/[^A-Za-z0-9_-]/g, "_")
    .slice(0, 60);
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
  taken.add(name);
  return name;
}

/**
 * Offers runtime tools to model-driven (openai) children: JSON Schemas from the tools' own
 * descriptors, calls through invokeTool (so hooks and views apply), text content as the result a
 * model reads. Which of them a given child sees is decided by its agent definition, by full path.
 */
export function childToolProvider(tools: readonly Tool[], options: ChildToolOptions = {}): ChildToolProvider {
  if (!Array.isArray(tools)) throw new TypeError(`childToolProvider: "tools" must be an array of tools, received ${tools === null ? "null" : typeof tools}`);
  const readOnly = new Set(options.readOnlyTools ?? WORKSPACE_READ_ONLY_TOOLS);
  const byPath = new Map(tools.map((t) => [toolPathOf(t), t]));
  // Checked now, as describeTool would; the descriptors themselves are built at the first list()
  // (a model-driven child's start), once: the runtime's own tools work their schemas out on that read.
  for (const t of tools) toolInternals(t, "describeTool: tool");
  const offered = [...tools];
  let descriptors: ChildToolDescriptor[] | undefined;
  const describe = (): ChildToolDescriptor[] => {
    const taken = new Set<string>();
    return offered.map((t) => {
      const d = describeTool(t);
      const path = toolPathOf(t);
      return { path, name: functionName(path, taken), description: d.description, parameters: d.input_schema, readOnly: toolListed(readOnly, t) };
    });
  };
  let seq = 0;
  return {
    list: () => (descriptors ??= describe()).map((d) => ({ ...d })),
    call: async (path, args, ctx) => {
      const tool = byPath.get(path);
      if (!tool) throw new Error(`tool "${path}" does not exist`);
      const result = await invokeTool(tool, args, {
        ctx: { signal: ctx.signal, callId: `child-${++seq}`, runId: `task-${ctx.taskId}`, depth: ctx.depth, taskId: ctx.taskId },
        ...(options.hooks ? { hooks: options.hooks } : {}),
        ...(options.boundOutput ? { boundOutput: options.boundOutput } : {}),
        ...(ctx.trace ? { trace: ctx.trace } : {}),
      });
      return result.content.map((c) => c.text).join("\n");
    },
  };
}
