// A large catalog: three real MCP servers with 47 tools (the catalog fixture) plus the workspace
// tools, 50 bound tools, through `codemode mcp` and `codemode tools`. ptc_run_code's description
// stays within its budget with every tool named and described by one line; tool_search finds a
// tool by what it does and gives its complete declaration; programs reach tool_search and
// tool_info too; upstream tools are declared from their own input and output schemas.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BINDING_CONTRACT, DEFAULT_DECLARATIONS_BUDGETS } from "../../src/index.js";
import { CLI, ROOT, runCli, tempProject } from "./helpers.js";

const CATALOG = join(ROOT, "test", "mcp", "fixtures", "catalog-server.mjs");
const FAMILIES = { files: 13, memory: 9, tracker: 25 };
const config = { mcpServers: Object.fromEntries(Object.keys(FAMILIES).map((family) => [family, { command: process.execPath, args: [CATALOG, family] }])) };

const text = (result: Record<string, unknown>) => (result.content as Array<{ text: string }>).map((block) => block.text).join("\n");

/** One tool's declaration, cut out of a whole `declare namespace tools` text. */
function declarationOf(declarations: string, fn: string): string {
  const lines = declarations.split("\n");
  const at = lines.findIndex((line) => line.trimStart().startsWith(`function ${fn}(`));
  expect(at, fn).toBeGreaterThan(-1);
  let start = at;
  while (start > 0 && /^\s*(\/\*\*|\*)/.test(lines[start - 1]!)) start--;
  // It ends at the first line of its own indentation that closes a statement.
  const indent = /^ */.exec(lines[at]!)![0].length;
  let end = at;
  while (!(lines[end]!.endsWith(";") && /^ */.exec(lines[end]!)![0].length === indent)) end++;
  return lines.slice(start, end + 1).join("\n");
}

describe("a catalog of 50 bound tools", () => {
  let cwd: string;
  let client: Client;
  let full: string;

  beforeAll(async () => {
    cwd = tempProject(config, { "notes.md": "one\n" });
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp"], cwd, stderr: "pipe" });
    client = new Client({ name: "catalog-test", version: "1.0.0" });
    await client.connect(transport);
    const all = await runCli(["tools", "--declarations"], { cwd });
    expect(all.stderr).toBe("");
    full = all.stdout;
  });
  afterAll(async () => {
    await client?.close();
  });

  it("codemode tools --declarations declares every tool in full: upstream tools from their own input and output schemas", () => {
    expect(full).not.toContain("declared with one line only");
    expect(full).not.toContain("not declared here");
    // An output schema with nested records, enums and a nullable field.
    expect(declarationOf(full, "close_issue")).toBe(
      [
        "    /** Close an issue, optionally as not planned. */",
        "    function close_issue(args: {",
        "      /** The issue number, e.g. 42 */",
        "      number: number;",
        '      reason?: "completed" | "not_planned";',
        "      [key: string]: unknown;",
        "    }): Promise<{",
        "      /** Issue number */",
        "      number: number;",
        "      /** One-line summary */",
        "      title: string;",
        '      state: "open" | "closed";',
        "      labels: string[];",
        "      assignee?: string | null;",
        "      milestone?: {",
        "        /** Milestone title */",
        "        title: string;",
        "        /** ISO date */",
        "        due_on?: string;",
        "        [key: string]: unknown;",
        "      };",
        "      [key: string]: unknown;",
        "    }>;",
      ].join("\n"),
    );
    // An input schema zod cannot express (if/then) is declared from the schema as the server gave it.
    expect(declarationOf(full, "convert_currency")).toContain(
      "      /** How much */\n      amount: number;\n      /** ISO 4217 code, e.g. EUR */\n      from: string;\n      /** ISO 4217 code */\n      to?: string;\n    }): Promise<",
    );
  });

  it("ptc_run_code's description stays within the prompt budget and still names every tool with one line", async () => {
    const { tools } = await client.listTools();
    const run = tools.find((tool) => tool.name === "ptc_run_code")!;
    const description = run.description!;
    expect(Buffer.byteLength(full)).toBeGreaterThan(40_000);
    expect(Buffer.byteLength(description)).toBeLessThanOrEqual(Buffer.byteLength(`${BINDING_CONTRACT}\n\nTools a program can call:\n`) + DEFAULT_DECLARATIONS_BUDGETS.prompt);
    expect(description).toMatch(
      /\n {2}\/\/ \d+ tools are declared with one line only \(over the declarations budget\): tool_search\(\{ query, declarations: true \}\) gives their declarations, tool_info\(\{ tool_id \}\) one tool's schemas\.\n/,
    );
    expect(description).not.toContain("not declared here");
    for (const name of ["read_text_file", "create_entities", "find_free_slots", "convert_currency", "read_file", "ptc_subagent", "tool_search", "tool_info"]) {
      expect(description, name).toMatch(new RegExp(`\\n +function ${name}\\(`));
    }
    expect(description).toContain("    function find_free_slots(args?: object): Promise<unknown>; // Find free time slots shared by several attendees' calendars.\n");
    // tool_search and tool_info come first: how a program types the rest.
    expect(description.indexOf("function tool_info(")).toBeLessThan(description.indexOf("function read_file("));
    expect(description.indexOf("function tool_search(")).toBeLessThan(description.indexOf("function read_file("));
  });

  it("a budget of one's own: codemode mcp --declarations-budget and codemode tools --declarations-budget", async () => {
    const cut = await runCli(["tools", "--declarations", "--declarations-budget", "3000"], { cwd });
    expect(cut.code).toBe(0);
    expect(Buffer.byteLength(cut.stdout)).toBeLessThanOrEqual(3001);
    expect(cut.stdout).toContain("more tools are not declared here: tool_search({ query }) finds tools by name and description.");
    const bad = await runCli(["tools", "--declarations", "--declarations-budget", "12kb"], { cwd });
    expect([bad.code, bad.stderr]).toStrictEqual([2, 'codemode tools: --declarations-budget must be a whole number of bytes, at least 256; got "12kb"\nRun codemode help for usage.\n']);
    const small = new Client({ name: "catalog-test-small", version: "1.0.0" });
    await small.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp", "--declarations-budget", "2000"], cwd, stderr: "pipe" }));
    try {
      const run = (await small.listTools()).tools.find((tool) => tool.name === "ptc_run_code")!;
      expect(Buffer.byteLength(run.description!)).toBeLessThanOrEqual(Buffer.byteLength(`${BINDING_CONTRACT}\n\nTools a program can call:\n`) + 2000);
    } finally {
      await small.close();
    }
  });

  it("codemode.json's declarations budgets reach the prompt and tool_search; --declarations-budget wins over the file's prompt", async () => {
    const budgeted = tempProject({ ...config, declarations: { prompt: 1500, search: 600 } });
    const prefixBytes = Buffer.byteLength(`${BINDING_CONTRACT}\n\nTools a program can call:\n`);
    const open = async (args: string[]) => {
      const c = new Client({ name: "catalog-test-config", version: "1.0.0" });
      await c.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp", ...args], cwd: budgeted, stderr: "pipe" }));
      return c;
    };
    const fromFile = await open([]);
    try {
      const description = (await fromFile.listTools()).tools.find((tool) => tool.name === "ptc_run_code")!.description!;
      expect(Buffer.byteLength(description)).toBeLessThanOrEqual(prefixBytes + 1500);
      expect(Buffer.byteLength(description)).toBeGreaterThan(prefixBytes + 1000);
      const found = await fromFile.callTool({ name: "tool_search", arguments: { query: "issue", limit: 20, declarations: true } });
      const declarations = (found.structuredContent as { declarations: string }).declarations;
      expect(Buffer.byteLength(declarations)).toBeLessThanOrEqual(600);
      expect(declarations).toContain("one line only");
    } finally {
      await fromFile.close();
    }
    const fromFlag = await open(["--declarations-budget", "4000"]);
    try {
      const description = (await fromFlag.listTools()).tools.find((tool) => tool.name === "ptc_run_code")!.description!;
      expect(Buffer.byteLength(description)).toBeGreaterThan(prefixBytes + 3000);
      expect(Buffer.byteLength(description)).toBeLessThanOrEqual(prefixBytes + 4000);
    } finally {
      await fromFlag.close();
    }
  });

  it("a model finds a tool with tool_search and gets its complete declaration", async () => {
    const found = await client.callTool({ name: "tool_search", arguments: { query: "close an issue", limit: 3 } });
    expect(found.isError).toBeUndefined();
    const { matches, count } = found.structuredContent as { matches: Array<{ id: string; path: string; description: string }>; count: number };
    expect(matches[0]).toStrictEqual({ id: "tracker.close_issue", path: "tools.tracker.close_issue", description: "Close an issue, optionally as not planned." });
    expect(matches).toHaveLength(3);
    expect(count).toBeGreaterThan(3);
    expect(text(found)).toContain('Their TypeScript declarations: tool_search({ query: "close an issue", declarations: true })');
    const typed = await client.callTool({ name: "tool_search", arguments: { query: "close an issue", limit: 1, declarations: true } });
    const declarations = (typed.structuredContent as { declarations: string }).declarations;
    // The same declaration as the full listing gives: complete, whatever the prompt's budget left out.
    expect(declarationOf(declarations, "close_issue")).toBe(declarationOf(full, "close_issue"));
    expect(declarations).not.toContain("one line only");
  });

  it("a program reaches tool_search and tool_info, then calls what it found with typed results", async () => {
    const code = `const found = await tools.tool_search({ query: "issue by number" });
const best = found.matches[0];
const info = await tools.tool_info({ tool_id: best.id });
const issue = await tools.tracker.get_issue({ number: 7 });
return { best: best.path, required: info.tool.descriptor.output_schema.required, issue: [issue.number, issue.state, issue.milestone.title] };`;
    const result = await client.callTool({ name: "ptc_run_code", arguments: { code } });
    expect(result.isError, text(result)).toBeUndefined();
    expect((result.structuredContent as { value: unknown }).value).toStrictEqual({
      best: "tools.tracker.get_issue",
      required: ["labels", "number", "state", "title"],
      issue: [7, "open", "v1"],
    });
  });
});
