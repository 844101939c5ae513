import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { defineTool, invokeTool, renderDeclarations, toTool, toolInfoTool, type Tool } from "../../src/tools/index.js";
import { newCalls, sessionStatusTool, skillViewTool } from "./sample-tools.js";

const TSC = resolve("node_modules/typescript/bin/tsc");

function sampleTools(): Tool[] {
  const tools: Tool[] = [
    sessionStatusTool(newCalls()),
    skillViewTool(newCalls()),
    toTool({
      name: "create-issue",
      namespace: "github",
      description: "Create an issue. Ends a comment */ early if not escaped.",
      inputSchema: { type: "object", properties: { title: { type: "string" }, labels: { type: "array", items: { type: "string" } } }, required: ["title"] },
      execute: () => "",
    }),
    defineTool({ name: "delete", description: "A reserved word as a name.", input: z.object({ "file-path": z.string() }), execute: () => "" }),
  ];
  tools.push(toolInfoTool(() => tools));
  return tools;
}

function kitchenSink(): Tool {
  type Node = { name: string; children: Node[] };
  const node: z.ZodType<Node> = z.lazy(() => z.object({ name: z.string(), children: z.array(node) }));
  const keys = z.enum(["k1", "k2"]);
  return defineTool({
    name: "kitchen_sink",
    description: "Every schema kind zod converts, so tsc sees each rendering.",
    input: z.object({
      mode: z.enum(["a", "b"]).default("a"),
      when: z.iso.datetime().optional(),
      pair: z.tuple([z.string(), z.number()]),
      lit: z.literal(["x", 2, true]),
      map: z.record(keys, z.number()),
      partial: z.partialRecord(keys, z.number()),
      n: z.number().nullish(),
      union: z.union([z.string(), z.object({ deep: z.boolean() })]),
      pick: z.discriminatedUnion("kind", [z.object({ kind: z.literal("x"), x: z.number() }), z.object({ kind: z.literal("y") })]),
      both: z.intersection(z.object({ a: z.string() }), z.object({ b: z.string() })),
      "weird key": z.string().optional(),
      grid: z.array(z.array(z.string())),
    }),
    output: z.object({
      tree: node,
      loose: z.looseObject({ a: z.string() }),
      counts: z.record(keys, z.number()),
      sparse: z.partialRecord(keys, z.number()),
      status: z.enum(["ok", "failed"]),
      row: z.tuple([z.string(), z.number()]),
      note: z.string().readonly().optional(),
    }),
    execute: () => ({ tree: { name: "r", children: [] }, loose: { a: "" }, counts: { k1: 1, k2: 2 }, sparse: {}, status: "ok" as const, row: ["a", 1] as [string, number] }),
  });
}

function treeTool(): Tool {
  const category: z.ZodObject = z.object({
    name: z.string(),
    get subs() {
      return z.array(category);
    },
  });
  return defineTool({
    name: "tree",
    description: "A category tree.",
    input: z.object({}),
    output: category,
    execute: () => ({ name: "root", secret: 1, subs: [{ name: "leaf", subs: [], secret: 2 }] }),
  });
}

describe("renderDeclarations", () => {
  it("renders views as overloads with Input/Compact/Full types, single results inline, tools without an output as unknown", () => {
    const text = renderDeclarations(sampleTools());
    expect(text.startsWith("declare namespace tools {\n")).toBe(true);
    expect(text).toContain('  function session_status(args: session_status.Input & { result_view?: "compact" }): Promise<session_status.Compact>;\n');
    expect(text).toContain('  function session_status(args: session_status.Input & { result_view: "full" }): Promise<session_status.Full>;\n');
    expect(text).toContain('   * Resolves to the compact view; pass result_view: "full" for the full record.\n');
    expect(text).toContain("      /** The session to read. */\n      session_id: string;\n");
    expect(text).toContain("  /** Read one skill. */\n  function skill_view(args: {\n    skill: string;\n    max_lines?: number;\n  }): Promise<{\n    name: string;\n    lines: number;\n  }>;\n");
    expect(text).toContain("  namespace github {\n");
    // No output schema: a program gets whatever the tool returned, so nothing is promised.
    expect(text).toContain("    function create_issue(args: {\n      title: string;\n      labels?: string[];\n    }): Promise<unknown>;\n");
    expect(text).toContain("Resolves to the value the tool returns (no declared type: check it before use).");
    expect(text).toContain("Ends a comment *\\/ early if not escaped.");
    expect(text).toContain('  function delete_(args: {\n    "file-path": string;\n  }): Promise<unknown>;\n');
  });

  it("type-checks with tsc together with a correct program, and fails on a program that reads a field the compact view lacks", () => {
    const dir = mkdtempSync(join(tmpdir(), "codemode-decl-"));
    try {
      writeFileSync(join(dir, "tools.d.ts"), renderDeclarations([...sampleTools(), kitchenSink(), treeTool()]));
      writeFileSync(
        join(dir, "pass.ts"),
        [
          "export async function main(): Promise<string> {",
          '  const s = await tools.session_status({ session_id: "s" });',
          "  const id: string = s.session.id;",
          "  const generation: number | undefined = s.session.runtime.generation;",
          '  const full = await tools.session_status({ session_id: "s", result_view: "full" });',
          "  const policy: string[] = full.session.lineage.permission_policy.tools;",
          '  const skill = await tools.skill_view({ skill: "k" });',
          "  const lines: number = skill.lines;",
          '  const created: unknown = await tools.github.create_issue({ title: "bug", labels: ["p1"] });',
          '  const removed: unknown = await tools.delete_({ "file-path": "a.txt" });',
          '  const info = await tools.tool_info({ tool_id: "skill_view" });',
          "  const digest: string | undefined = info.tool.descriptor.output_schema_digest;",
          '  const sink = await tools.kitchen_sink({ pair: ["a", 1], lit: 2, map: { k1: 1, k2: 2 }, partial: {}, union: { deep: true }, pick: { kind: "y" }, both: { a: "a", b: "b" }, "weird key": "w", grid: [["x"]] });',
          "  const a: string = sink.loose.a;",
          "  const extra: unknown = sink.loose.anything;",
          "  const k1: number = sink.counts.k1;",
          "  const maybe: number | undefined = sink.sparse.k2;",
          '  const status: "ok" | "failed" = sink.status;',
          "  const row: [string, number] = sink.row;",
          "  const grandchild: string | undefined = sink.tree.children[0]?.children[0]?.name;",
          "  const node: tools.kitchen_sink.Output___schema0 = sink.tree;",
          "  const leaf: string | undefined = (await tools.tree()).subs[0]?.subs[0]?.name;",
          "  return [id, generation, policy, lines, String(created), String(removed), digest, a, extra, k1, maybe, status, row, grandchild, node.name, leaf].join();",
          "}",
          "",
        ].join("\n"),
      );
      writeFileSync(
        join(dir, "fail.ts"),
        ["export async function main(): Promise<string[]> {", '  const s = await tools.session_status({ session_id: "s" });', "  return s.session.lineage.permission_policy.tools;", "}", ""].join(
          "\n",
        ),
      );
      for (const name of ["pass", "fail"]) {
        const compilerOptions = { noEmit: true, strict: true, target: "es2022", lib: ["es2022"], types: [], pretty: false };
        writeFileSync(join(dir, `${name}.json`), JSON.stringify({ compilerOptions, files: ["tools.d.ts", `${name}.ts`] }));
      }
      const pass = spawnSync(process.execPath, [TSC, "-p", "pass.json"], { cwd: dir, encoding: "utf8" });
      expect(pass.stdout + pass.stderr).toBe("");
      expect(pass.status).toBe(0);
      const fail = spawnSync(process.execPath, [TSC, "-p", "fail.json"], { cwd: dir, encoding: "utf8" });
      expect(fail.status).not.toBe(0);
      const errors = fail.stdout.trim().split("\n");
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(/^fail\.ts\(3,20\): error TS2339: Property 'lineage' does not exist on type '\{/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("declares recursive schemas through aliases in the tool's namespace", () => {
    const text = renderDeclarations([kitchenSink()]);
    expect(text).toContain("  }): Promise<{\n    tree: kitchen_sink.Output___schema0;\n");
    expect(text).toContain("  namespace kitchen_sink {\n    type Output___schema0 = {\n      name: string;\n      children: kitchen_sink.Output___schema0[];\n    };\n  }\n");
  });

  it("declares a schema that refers to itself through an alias of its own", () => {
    expect(renderDeclarations([treeTool()])).toBe(
      [
        "declare namespace tools {",
        "  /** A category tree. */",
        "  function tree(args?: {}): Promise<tree.Output>;",
        "  namespace tree {",
        "    type Output = {",
        "      name: string;",
        "      subs: tree.Output[];",
        "    };",
        "  }",
        "}",
        "",
      ].join("\n"),
    );
  });

  it("projects through a self-referring schema, dropping undeclared keys at every depth", async () => {
    const result = await invokeTool(treeTool(), {}, { ctx: { signal: new AbortController().signal, callId: "c", runId: "r", depth: 0 } });
    expect(result.structuredContent).toStrictEqual({ name: "root", subs: [{ name: "leaf", subs: [] }] });
  });

  it("over budget: one line for every tool that fits, full declarations for what fits besides, within the budget", () => {
    const tools = sampleTools();
    const full = renderDeclarations(tools);
    const budget = 1200;
    const text = renderDeclarations(tools, { budgetBytes: budget });
    expect(Buffer.byteLength(full)).toBeGreaterThan(budget);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(budget);
    expect(text).toContain("  // 2 tools are declared with one line only (over the declarations budget): tool_info({ tool_id }) one tool's schemas.\n");
    // One line: a signature that still type-checks, and the first line of the description.
    expect(text).toContain("  function session_status(args?: object): Promise<unknown>; // Read one session.\n");
    expect(text).toContain("  function tool_info(args?: object): Promise<unknown>; // Describe one tool: its input schema and the JSON Schema of what it returns (output_schema is the…\n");
    expect(text).toContain("  /** Read one skill. */\n  function skill_view(args: {\n");
    expect(text).toContain("    function create_issue(args: {\n");
    // Smaller: fewer full declarations, then fewer lines; the rest are counted, never over the budget.
    for (const small of [600, 300, 200]) {
      const cut = renderDeclarations(tools, { budgetBytes: small });
      expect(Buffer.byteLength(cut), `${small}`).toBeLessThanOrEqual(small);
    }
    expect(renderDeclarations(tools, { budgetBytes: 700 })).toBe(
      [
        "declare namespace tools {",
        "  // Every tool is declared with one line only (over the declarations budget): tool_info({ tool_id }) one tool's schemas.",
        "  function session_status(args?: object): Promise<unknown>; // Read one session.",
        "  function skill_view(args?: object): Promise<unknown>; // Read one skill.",
        "  function delete_(args?: object): Promise<unknown>; // A reserved word as a name.",
        "  function tool_info(args?: object): Promise<unknown>; // Describe one tool: its input schema and the JSON Schema of what it returns (output_schema is the…",
        "  namespace github {",
        "    function create_issue(args?: object): Promise<unknown>; // Create an issue. Ends a comment */ early if not escaped.",
        "  }",
        "}",
        "",
      ].join("\n"),
    );
    // So small that no line fits: the note alone says how many tools there are.
    expect(renderDeclarations(tools, { budgetBytes: 100 })).toBe("declare namespace tools {\n  // 5 more tools are not declared here.\n}\n");
    expect(renderDeclarations(tools, { budgetBytes: Infinity })).toBe(full);
  });

  it("rejects tools whose identifiers collide, and a bad budget", () => {
    const a = toTool({ name: "my-tool", description: "A.", execute: () => "" });
    const b = toTool({ name: "my_tool", description: "B.", execute: () => "" });
    expect(() => renderDeclarations([a, b])).toThrow(new TypeError('renderDeclarations: tools "my-tool" and "my_tool" both become tools.my_tool; rename one'));
    const github = toTool({ name: "github", description: "G.", execute: () => "" });
    const search = toTool({ name: "search", namespace: "github", description: "S.", execute: () => "" });
    expect(() => renderDeclarations([github, search])).toThrow(new TypeError('renderDeclarations: tool "github" and namespace "github" both become tools.github; rename one'));
    expect(() => renderDeclarations([a], { budgetBytes: 0 })).toThrow(new TypeError('renderDeclarations: "options.budgetBytes" must be a positive integer (or Infinity), received 0'));
    expect(() => renderDeclarations([{} as Tool])).toThrow(new TypeError("renderDeclarations: tools[0] must be a tool created by defineTool() or toTool(), received object"));
  });
});
