// describeTool: a tool's descriptor, as tool_info returns it.
import { toolInternals, type Tool } from "./define.js";
import type { ToolDescriptor } from "./types.js";

/**
 * The descriptor of docs/tool-contract.md#descriptors-titles-and-annotations. Returns a fresh
 * copy: the precomputed one is shared by every call and must not be changed by a caller that
 * edits what it got.
 */
export function describeTool(tool: Tool): ToolDescriptor {
  return structuredClone(toolInternals(tool, "describeTool: tool").descriptor) as ToolDescriptor;
}
