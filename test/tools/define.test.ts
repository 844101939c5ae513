import { describe, it, expect } from "vitest";
import { z } from "zod";
import { closestNames, defineTool, isTool, pickAnnotations, toIdentifier, toTool, type Tool } from "../../src/tools/index.js";

const input = z.object({ q: z.string() });
const execute = () => "ok";

describe("defineTool", () => {
  it("accepts a compact view whose extra keys fall in an open part of the full view", () => {
    const tool = defineTool({
      name: "open_full",
      description: "d",
      input,
      views: { compact: z.object({ meta: z.object({ a: z.string() }) }), full: z.object({ meta: z.looseObject({}) }) },
      execute: () => ({ meta: { a: "x" } }),
    });
    expect(tool.hasResultViews).toBe(true);
  });

  it("builds an immutable tool with its identity and flags", () => {
    const views = defineTool({
      name: "session-status",
      namespace: "compozy",
      description: "Read one session.",
      input,
      views: { compact: z.object({ id: z.string() }), full: z.object({ id: z.string(), more: z.string() }) },
      execute: () => ({ id: "a", more: "b" }),
    });
    expect({ ...views }).toStrictEqual({
      name: "session-status",
      namespace: "compozy",
      id: "compozy.session-status",
      path: ["compozy", "session_status"],
      description: "Read one session.",
      hasOutput: true,
      hasResultViews: true,
    });
    expect(Object.isFrozen(views)).toBe(true);
    expect(Object.isFrozen(views.path)).toBe(true);
    const single = defineTool({ name: "one", description: "d", input, output: z.object({ a: z.string() }), execute: () => ({ a: "" }) });
    expect([single.hasOutput, single.hasResultViews, Object.hasOwn(single, "namespace")]).toStrictEqual([true, false, false]);
    const text = defineTool({ name: "two", description: "d", input, execute });
    expect([text.hasOutput, text.hasResultViews, isTool(text)]).toStrictEqual([false, false, true]);
  });

  const bad: { name: string; def: unknown; message: string }[] = [
    { name: "not an object", def: null, message: "defineTool: the definition must be an object, received null" },
    {
      name: "bad name",
      def: { name: "has space", description: "d", input, execute },
      message: 'defineTool: "name" must be 1–128 characters of letters, digits, "_", "-" or ".", not starting with "-" or ".", received "has space"',
    },
    {
      name: "missing name",
      def: { description: "d", input, execute },
      message: 'defineTool: "name" must be 1–128 characters of letters, digits, "_", "-" or ".", not starting with "-" or ".", received undefined',
    },
    {
      name: "too long name",
      def: { name: "a".repeat(129), description: "d", input, execute },
      message: `defineTool: "name" must be 1–128 characters of letters, digits, "_", "-" or ".", not starting with "-" or ".", received "${"a".repeat(129)}"`,
    },
    {
      name: "bad namespace",
      def: { name: "a", namespace: "x.y", description: "d", input, execute },
      message: 'defineTool: "namespace" must be 1–64 characters of letters, digits, "_" or "-", received "x.y"',
    },
    { name: "empty description", def: { name: "a", description: " ", input, execute }, message: 'defineTool: "description" must be a non-empty string, received an empty string' },
    { name: "non-zod input", def: { name: "a", description: "d", input: { q: "string" }, execute }, message: 'defineTool: "input" must be a zod object schema (z.object({...})), received object' },
    { name: "zod non-object input", def: { name: "a", description: "d", input: z.string(), execute }, message: 'defineTool: "input" must be a zod object schema (z.object({...})), received object' },
    { name: "missing execute", def: { name: "a", description: "d", input }, message: 'defineTool: "execute" must be a function, received undefined' },
    { name: "bad toModelOutput", def: { name: "a", description: "d", input, execute, toModelOutput: "x" }, message: 'defineTool: "toModelOutput" must be a function, received string' },
    {
      name: "both output and views",
      def: { name: "a", description: "d", input, execute, output: z.object({}), views: { compact: z.object({}), full: z.object({}) } },
      message: 'defineTool: give either "output" (a single result) or "views" ({ compact, full }), not both',
    },
    { name: "non-zod output", def: { name: "a", description: "d", input, execute, output: {} }, message: 'defineTool: "output" must be a zod object schema (z.object({...})), received object' },
    {
      name: "views missing full",
      def: { name: "a", description: "d", input, execute, views: { compact: z.object({}) } },
      message: 'defineTool: "views.full" must be a zod object schema (z.object({...})), received undefined',
    },
    {
      name: "unknown view",
      def: { name: "a", description: "d", input, execute, views: { compact: z.object({}), full: z.object({}), tiny: z.object({}) } },
      message: 'defineTool: "views" has unknown view "tiny"; expected "compact" and "full"',
    },
    {
      name: "views with own result_view input",
      def: { name: "a", description: "d", input: z.object({ result_view: z.string() }), execute, views: { compact: z.object({}), full: z.object({}) } },
      message: 'defineTool: "input" must not declare "result_view": a tool with views gets that selector from the runtime',
    },
    {
      name: "unknown field",
      def: { name: "a", description: "d", input, execute, outputs: z.object({}) },
      message:
        'defineTool: unknown field "outputs"; expected one of "name", "namespace", "description", "title", "annotations", "approval", "input", "output", "views", "execute", "toModelOutput", "toDetails"',
    },
    {
      name: "a compact view with a key the full view lacks",
      def: { name: "a", description: "d", input, execute, views: { compact: z.object({ s: z.object({ id: z.string(), secret: z.string() }) }), full: z.object({ s: z.object({ id: z.string() }) }) } },
      message: 'defineTool: "views.compact" declares $.s.secret, which "views.full" does not: every compact field must be in the full view at the same path',
    },
    {
      name: "a compact list item with a key the full item lacks",
      def: {
        name: "a",
        description: "d",
        input,
        execute,
        views: { compact: z.object({ rows: z.array(z.object({ x: z.number() })).nullable() }), full: z.object({ rows: z.array(z.object({ y: z.number() })).nullable() }) },
      },
      message: 'defineTool: "views.compact" declares $.rows[].x, which "views.full" does not: every compact field must be in the full view at the same path',
    },
    { name: "an empty title", def: { name: "a", description: "d", title: " ", input, execute }, message: 'defineTool: "title" must be a non-empty string of at most 200 characters, received " "' },
    {
      name: "annotations that are not an object",
      def: { name: "a", description: "d", annotations: true, input, execute },
      message: 'defineTool: "annotations" must be an object of boolean hints (readOnlyHint, destructiveHint, idempotentHint, openWorldHint), received boolean',
    },
    {
      name: "an unknown hint",
      def: { name: "a", description: "d", annotations: { readOnly: true }, input, execute },
      message: 'defineTool: "annotations" has unknown hint "readOnly"; known: readOnlyHint, destructiveHint, idempotentHint, openWorldHint',
    },
    {
      name: "a hint that is not a boolean",
      def: { name: "a", description: "d", annotations: { readOnlyHint: "yes" }, input, execute },
      message: 'defineTool: "annotations.readOnlyHint" must be true or false, received string',
    },
    {
      name: "output with no JSON form",
      def: { name: "a", description: "d", input, execute, output: z.object({ at: z.date() }) },
      message: 'defineTool: "output" cannot be represented as JSON Schema: Date cannot be represented in JSON Schema',
    },
    {
      name: "view with a transform",
      def: { name: "a", description: "d", input, execute, views: { compact: z.object({ n: z.string().transform((s) => s.length) }), full: z.object({}) } },
      message: 'defineTool: "views.compact" cannot be represented as JSON Schema: Transforms cannot be represented in JSON Schema',
    },
  ];
  for (const { name, def, message } of bad) {
    it(`rejects ${name} with a TypeError naming the field`, () => {
      expect(() => defineTool(def as never)).toThrow(new TypeError(message));
    });
  }
});

describe("title and annotations", () => {
  it("are kept on the tool, frozen, for clients (MCP); a tool without them has neither key", () => {
    const annotations = { readOnlyHint: true, openWorldHint: false };
    const tool = defineTool({ name: "a", description: "d", title: "Read A", annotations, input, execute });
    expect([tool.title, tool.annotations]).toStrictEqual(["Read A", { readOnlyHint: true, openWorldHint: false }]);
    annotations.readOnlyHint = false;
    expect(tool.annotations).toStrictEqual({ readOnlyHint: true, openWorldHint: false });
    expect(Object.isFrozen(tool.annotations)).toBe(true);
    const plain = toTool({ name: "p", description: "d", annotations: { destructiveHint: true }, execute });
    expect(plain.annotations).toStrictEqual({ destructiveHint: true });
    const bare = defineTool({ name: "b", description: "d", input, execute });
    expect([Object.hasOwn(bare, "title"), Object.hasOwn(bare, "annotations")]).toStrictEqual([false, false]);
  });

  it("pickAnnotations keeps an upstream tool's known boolean hints and nothing else", () => {
    expect(pickAnnotations({ title: "Read", readOnlyHint: true, openWorldHint: "no", futureHint: true })).toStrictEqual({ readOnlyHint: true });
    for (const none of [undefined, null, [], "x", {}, { title: "Only a title" }]) expect(pickAnnotations(none)).toBeUndefined();
    const tool = toTool({ name: "u", namespace: "srv", description: "d", annotations: pickAnnotations({ title: "U", destructiveHint: false }), execute });
    expect(tool.annotations).toStrictEqual({ destructiveHint: false });
  });
});

describe("toTool", () => {
  it("returns a defineTool result as is", () => {
    const tool = defineTool({ name: "a", description: "d", input, execute });
    expect(toTool(tool)).toBe(tool);
  });

  it("turns a definition with schemas into a tool through defineTool", () => {
    const tool = toTool({ name: "a", description: "d", input, output: z.object({ x: z.string() }), execute: () => ({ x: "" }) });
    expect([isTool(tool), tool.hasOutput]).toStrictEqual([true, true]);
  });

  it("accepts a plain { name, description, execute }", () => {
    const tool: Tool = toTool({ name: "my-tool", description: "Plain.", execute });
    expect({ ...tool }).toStrictEqual({ name: "my-tool", id: "my-tool", path: ["my_tool"], description: "Plain.", hasOutput: false, hasResultViews: false });
  });

  const bad: { value: unknown; message: string }[] = [
    { value: "tool", message: "toTool: expected a tool from defineTool() or an object { name, description, execute }, received string" },
    { value: [], message: "toTool: expected a tool from defineTool() or an object { name, description, execute }, received array" },
    { value: { name: "a", description: "d" }, message: 'toTool: "execute" must be a function, received undefined' },
    {
      value: { name: "a", description: "d", execute, run: execute },
      message: 'toTool: unknown field "run"; expected one of "name", "namespace", "description", "title", "annotations", "approval", "inputSchema", "execute"',
    },
    { value: { name: "a", description: "d", execute, inputSchema: { type: "string" } }, message: 'toTool: "inputSchema" must be a JSON Schema object with type "object", received object' },
    { value: { name: "", description: "d", execute }, message: 'toTool: "name" must be 1–128 characters of letters, digits, "_", "-" or ".", not starting with "-" or ".", received ""' },
    { value: { name: "a", description: "d", input: "schema", execute }, message: 'defineTool: "input" must be a zod object schema (z.object({...})), received string' },
  ];
  for (const { value, message } of bad) {
    it(`rejects ${JSON.stringify(value) ?? String(value)}`, () => {
      expect(() => toTool(value)).toThrow(new TypeError(message));
    });
  }
});

describe("identifiers", () => {
  it("sanitises names into identifiers", () => {
    expect(["my-tool", "read_file", "2fa", "a.b c", "delete", "class", "$x"].map(toIdentifier)).toStrictEqual(["my_tool", "read_file", "_2fa", "a_b_c", "delete_", "class_", "$x"]);
    expect(() => toIdentifier("")).toThrow(new TypeError('toIdentifier: "name" must be a non-empty string, received an empty string'));
  });

  it("closestNames ranks substrings first, then edit distance", () => {
    const names = ["read_file", "list_files", "search_files", "github.create_issue", "ptc_task_list"];
    expect(closestNames("create_issue", names)).toStrictEqual(["github.create_issue", "read_file", "list_files"]);
    expect(closestNames("reed_file", names, 1)).toStrictEqual(["read_file"]);
    expect(closestNames("x", [], 3)).toStrictEqual([]);
    expect(() => closestNames("x", names, 0)).toThrow(new TypeError('closestNames: "limit" must be a positive integer, received 0'));
  });
});
