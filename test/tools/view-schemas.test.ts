// compact ⊆ full is checked always: on the two schemas when the tool is defined, and per result
// only where the schemas could not prove it.
import { describe, it, expect } from "vitest";
import { z } from "zod";
import { defineTool, invokeTool, projectViews, workspaceTools, type Tool, type ToolContext } from "../../src/index.js";
import { AgentRegistry, TaskHost, memoryTaskStore } from "../../src/tasks/index.js";
import { ptcTools } from "../../src/ptc/index.js";
import { ptcWorkflowTool } from "../../src/workflow/index.js";
import { DEFAULT_LIMITS } from "../../src/codemode/limits.js";
import { checkViewSchemas } from "../../src/tools/view-schemas.js";
import { toolInternals } from "../../src/tools/define.js";

const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "c", runId: "r", depth: 0 });

function viewsTool(compact: z.ZodObject, full: z.ZodObject, record: unknown = {}): Tool {
  return defineTool({ name: "t", description: "d", input: z.object({}), views: { compact, full }, execute: () => record as Record<string, unknown> });
}

const refusal = (compact: z.ZodObject, full: z.ZodObject) => {
  try {
    viewsTool(compact, full);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("expected defineTool to refuse the views");
};

describe("defineTool refuses views whose compact result could differ from the full one", () => {
  it("the same type at the same path", () => {
    expect(refusal(z.object({ a: z.string() }), z.object({ a: z.number() }))).toBe(
      'defineTool: $.a is string in "views.compact" but number in "views.full": a compact field must have the same type as the full one at the same path',
    );
    expect(refusal(z.object({ rows: z.array(z.object({ n: z.number() })) }), z.object({ rows: z.array(z.object({ n: z.int() })) }))).toBe(
      'defineTool: $.rows[].n is number in "views.compact" but integer in "views.full": a compact field must have the same type as the full one at the same path',
    );
    // null in the compact result where the full one would leave the key out.
    expect(refusal(z.object({ a: z.string().nullable() }), z.object({ a: z.string().optional() }))).toBe(
      'defineTool: $.a is string | null in "views.compact" but string in "views.full": a compact field must have the same type as the full one at the same path',
    );
    expect(refusal(z.object({ a: z.unknown() }), z.object({ a: z.string() }))).toBe(
      'defineTool: $.a is unknown in "views.compact" but string in "views.full": a compact field must have the same type as the full one at the same path',
    );
  });

  it("a default only the compact view applies ({ n: 5 } against {}) is refused; the same default in both is applied to both", async () => {
    expect(refusal(z.object({ n: z.number().default(5) }), z.object({ n: z.number().optional() }))).toBe(
      'defineTool: "views.compact" gives $.n .default(5) and "views.full" has none: a record without that field would read differently in the two results; give $.n the same default in both views, or none in "views.compact"',
    );
    expect(refusal(z.object({ n: z.number().default(5) }), z.object({ n: z.number().default(6) }))).toBe(
      'defineTool: "views.compact" gives $.n .default(5) and "views.full" has .default(6): a record without that field would read differently in the two results; give $.n the same default in both views, or none in "views.compact"',
    );
    const tool = viewsTool(z.object({ n: z.number().default(5) }), z.object({ n: z.number().default(5), more: z.string().optional() }));
    expect(projectViews(tool, {})).toStrictEqual({ compact: { n: 5 }, full: { n: 5 } });
    // A default only the full view has cannot put anything in the compact result: allowed.
    expect(projectViews(viewsTool(z.object({ id: z.string() }), z.object({ id: z.string(), n: z.number().default(1) })), { id: "a" })).toStrictEqual({
      compact: { id: "a" },
      full: { id: "a", n: 1 },
    });
  });

  it('a transform on one side only ("x" against "  x  ") is refused; one schema object in both views is applied to both', async () => {
    expect(refusal(z.object({ a: z.string().trim() }), z.object({ a: z.string() }))).toBe(
      'defineTool: $.a changes values in "views.compact" (an overwrite such as .trim() or .toLowerCase()) but not the same way in "views.full": the two results would hold different values there; use one schema object for $.a in both views (e.g. full: compact.extend({ ... }))',
    );
    expect(refusal(z.object({ a: z.string() }), z.object({ a: z.string().toLowerCase() }))).toBe(
      'defineTool: $.a changes values in "views.full" (an overwrite such as .trim() or .toLowerCase()) but not the same way in "views.compact": the two results would hold different values there; use one schema object for $.a in both views (e.g. full: compact.extend({ ... }))',
    );
    // Two separate .trim() calls are two functions: the walk cannot know they agree.
    expect(refusal(z.object({ a: z.string().trim() }), z.object({ a: z.string().trim() }))).toContain('$.a changes values in "views.compact"');
    expect(refusal(z.object({ a: z.coerce.string() }), z.object({ a: z.string() }))).toContain("(a coercion (z.coerce))");
    expect(refusal(z.object({ a: z.string().catch("?") }), z.object({ a: z.string() }))).toContain("(a .catch() fallback)");
    expect(refusal(z.object({ a: z.string().pipe(z.string()) }), z.object({ a: z.string() }))).toContain("(a .pipe())");
    expect(refusal(z.object({ a: z.union([z.string().trim(), z.number()]) }), z.object({ a: z.union([z.string(), z.number()]) }))).toBe(
      'defineTool: "views.compact" has an overwrite such as .trim() or .toLowerCase() at $.a, inside a union or intersection that is not the same schema object in both views: the two results could hold different values there; use one schema object for $.a in both views',
    );
    const trimmed = z.string().trim();
    const compact = z.object({ a: trimmed });
    const tool = viewsTool(compact, compact.extend({ b: z.number() }), { a: "  x  ", b: 1 });
    expect(projectViews(tool, { a: "  x  ", b: 1 })).toStrictEqual({ compact: { a: "x" }, full: { a: "x", b: 1 } });
    expect((await invokeTool(tool, {}, { ctx: ctx() })).structuredContent).toStrictEqual({ a: "x" });
    expect((await invokeTool(tool, { result_view: "full" }, { ctx: ctx() })).structuredContent).toStrictEqual({ a: "x", b: 1 });
  });

  it("keys the full view drops, at any depth, open parts included", () => {
    expect(refusal(z.object({ meta: z.looseObject({ a: z.string() }) }), z.object({ meta: z.object({ a: z.string() }) }))).toBe(
      'defineTool: "views.compact" keeps undeclared keys at $.meta (a loose object, catchall or record), which "views.full" drops: make $.meta keep them in "views.full" too',
    );
    expect(refusal(z.object({ m: z.record(z.string(), z.number()) }), z.object({ m: z.record(z.string(), z.string()) }))).toBe(
      'defineTool: $.m[*] is number in "views.compact" but string in "views.full": a compact field must have the same type as the full one at the same path',
    );
    // A full view that keeps the value whole may hold anything the compact one prunes it to, not a default it adds.
    expect(refusal(z.object({ meta: z.object({ n: z.number().default(0) }) }), z.object({ meta: z.unknown() }))).toBe(
      'defineTool: "views.compact" has a .default(0) at $.meta.n inside a value "views.full" keeps as it is: the compact result could hold what the full one does not; remove it from "views.compact"',
    );
  });
});

describe("the per-result check", () => {
  it("is empty for every tool the runtime ships: compact ⊆ full is proven for them when they are defined", () => {
    const host = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents: [], dirs: [] }) });
    const tools = [...ptcTools(host), ptcWorkflowTool({ host, tools: () => [], limits: DEFAULT_LIMITS }), ...workspaceTools({ root: process.cwd(), write: true })];
    const unproven: Record<string, number> = {};
    for (const tool of tools) {
      if (!tool.hasResultViews) continue;
      unproven[tool.name] = toolInternals(tool).subsetChecks?.length ?? 0;
    }
    expect(unproven).toStrictEqual({
      ptc_subagent: 0,
      ptc_task_list: 0,
      ptc_task_output: 0,
      ptc_task_stop: 0,
      ptc_task_wait: 0,
      ptc_workflow: 0,
      read_file: 0,
      search_files: 0,
      list_files: 0,
      write_file: 0,
    });
    void host.close();
  });

  it("compares only the subtrees it could not prove: a union's options", () => {
    const compact = z.object({ id: z.string(), rows: z.array(z.object({ v: z.union([z.object({ a: z.string(), b: z.string() }), z.string()]) })) });
    const full = z.object({ id: z.string(), rows: z.array(z.object({ v: z.union([z.object({ a: z.string() }), z.string()]), w: z.number() })) });
    const check = checkViewSchemas(compact, full);
    expect(check.residuals.map((r) => r.path)).toStrictEqual(["$.rows[].v"]);
  });
});
