// The runtime's own tools work out their JSON Schemas, digests, descriptors and ptc_run_code's
// declarations at the first read instead of in createCodemode (src/tools/define.ts, SchemaTiming).
// What a reader gets must be what the eager conversion gives, and a host's tools keep failing
// where they always did: in defineTool, or in createCodemode.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { BINDING_CONTRACT, createCodemode, defineTool, describeTool, renderDeclarations, toolInfoTool, toolSearchTool, type Codemode, type Tool, type ToolDescriptor } from "../../src/index.js";
import { digestOf } from "../../src/tools/canonical.js";
import { defineBuiltinTool, toolInternals, type TextToolDefinition } from "../../src/tools/define.js";
import { jsonSchemaOf, RESULT_VIEW_PROPERTY } from "../../src/tools/schema.js";

let cm: Codemode | undefined;
afterEach(async () => {
  await cm?.close();
  cm = undefined;
});

/** The descriptor as defineTool has always built it, converted here from the tool's zod schemas. */
function eagerDescriptor(tool: Tool): ToolDescriptor {
  const impl = toolInternals(tool);
  const view = (schema: z.core.$ZodObject, field: string) => {
    const json = jsonSchemaOf(schema, "output", field);
    return { schema: json, digest: digestOf(json) };
  };
  const input = jsonSchemaOf(impl.input!, "input", 'defineTool: "input"');
  const descriptor: ToolDescriptor = {
    id: tool.id,
    description: tool.description,
    input_schema: impl.views ? { ...input, properties: { ...((input.properties as object | undefined) ?? {}), result_view: RESULT_VIEW_PROPERTY } } : input,
  };
  if (impl.views) {
    const compact = view(impl.views.compact.zod, 'defineTool: "views.compact"');
    const full = view(impl.views.full.zod, 'defineTool: "views.full"');
    descriptor.output_schema = compact.schema;
    descriptor.output_schema_digest = compact.digest;
    descriptor.output_views = { compact, full };
  } else if (impl.output) {
    const output = view(impl.output.zod, 'defineTool: "output"');
    descriptor.output_schema = output.schema;
    descriptor.output_schema_digest = output.digest;
  }
  return descriptor;
}

function deeplyFrozen(value: unknown): boolean {
  if (value === null || typeof value !== "object") return true;
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
}

describe("the runtime's own tools", () => {
  it("every one of them converts, and its descriptor is the eager conversion's, frozen, worked out once", async () => {
    cm = await createCodemode({ workers: { min: 0 }, agents: [{ name: "helper", description: "Helps.", driver: "function", run: async () => "done" }] });
    const tools = [...cm.toolList(), toolInfoTool(() => []), toolSearchTool(() => [])];
    expect(tools.map((tool) => tool.id)).toEqual(
      expect.arrayContaining(["ptc_subagent", "ptc_task_list", "ptc_task_output", "ptc_task_stop", "ptc_task_wait", "ptc_workflow", "tool_info", "tool_search", "ptc_run_code"]),
    );
    for (const tool of tools) {
      const impl = toolInternals(tool);
      const read = impl.descriptor;
      expect(read, tool.id).toEqual(eagerDescriptor(tool));
      expect(deeplyFrozen(read), tool.id).toBe(true);
      // Cached: the same objects at every read, and the views' schemas are the descriptor's.
      expect(impl.descriptor).toBe(read);
      if (impl.output) expect(impl.output.schema).toBe(read.output_schema);
      if (impl.views) expect(impl.views.full.schema).toBe(read.output_views!.full.schema);
      expect(describeTool(tool)).toEqual(read);
    }
  });

  it("ptc_run_code's description carries the declarations of the tools there were at set-up, whenever it is read", async () => {
    const lookup = defineTool({ name: "lookup", description: "Look one up.", input: z.object({ id: z.string() }), output: z.object({ found: z.boolean() }), execute: () => ({ found: true }) });
    cm = await createCodemode({ tools: [lookup], workers: { min: 0 } });
    const expected = `${BINDING_CONTRACT}\n\nTools a program can call:\n${cm.declarations()}`;
    // A tool added afterwards is not in a description that was fixed at set-up.
    cm.addTools([defineTool({ name: "later", description: "Added later.", input: z.object({}), execute: () => "" })], "host");
    const run = cm.toolList().find((tool) => tool.id === "ptc_run_code")!;
    expect(run.description).toBe(expected);
    expect(run.description).toBe(expected);
    expect(run.description).not.toContain("later");
    expect(describeTool(run).description).toBe(expected);
    // A tool like any other: frozen, its keys in the usual order.
    expect(Object.isFrozen(run)).toBe(true);
    expect(Object.keys(run)).toEqual(["name", "id", "path", "description", "title", "annotations", "hasOutput", "hasResultViews"]);
    expect(JSON.parse(JSON.stringify(run)).description).toBe(expected);
  });

  it("a host tool and a namespace at one path still fail createCodemode, naming both", async () => {
    const execute = () => "";
    await expect(
      createCodemode({
        tools: [
          { name: "github", description: "g", execute },
          { name: "x", namespace: "github", description: "x", execute },
        ],
        workers: { min: 0 },
      }),
    ).rejects.toThrow(new TypeError('renderDeclarations: tool "github" and namespace "github" both become tools.github; rename one'));
  });
});

describe("defineBuiltinTool", () => {
  const execute = () => ({});
  const definitions: Array<[string, TextToolDefinition<z.ZodObject>]> = [
    ["text", { name: "text_tool", description: "Text.", input: z.object({ b: z.string().optional(), a: z.number().int() }), execute }],
    [
      "output",
      {
        name: "out_tool",
        namespace: "ns",
        title: "Out",
        annotations: { readOnlyHint: true },
        description: "Output.",
        input: z.object({ q: z.string().describe("what") }),
        output: z.object({ z: z.string(), a: z.array(z.number().int()).optional() }),
        execute,
      } as never,
    ],
    [
      "views",
      {
        name: "views_tool",
        description: "Views.",
        input: z.object({ q: z.string() }),
        views: { compact: z.object({ a: z.string() }), full: z.object({ a: z.string(), b: z.record(z.string(), z.unknown()) }) },
        execute,
      } as never,
    ],
  ];
  for (const [kind, def] of definitions) {
    it(`gives a ${kind} tool what defineTool gives, read in either order`, () => {
      const eager = defineTool(def);
      const descriptorFirst = defineBuiltinTool(def);
      const declarationsFirst = defineBuiltinTool(def);
      const declarations = renderDeclarations([declarationsFirst]);
      expect(describeTool(descriptorFirst)).toEqual(describeTool(eager));
      expect(renderDeclarations([descriptorFirst])).toBe(renderDeclarations([eager]));
      expect(declarations).toBe(renderDeclarations([eager]));
      expect(describeTool(declarationsFirst)).toEqual(describeTool(eager));
      for (const lazy of [descriptorFirst, declarationsFirst]) {
        expect(JSON.stringify(lazy)).toBe(JSON.stringify(eager));
        expect(toolInternals(lazy).inputJsonSchema).toEqual(toolInternals(eager).inputJsonSchema);
        expect(Object.isFrozen(toolInternals(lazy).inputJsonSchema)).toBe(Object.isFrozen(toolInternals(eager).inputJsonSchema));
        expect(deeplyFrozen(toolInternals(lazy).descriptor)).toBe(true);
      }
    });
  }

  it("a description tail is read once, at the description's first read", () => {
    let calls = 0;
    const tool = defineBuiltinTool({ name: "tailed", description: "Head. ", input: z.object({}), execute }, { descriptionTail: () => `tail ${++calls}` });
    expect(calls).toBe(0);
    expect(tool.description).toBe("Head. tail 1");
    expect(describeTool(tool).description).toBe("Head. tail 1");
    expect(calls).toBe(1);
  });
});

describe("a host's tools", () => {
  const execute = (): never => {
    throw new Error("never called");
  };
  // Still converted in defineTool: a schema with no JSON form throws there, in the order it always did.
  const bad: Array<[string, () => Tool, string]> = [
    [
      "an input with no JSON form",
      () => defineTool({ name: "a", description: "d", input: z.object({ at: z.date() }), execute }),
      'defineTool: "input" cannot be represented as JSON Schema: Date cannot be represented in JSON Schema',
    ],
    [
      "an output with no JSON form, before the input",
      () => defineTool({ name: "a", description: "d", input: z.object({ at: z.date() }), output: z.object({ n: z.bigint() }), execute }),
      'defineTool: "output" cannot be represented as JSON Schema: BigInt cannot be represented in JSON Schema',
    ],
    [
      "a compact view with no JSON form, before the views promise",
      () => defineTool({ name: "a", description: "d", input: z.object({}), views: { compact: z.object({ n: z.date(), extra: z.string() }), full: z.object({}) }, execute }),
      'defineTool: "views.compact" cannot be represented as JSON Schema: Date cannot be represented in JSON Schema',
    ],
    [
      "a full view with no JSON form",
      () => defineTool({ name: "a", description: "d", input: z.object({}), views: { compact: z.object({}), full: z.object({ n: z.date() }) }, execute }),
      'defineTool: "views.full" cannot be represented as JSON Schema: Date cannot be represented in JSON Schema',
    ],
  ];
  for (const [name, define, message] of bad) {
    it(`throws from defineTool for ${name}`, () => {
      expect(define).toThrow(new TypeError(message));
    });
  }

  it("keep the descriptor defineTool has always built, frozen", () => {
    const tool = defineTool({ name: "a", description: "d", input: z.object({ q: z.string() }), output: z.object({ n: z.number() }), execute });
    const impl = toolInternals(tool);
    expect(impl.output!.schema).toBe(impl.descriptor.output_schema);
    expect(deeplyFrozen(impl.descriptor)).toBe(true);
    expect(impl.descriptor).toEqual(eagerDescriptor(tool));
  });
});
