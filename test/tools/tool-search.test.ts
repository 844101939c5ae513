// tool_search: tools found by the words of their names, descriptions and argument names, best
// first, with their declarations on demand.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineTool, invokeTool, renderDeclarations, toTool, toolSearchTool, type Tool, type ToolCallResult } from "../../src/tools/index.js";

const execute = () => "";
const catalog = (): Tool[] => [
  defineTool({
    name: "read_file",
    description: "Read a text file, optionally a range of lines.",
    input: z.object({ path: z.string(), start_line: z.number().int().optional() }),
    output: z.object({ content: z.string() }),
    execute: () => ({ content: "" }),
  }),
  toTool({ name: "write_file", description: "Write a text file, replacing its content.", execute }),
  toTool({ name: "create_issue", namespace: "tracker", description: "Open a new issue with a title and a body.", execute }),
  toTool({ name: "list_issues", namespace: "tracker", description: "List issues, newest first.", execute }),
  toTool({ name: "add_comment", namespace: "tracker", description: "Add a comment to an issue.", execute }),
  toTool({ name: "getItem", namespace: "inventory", description: "Look up one item.", inputSchema: { type: "object", properties: { sku: { type: "string" } } }, execute }),
  toTool({ name: "list-skus", namespace: "inventory", description: "All stock keeping units, one per line.", execute }),
  toTool({ name: "get_weather", description: "Current weather for a city.", execute }),
];

const ctx = () => ({ signal: new AbortController().signal, callId: "c", runId: "r", depth: 0 });

async function search(tools: Tool[], input: Record<string, unknown>): Promise<ToolCallResult> {
  return invokeTool(
    toolSearchTool(() => tools),
    input,
    { ctx: ctx() },
  );
}

const ids = (result: ToolCallResult) => (result.structuredContent as { matches: { id: string }[] }).matches.map((match) => match.id);

describe("tool_search", () => {
  it("ranks a tool whose name has the words first, then those whose descriptions have them", async () => {
    const tools = catalog();
    expect(ids(await search(tools, { query: "create issue" }))).toStrictEqual(["tracker.create_issue", "tracker.list_issues", "tracker.add_comment"]);
    expect(ids(await search(tools, { query: "comment" }))).toStrictEqual(["tracker.add_comment"]);
    // Words of snake_case, kebab-case and camelCase names; a prefix; a typo in a long word.
    expect(ids(await search(tools, { query: "get item" }))[0]).toBe("inventory.getItem");
    expect(ids(await search(tools, { query: "skus" }))[0]).toBe("inventory.list-skus");
    expect(ids(await search(tools, { query: "weath" }))).toStrictEqual(["get_weather"]);
    expect(ids(await search(tools, { query: "wether city" }))[0]).toBe("get_weather");
    // A namespace, and an argument name the description does not mention.
    expect(ids(await search(tools, { query: "tracker" }))).toStrictEqual(["tracker.create_issue", "tracker.list_issues", "tracker.add_comment"]);
    expect(ids(await search(tools, { query: "sku" }))).toStrictEqual(["inventory.list-skus", "inventory.getItem"]);
  });

  it("answers with paths, one line each, the count, and how to get declarations; nothing found is an answer too", async () => {
    const tools = catalog();
    const result = await search(tools, { query: "read file", limit: 1 });
    expect(result.structuredContent).toStrictEqual({
      matches: [{ id: "read_file", path: "tools.read_file", description: "Read a text file, optionally a range of lines." }],
      count: 2,
    });
    expect(result.content).toStrictEqual([
      {
        type: "text",
        text: 'The best 1 of 2 tools matching "read file" (of 8):\ntools.read_file — Read a text file, optionally a range of lines.\nTheir TypeScript declarations: tool_search({ query: "read file", declarations: true }); one tool\'s JSON Schemas: tool_info({ tool_id: "read_file" }).',
      },
    ]);
    const none = await search(tools, { query: "kubernetes" });
    expect(none.isError).toBeUndefined();
    expect(none.structuredContent).toStrictEqual({ matches: [], count: 0 });
    expect(none.content[0]!.text).toBe('No tool matches "kubernetes" (8 tools). Try other words, or fewer: tool_search matches words of tool names, descriptions and argument names.');
  });

  it("declarations: true gives the matches' complete declarations", async () => {
    const tools = catalog();
    const result = await search(tools, { query: "read file lines", limit: 1, declarations: true });
    const declarations = (result.structuredContent as { declarations: string }).declarations;
    expect(declarations).toBe(renderDeclarations([tools[0]!], { budgetBytes: Infinity }));
    expect(declarations).toContain("function read_file(args: {\n    path: string;\n    start_line?: number;\n  }): Promise<{\n    content: string;\n  }>;");
    expect(result.content[0]!.text.endsWith(`\n\n${declarations}`)).toBe(true);
    // Past the tool's budget, what does not fit is declared by one line, as in a prompt.
    const small = await invokeTool(
      toolSearchTool(() => tools, { declarationsBudget: 300 }),
      { query: "file issue", declarations: true },
      { ctx: ctx() },
    );
    const cut = (small.structuredContent as { declarations: string }).declarations;
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(300);
    expect(cut).toContain("declared with one line only");
  });

  it("the same query ranks the same way every time; equal scores keep the catalog's order", async () => {
    const twins = ["a", "b", "c", "d"].map((name) => toTool({ name: `twin_${name}`, description: "Exactly the same words.", execute }));
    const first = ids(await search(twins, { query: "same words" }));
    expect(first).toStrictEqual(["twin_a", "twin_b", "twin_c", "twin_d"]);
    for (let i = 0; i < 3; i++) expect(ids(await search(twins, { query: "same words" }))).toStrictEqual(first);
  });

  it("reads the tool list on every call: tools added later are found", async () => {
    const tools = catalog();
    const tool = toolSearchTool(() => tools);
    expect((await invokeTool(tool, { query: "deploy" }, { ctx: ctx() })).structuredContent).toStrictEqual({ matches: [], count: 0 });
    tools.push(toTool({ name: "deploy", description: "Ship it.", execute }));
    expect(ids(await invokeTool(tool, { query: "deploy" }, { ctx: ctx() }))).toStrictEqual(["deploy"]);
  });

  it("refuses a query with no words, naming the field and what to send", async () => {
    for (const query of ["the of a", "?!*(", "   "]) {
      await expect(search(catalog(), { query }), query).rejects.toMatchObject({
        code: "tool_invalid_input",
        reason: "schema_invalid",
        message: `tool "tool_search" input "query" has no words to search for (received ${JSON.stringify(query)}); give words from a tool's name or purpose, e.g. "read file"`,
      });
    }
    await expect(search(catalog(), { query: "x".repeat(1001) })).rejects.toMatchObject({
      code: "tool_invalid_input",
      message: 'tool "tool_search" input "query" is invalid: Too big: expected string to have <=1000 characters',
    });
    await expect(search(catalog(), { query: "file", limit: 51 })).rejects.toMatchObject({
      code: "tool_invalid_input",
      message: 'tool "tool_search" input "limit" is invalid: Too big: expected number to be <=50',
    });
  });

  it("hostile input is ordinary input: regex syntax, unicode, control characters and huge descriptions", async () => {
    const tools = [
      ...catalog(),
      toTool({ name: "huge", description: `Renders ${"a very long description ".repeat(20_000)}charts.\u001b[2J\nSecond line.`, execute }),
      toTool({ name: "unicode_tool", description: "Übersetzt Text ins Deutsche; 翻译文本.", execute }),
    ];
    expect(ids(await search(tools, { query: "(.*)+$ [file] \\d{1000}" }))).toEqual(expect.arrayContaining(["read_file", "write_file"]));
    expect(ids(await search(tools, { query: "übersetzt" }))).toStrictEqual(["unicode_tool"]);
    const huge = await search(tools, { query: "charts" });
    const [match] = (huge.structuredContent as { matches: { description: string }[] }).matches;
    // One line: cut, and no escape sequence or line break reaches a terminal or a listing.
    expect(match!.description.length).toBeLessThanOrEqual(120);
    expect(match!.description).not.toMatch(/[\u0000-\u001f]/);
    expect(JSON.parse(JSON.stringify(huge.structuredContent))).toStrictEqual(huge.structuredContent);
  });
});
