// Calling a task tool as a model would, in the tests of test/ptc.
import { expect } from "vitest";
import { invokeTool, ToolError, type Tool, type ToolCallResult, type ToolContext } from "../../src/tools/index.js";

/** One call; every projection is checked against compact ⊆ full and for a JSON round trip. */
export async function callTool(tool: Tool, input: Record<string, unknown>, ctx: ToolContext, outputBudget?: number): Promise<ToolCallResult & { sc: Record<string, unknown> }> {
  // development: every call also checks that the compact view is a subset of the full view.
  const r = await invokeTool(tool, input, { ctx, development: true, ...(outputBudget !== undefined ? { outputBudget } : {}) });
  expect(JSON.parse(JSON.stringify(r.structuredContent))).toStrictEqual(r.structuredContent);
  return { ...r, sc: r.structuredContent! };
}

/** The ToolError a call rejects with (the test fails if it resolves). */
export async function refusalOf(tool: Tool, input: Record<string, unknown>, ctx: ToolContext): Promise<ToolError> {
  try {
    await invokeTool(tool, input, { ctx });
  } catch (err) {
    expect(err).toBeInstanceOf(ToolError);
    return err as ToolError;
  }
  throw new Error("expected a rejection");
}
