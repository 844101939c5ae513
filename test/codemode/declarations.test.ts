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
    await expect(createCodemode({ declarations: { prompt: 100 } })).rejects.toThrow(
      new RangeError("options.declarations.prompt must be an integer number of bytes ≥ 256 (or Infinity), got the number 100"),
    );
    await expect(createCodemode({ declarations: { search: 1.5 } })).rejects.toThrow(
      new RangeError("options.declarations.search must be an integer number of bytes ≥ 256 (or Infinity), got the number 1.5"),
    );
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

  it("a script agent's program reaches tool_search and tool_info, and they show it only the tools its agent allows", async () => {
    const scriptCode =
      'const found = await tools.tool_search({ query: task }); const info = await tools.tool_info({ tool_id: "ptc_subagent" }).catch((e) => e.code); text(found.matches.map((m) => m.path).join(",") + " " + (info.tool ? "ptc_subagent" : info));';
    cm = await createCodemode({
      tools: [lookup],
      workers: { min: 0 },
      agents: [
        { name: "finder", description: "Finds tools.", driver: "script", tools: ["lookup_order"], scriptCode },
        { name: "reader", description: "Finds tools, read-only.", driver: "script", readOnly: true, tools: ["lookup_order"], scriptCode },
      ],
    });
    const output = async (agent: string, task: string) => {
      const result = await cm!.callTool("ptc_subagent", { agent, task, background: true });
      const id = (result.structuredContent as { task_id: string }).task_id;
      await cm!.tasks.wait(id);
      return (await cm!.callTool("ptc_task_output", { task_id: id })).structuredContent as { status: string; output: string };
    };
    // Not ptc_workflow, whose description has "order" too: this agent cannot call it.
    expect(await output("finder", "order")).toMatchObject({ status: "succeeded", output: "tools.lookup_order ptc_subagent" });
    // A read-only agent reaches neither lookup_order (not known to be read-only) nor ptc_subagent; it may read and wait for tasks.
    expect(await output("reader", "order task")).toMatchObject({ status: "succeeded", output: "tools.ptc_task_wait,tools.ptc_task_output,tools.ptc_task_list tool_invalid_input" });
    // A program of the host's own still sees every tool.
    const top = await cm.run('return (await tools.tool_search({ query: "order" })).matches.map((m) => m.id)');
    expect(top.structuredContent.value).toStrictEqual(["lookup_order", "ptc_workflow"]);
  });
});
