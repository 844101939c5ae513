import { describeTool, invokeTool, type BoundOutput, type Tool, type ToolHooks } from "../tools/index.js";
import type { ChildToolProvider } from "../tasks/index.js";
import { WORKSPACE_READ_ONLY_TOOLS } from "../workspace/index.js";

export interface ChildToolOptions {
  /** Tools that never change anything; read-only agents are offered only these. */
  readOnlyTools?: readonly string[];
  hooks?: ToolHooks;
  /** How a result over the output budget is cut (and where its whole text is saved). */
  boundOutput?: BoundOutput;
}

/**
 * Offers runtime tools to model-driven (openai) children: JSON Schemas from the tools' own
 * descriptors, calls through invokeTool (so hooks and views apply), text content as the result a
 * model reads. Which of them a given child sees is decided by its agent definition.
 */
export function childToolProvider(tools: readonly Tool[], options: ChildToolOptions = {}): ChildToolProvider {
  if (!Array.isArray(tools)) throw new TypeError(`childToolProvider: "tools" must be an array of tools, received ${tools === null ? "null" : typeof tools}`);
  const readOnly = new Set(options.readOnlyTools ?? WORKSPACE_READ_ONLY_TOOLS);
  const byName = new Map(tools.map((t) => [t.name, t]));
  let seq = 0;
  return {
    list: () =>
      tools.map((t) => {
        const d = describeTool(t);
        return { name: t.name, description: d.description, parameters: d.input_schema, readOnly: readOnly.has(t.name) };
      }),
    call: async (name, args, ctx) => {
      const tool = byName.get(name);
      if (!tool) throw new Error(`tool "${name}" does not exist`);
      const result = await invokeTool(tool, args, {
        ctx: { signal: ctx.signal, callId: `child-${++seq}`, runId: `task-${ctx.taskId}`, depth: ctx.depth, taskId: ctx.taskId },
        ...(options.hooks ? { hooks: options.hooks } : {}),
        ...(options.boundOutput ? { boundOutput: options.boundOutput } : {}),
      });
      return result.content.map((c) => c.text).join("\n");
    },
  };
}
