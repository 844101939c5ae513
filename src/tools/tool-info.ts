// The `tool_info` tool: one tool's descriptor, by id, for programs and models.
import { z } from "zod";
import { defineBuiltinTool, isTool, type Tool } from "./define.js";
import { describeTool } from "./describe.js";
import { describeValue, ToolError } from "./errors.js";
import { closestNames } from "./identifiers.js";
import type { ToolContext } from "./types.js";

const jsonSchema = z.record(z.string(), z.unknown());
const view = z.object({ schema: jsonSchema, digest: z.string() });
const descriptorSchema = z.object({
  id: z.string(),
  description: z.string(),
  input_schema: jsonSchema,
  output_schema: jsonSchema.optional(),
  output_schema_digest: z.string().optional(),
  output_views: z.object({ compact: view, full: view }).optional(),
});

/** Finds a tool by id, by name, or by the path a program uses (`tools.github.create_issue`). */
export function findTool(tools: readonly Tool[], toolId: string): Tool | undefined {
  const bare = toolId.startsWith("tools.") ? toolId.slice("tools.".length) : toolId;
  return tools.find((t) => t.id === toolId) ?? tools.find((t) => t.id === bare) ?? tools.find((t) => t.path.join(".") === bare) ?? tools.find((t) => t.namespace === undefined && t.name === bare);
}

/**
 * The `tool_info` tool: a tool's descriptor on demand, so the catalogue a model sees up front can
 * stay small. `list` is read on every call (tools added after creation are found), with the
 * call's context, so a caller that reaches fewer tools (a task's agent) can be shown only those.
 */
export function toolInfoTool(list: (ctx: ToolContext) => readonly Tool[]): Tool {
  if (typeof list !== "function") throw new TypeError(`toolInfoTool: "list" must be a function returning the tools, received ${describeValue(list)}`);
  return defineBuiltinTool({
    name: "tool_info",
    title: "Describe a tool",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    description:
      "Describe one tool: its input schema and the JSON Schema of what it returns (output_schema is the compact view; output_views lists compact and full for tools that accept result_view), and its title and effect hints (annotations) when it has them.",
    input: z.object({ tool_id: z.string().min(1).describe('The tool id, e.g. "read_file" or "github.create_issue".') }),
    output: z.object({
      tool: z.object({
        descriptor: descriptorSchema,
        title: z.string().optional().describe("Its title for people, when it has one."),
        annotations: z
          .object({ readOnlyHint: z.boolean().optional(), destructiveHint: z.boolean().optional(), idempotentHint: z.boolean().optional(), openWorldHint: z.boolean().optional() })
          .optional()
          .describe("Its effect hints, as stated by whoever defined it (an upstream server, the host): hints, not guarantees."),
      }),
    }),
    execute: ({ tool_id }, ctx) => {
      const tools = list(ctx);
      if (!Array.isArray(tools) || !tools.every(isTool)) {
        throw new TypeError(`toolInfoTool: "list" must return an array of tools, received ${describeValue(tools)}`);
      }
      const found = findTool(tools, tool_id);
      if (!found) {
        const closest = closestNames(
          tool_id,
          tools.map((t) => t.id),
        );
        throw new ToolError(
          "tool_invalid_input",
          `tool "tool_info" input "tool_id": unknown tool ${JSON.stringify(tool_id)}${closest.length > 0 ? `; closest: ${closest.map((c) => JSON.stringify(c)).join(", ")}` : "; no tools are available"}`,
          { reason: "unknown_tool" },
        );
      }
      return {
        tool: { descriptor: describeTool(found), ...(found.title === undefined ? {} : { title: found.title }), ...(found.annotations === undefined ? {} : { annotations: { ...found.annotations } }) },
      };
    },
  });
}
