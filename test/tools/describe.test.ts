import { describe, it, expect } from "vitest";
import { z } from "zod";
import { approvalDigest, canonicalJson, defineTool, describeTool, digestOf, invokeTool, toTool, toolInfoTool, ToolError, type Tool, type ToolContext } from "../../src/tools/index.js";
import { newCalls, sessionStatusTool, skillViewTool } from "./sample-tools.js";

const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "c", runId: "r", depth: 0 });

const singleResult = (output: z.ZodObject) => defineTool({ name: "t", description: "d", input: z.object({}), output, execute: () => ({}) });

describe("descriptors", () => {
  it("a single-result tool has output_schema and its digest, no output_views, no result_view input", () => {
    const d = describeTool(skillViewTool(newCalls()));
    const output = {
      type: "object",
      properties: {
        name: { type: "string" },
        // zod's ±(2^53 - 1) bounds of .int() are left out; a bound the schema chose stays.
        lines: { type: "integer" },
      },
      required: ["lines", "name"],
      additionalProperties: false,
    };
    expect(d).toStrictEqual({
      id: "skill_view",
      description: "Read one skill.",
      input_schema: {
        type: "object",
        properties: {
          skill: { type: "string" },
          max_lines: { type: "integer", exclusiveMinimum: 0 },
        },
        required: ["skill"],
      },
      output_schema: output,
      output_schema_digest: digestOf(output),
    });
    expect(Object.hasOwn(d, "output_views")).toBe(false);
    expect(d.output_schema_digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it("a tool with views lists result_view in its input, output_schema = the compact view, and both views with digests", () => {
    const d = describeTool(sessionStatusTool(newCalls()));
    expect((d.input_schema.properties as Record<string, unknown>).result_view).toStrictEqual({
      type: "string",
      enum: ["compact", "full"],
      description: 'Which result to return: "compact" (default) or "full", the complete record.',
    });
    expect(d.input_schema.required).toStrictEqual(["session_id"]);
    expect(Object.keys(d.output_views!)).toStrictEqual(["compact", "full"]);
    expect(d.output_schema).toStrictEqual(d.output_views!.compact.schema);
    expect(d.output_schema_digest).toBe(d.output_views!.compact.digest);
    expect(d.output_views!.full.digest).not.toBe(d.output_views!.compact.digest);
    expect(d.output_views!.full.digest).toBe(digestOf(d.output_views!.full.schema));
    // Pinned: the digest is a pure function of the schema, the same in every process and run.
    expect(d.output_views!.compact.digest).toBe("5366fd619cad1c6cd9ffc31268251cdabeb03dc49dbadb6796be221cc8c5b4a2");
    expect(JSON.parse(JSON.stringify(d))).toStrictEqual(d);
  });

  it("integers lose only zod's ±(2^53 - 1) bounds: chosen bounds, int32's and data stay", () => {
    const d = describeTool(
      singleResult(
        z.object({
          count: z.number().int(),
          page: z.number().int().min(1).max(500),
          small: z.int32(),
          id: z.literal(Number.MAX_SAFE_INTEGER),
          big: z.number().int().default(Number.MAX_SAFE_INTEGER),
          ratio: z.number().max(Number.MAX_SAFE_INTEGER),
        }),
      ),
    );
    expect(d.output_schema!.properties).toStrictEqual({
      count: { type: "integer" },
      page: { type: "integer", minimum: 1, maximum: 500 },
      small: { type: "integer", minimum: -2147483648, maximum: 2147483647 },
      id: { type: "number", const: Number.MAX_SAFE_INTEGER },
      big: { type: "integer", default: Number.MAX_SAFE_INTEGER },
      ratio: { type: "number", maximum: Number.MAX_SAFE_INTEGER },
    });
  });

  it("digests are the same for schemas whose keys are declared in different orders", () => {
    const a = singleResult(z.object({ id: z.string(), count: z.number(), tags: z.array(z.object({ k: z.string(), v: z.string() })) }));
    const b = singleResult(z.object({ tags: z.array(z.object({ v: z.string(), k: z.string() })), count: z.number(), id: z.string() }));
    expect(describeTool(a).output_schema_digest).toBe(describeTool(b).output_schema_digest);
    expect(canonicalJson(describeTool(a).output_schema)).toBe(canonicalJson(describeTool(b).output_schema));
  });

  it("digests change when the schema changes", () => {
    const base = describeTool(singleResult(z.object({ id: z.string(), count: z.number() }))).output_schema_digest;
    const variants = [
      z.object({ id: z.string(), count: z.number().optional() }),
      z.object({ id: z.string(), count: z.string() }),
      z.object({ id: z.string(), total: z.number() }),
      z.object({ id: z.string(), count: z.number(), more: z.boolean() }),
      z.object({ id: z.string(), count: z.number().int() }),
    ];
    const digests = variants.map((v) => describeTool(singleResult(v)).output_schema_digest);
    for (const digest of digests) expect(digest).not.toBe(base);
    expect(new Set(digests).size).toBe(variants.length);
  });

  it("returns a fresh copy each time, so a caller cannot alter the tool's descriptor", () => {
    const tool = skillViewTool(newCalls());
    const first = describeTool(tool);
    (first.input_schema as Record<string, unknown>).type = "string";
    expect(describeTool(tool).input_schema.type).toBe("object");
  });

  it("a plain tool is described by its JSON input schema (or any object) and has no output schema", () => {
    const plain = toTool({
      name: "search",
      namespace: "github",
      description: "Search issues.",
      inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
      execute: () => "",
    });
    expect(describeTool(plain)).toStrictEqual({
      id: "github.search",
      description: "Search issues.",
      input_schema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    });
    expect(describeTool(toTool({ name: "any", description: "Anything.", execute: () => "" })).input_schema).toStrictEqual({ type: "object" });
  });
});

describe("tool_info", () => {
  const tools: Tool[] = [sessionStatusTool(newCalls()), skillViewTool(newCalls()), toTool({ name: "create-issue", namespace: "github", description: "Create an issue.", execute: () => "" })];
  const info = toolInfoTool(() => tools);

  it("returns { tool: { descriptor } } as structuredContent", async () => {
    const result = await invokeTool(info, { tool_id: "session_status" }, { ctx: ctx() });
    expect(result.structuredContent).toStrictEqual({ tool: { descriptor: describeTool(tools[0]!) } });
    expect(info.hasOutput).toBe(true);
    expect(info.hasResultViews).toBe(false);
  });

  it("finds namespaced tools by id and by the path a program uses", async () => {
    for (const id of ["github.create-issue", "github.create_issue", "tools.github.create_issue"]) {
      const result = await invokeTool(info, { tool_id: id }, { ctx: ctx() });
      expect((result.structuredContent!.tool as { descriptor: { id: string } }).descriptor.id).toBe("github.create-issue");
    }
  });

  it("an unknown id fails naming the closest ids", async () => {
    const err = await invokeTool(info, { tool_id: "session_stat" }, { ctx: ctx() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect([(err as ToolError).code, (err as ToolError).reason, (err as ToolError).message]).toStrictEqual([
      "tool_invalid_input",
      "unknown_tool",
      'tool "tool_info" input "tool_id": unknown tool "session_stat"; closest: "session_status", "skill_view", "github.create-issue"',
    ]);
  });

  it("its own input is validated like any tool's", async () => {
    const err = (await invokeTool(info, {}, { ctx: ctx() }).catch((e: unknown) => e)) as ToolError;
    expect(err.message).toBe('tool "tool_info" input "tool_id" is required: expected string, received undefined');
  });

  it("rejects a list that is not a function", () => {
    expect(() => toolInfoTool([] as never)).toThrow(new TypeError('toolInfoTool: "list" must be a function returning the tools, received array'));
  });
});

describe("approval digests", () => {
  it("ignore result_view: the same digest with or without it", () => {
    const base = approvalDigest("session_status", { session_id: "s" });
    expect(approvalDigest("session_status", { session_id: "s", result_view: "full" })).toBe(base);
    expect(approvalDigest("session_status", { session_id: "s", result_view: "compact" })).toBe(base);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });

  it("ignore key order at every depth", () => {
    expect(approvalDigest("t", { a: 1, b: { x: [1, { p: 1, q: 2 }], y: null } })).toBe(approvalDigest("t", { b: { y: null, x: [1, { q: 2, p: 1 }] }, a: 1 }));
  });

  it("differ for another tool, another value, or another array order", () => {
    const base = approvalDigest("t", { a: [1, 2] });
    expect(approvalDigest("u", { a: [1, 2] })).not.toBe(base);
    expect(approvalDigest("t", { a: [1, 3] })).not.toBe(base);
    expect(approvalDigest("t", { a: [2, 1] })).not.toBe(base);
  });

  it("is pinned: stable across processes and releases", () => {
    expect(approvalDigest("session_status", { session_id: "s" })).toBe("b36b0cae7c7ad2a654b0ae7c80a36941bf7a65c097cd7852d972dd131c9cc919");
    expect(canonicalJson({ tool: "session_status", input: { session_id: "s" } })).toBe('{"input":{"session_id":"s"},"tool":"session_status"}');
  });

  it("rejects bad input naming the field", () => {
    expect(() => approvalDigest("", {})).toThrow(new TypeError('approvalDigest: "toolName" must be a non-empty string, received string'));
    expect(() => approvalDigest("t", [1])).toThrow(new TypeError('approvalDigest: "input" must be an object, received array'));
    expect(() => approvalDigest("t", { n: Infinity })).toThrow(new TypeError("canonicalJson: value at $.input.n must be a finite number, received Infinity"));
  });
});
