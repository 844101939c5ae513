// Declarations budgets per reader: what ptc_run_code's description carries (prompt) and what one
// tool_search answer may carry (search), set with createCodemode({ declarations }).
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { BINDING_CONTRACT, createCodemode, DEFAULT_DECLARATIONS_BUDGETS, defineTool, type Codemode } from "../../src/index.js";

const lookup = defineTool({
  name: "lookup_order",
  description: "Look up one order by id.",
  input: z.object({ order_id: z.string().describe("e.g. ORD-1") }),
  output: z.object({ id: z.string(), total_cents: z.number().int(), lines: z.array(z.object({ sku: z.string(), quantity: z.number().int() })) }),
  execute: ({ order_id }) => ({ id: order_id, total_cents: 1250, lines: [{ sku: "A-1", quantity: 2 }] }),
});

const prefix = `${BINDING_CONTRACT}\n\nTools a program can call:\n`;
let cm: Codemode | undefined;
afterEach(async () => {
  await cm?.close();
  cm = undefined;
});

describe("declarations budgets", () => {
  it("the prompt budget bounds ptc_run_code's description; the host's tools get their full declarations first", async () => {
    cm = await createCodemode({ tools: [lookup], workers: { min: 0 } });
    const description = cm.tools.find((tool) => tool.id === "ptc_run_code")!.description;
    expect(description).toBe(prefix + cm.declarations());
    expect(Buffer.byteLength(cm.declarations())).toBeLessThanOrEqual(DEFAULT_DECLARATIONS_BUDGETS.prompt);
    expect(description).toContain("  /** Look up one order by id. */\n  function lookup_order(args: {\n");
    // The runtime's big ones are listed by one line.
    expect(description).toContain("  function ptc_workflow(args?: object): Promise<unknown>; // ");
    // Everything, for a reader with room: the same tools in full.
    const all = cm.declarations({ budgetBytes: Infinity });
    expect(all).not.toContain("one line only");
    expect(Buffer.byteLength(all)).toBeGreaterThan(DEFAULT_DECLARATIONS_BUDGETS.prompt);
  });

  it("createCodemode({ declarations: { prompt, search } }) sets both", async () => {
    cm = await createCodemode({ tools: [lookup], workers: { min: 0 }, declarations: { prompt: Infinity, search: 300 } });
    const description = cm.tools.find((tool) => tool.id === "ptc_run_code")!.description;
    expect(description).toBe(prefix + cm.declarations({ budgetBytes: Infinity }));
    expect(description).not.toContain("one line only");
    const found = await cm.callTool("tool_search", { query: "order workflow subagent", declarations: true });
    const declarations = (found.structuredContent as { declarations: string }).declarations;
    expect(Buffer.byteLength(declarations)).toBeLessThanOrEqual(300);
  });

  it("refuses a budget that is not a number of bytes, or a reader it does not know", async () => {
    await expect(createCodemode({ declarations: { prompt: 100 } })).rejects.toThrow(new RangeError("options.declarations.prompt must be an integer number of bytes ≥ 256 (or Infinity), got the number 100"));
    await expect(createCodemode({ declarations: { search: 1.5 } })).rejects.toThrow(new RangeError("options.declarations.search must be an integer number of bytes ≥ 256 (or Infinity), got the number 1.5"));
    await expect(createCodemode({ declarations: { promt: 8000 } as never })).rejects.toThrow(new TypeError("options.declarations.promt is not a declarations budget; known: prompt, search"));
    await expect(createCodemode({ declarations: 8000 as never })).rejects.toThrow(new TypeError("options.declarations must be an object { prompt?, search? } of byte budgets, got the number 8000"));
  });

  it("tool_search and tool_info are reachable from programs", async () => {
    cm = await createCodemode({ tools: [lookup], workers: { min: 0 } });
    const result = await cm.run(`const found = await tools.tool_search({ query: "order" });
const info = await tools.tool_info({ tool_id: found.matches[0].id });
const order = await tools.lookup_order({ order_id: "ORD-7" });
return [found.matches[0].path, info.tool.descriptor.output_schema.required, order.total_cents];`);
    expect(result.isError, result.content[0]!.text).toBeUndefined();
    expect(result.structuredContent.value).toStrictEqual(["tools.lookup_order", ["id", "lines", "total_cents"], 1250]);
  });
});
