import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { z } from "zod";
import {
  defineTool,
  invokeTool,
  invokeToolForProgram,
  toTool,
  toolResult,
  ToolError,
  type PostCallEvent,
  type PreCallEvent,
  type PostErrorEvent,
  type ToolContext,
  type ToolHooks,
} from "../../src/tools/index.js";
import { newCalls, sampleRecord, sessionStatusTool, skillViewTool } from "./sample-tools.js";

const ctx = (signal: AbortSignal = new AbortController().signal): ToolContext => ({ signal, callId: "call-1", runId: "run-1", depth: 0 });

const COMPACT = {
  session: {
    id: "sess-example",
    name: "Fix flaky upload test",
    state: "active",
    branch: "fix/upload-flake",
    runtime: { status: "ready", generation: 3, selection_revision: 2 },
    pending_interactions: [{ interaction_id: "int-52c1", kind: "permission", title: "Run make test" }],
    archived_at: null,
  },
};

const FULL = {
  session: {
    id: "sess-example",
    name: "Fix flaky upload test",
    state: "active",
    branch: "fix/upload-flake",
    runtime: { status: "ready", generation: 3, selection_revision: 2, acp_caps: ["fs", "terminal"] },
    pending_interactions: [{ interaction_id: "int-52c1", kind: "permission", title: "Run make test", provider_request_id: "req-9" }],
    archived_at: null,
    lineage: { root_session_id: "sess-example", permission_policy: { tools: ["read_file", "bash"] } },
    diagnostics: { last_heartbeat_ms: 120, notes: ["warm"] },
  },
};

async function rejection(promise: Promise<unknown>): Promise<ToolError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ToolError);
    return err as ToolError;
  }
  throw new Error("expected the call to reject");
}

describe("result views", () => {
  it("returns the compact view by default: the whole three channels pinned", async () => {
    const tool = sessionStatusTool(newCalls());
    const result = await invokeTool(tool, { session_id: "sess-example" }, { ctx: ctx() });
    // Without toModelOutput the model is sent the JSON of the full record (docs/tool-contract.md#model-output-fail-soft, the last resort).
    expect(result).toStrictEqual({
      content: [{ type: "text", text: JSON.stringify(sampleRecord()) }],
      structuredContent: COMPACT,
      details: sampleRecord(),
    });
    expect(Object.hasOwn(result.structuredContent!.session as object, "lineage")).toBe(false);
    expect(Object.hasOwn(result.structuredContent!.session as object, "stop_reason")).toBe(false);
    expect(Object.hasOwn(result, "isError")).toBe(false);
    expect(Object.hasOwn(result, "warnings")).toBe(false);
    expect(JSON.parse(JSON.stringify(result.structuredContent))).toStrictEqual(result.structuredContent);
  });

  it('returns the full record for result_view "full", and passes execute the input without the selector', async () => {
    const calls = newCalls();
    const tool = sessionStatusTool(calls);
    const result = await invokeTool(tool, { session_id: "sess-example", result_view: "full" }, { ctx: ctx() });
    expect(result.structuredContent).toStrictEqual(FULL);
    expect(result.content).toStrictEqual([{ type: "text", text: JSON.stringify(sampleRecord()) }]);
    expect(JSON.parse(JSON.stringify(result.structuredContent))).toStrictEqual(FULL);
    expect(calls.inputs).toStrictEqual([{ session_id: "sess-example" }]);
  });

  it('accepts an explicit "compact"', async () => {
    const result = await invokeTool(sessionStatusTool(newCalls()), { session_id: "s", result_view: "compact" }, { ctx: ctx() });
    expect(result.structuredContent).toStrictEqual(COMPACT);
  });

  it("omits optional keys the record lacks, and those it sets to null or undefined, instead of writing null", async () => {
    const record = sampleRecord();
    delete record.session.branch;
    delete record.session.runtime.generation;
    (record.session as Record<string, unknown>).stop_reason = undefined;
    delete record.session.diagnostics;
    const tool = sessionStatusTool(newCalls(), () => ({ ...record, session: { ...record.session, stop_reason: null } }));
    const compact = await invokeTool(tool, { session_id: "s" }, { ctx: ctx() });
    const session = compact.structuredContent!.session as Record<string, unknown>;
    for (const key of ["branch", "stop_reason"]) expect(Object.hasOwn(session, key)).toBe(false);
    expect(Object.hasOwn(session.runtime as object, "generation")).toBe(false);
    // archived_at is declared nullable: its null is a value, not an absence.
    expect(session.archived_at).toBe(null);
    const full = await invokeTool(tool, { session_id: "s", result_view: "full" }, { ctx: ctx() });
    expect(Object.hasOwn(full.structuredContent!.session as object, "diagnostics")).toBe(false);
    expect(JSON.parse(JSON.stringify(full.structuredContent))).toStrictEqual(full.structuredContent);
  });

  it("a pinned view is used when the input names none", async () => {
    const result = await invokeTool(sessionStatusTool(newCalls()), { session_id: "s" }, { ctx: ctx(), pinnedResultView: "full" });
    expect(result.structuredContent).toStrictEqual(FULL);
  });

  it("refuses, on every call, a compact result that is not a subset of the full one where the schemas could not prove it", async () => {
    // Two different unions: defineTool cannot pair their options, so this subtree is checked per result.
    const compact = z.object({ id: z.string(), v: z.union([z.object({ a: z.string(), b: z.string() }), z.string()]) });
    const full = z.object({ id: z.string(), v: z.union([z.object({ a: z.string() }), z.string()]) });
    let record: Record<string, unknown> = { id: "a", v: { a: "x", b: "y" } };
    const tool = defineTool({
      name: "leaky",
      description: "Compact keeps a key the full union drops.",
      input: z.object({}),
      views: { compact, full },
      execute: () => record as z.infer<typeof compact>,
    });
    for (const development of [false, true]) {
      const err = await rejection(invokeTool(tool, {}, { ctx: ctx(), development }));
      expect({ code: err.code, reason: err.reason, message: err.message }).toStrictEqual({
        code: "tool_output_invalid",
        reason: "view_not_subset",
        message: 'tool "leaky" compact view is not a subset of its full view: compact view has $.v.b, the full view does not',
      });
    }
    // The full view itself is fine, and a record the promise holds for passes.
    expect((await invokeTool(tool, { result_view: "full" }, { ctx: ctx() })).structuredContent).toStrictEqual({ id: "a", v: { a: "x" } });
    record = { id: "a", v: "plain" };
    expect((await invokeTool(tool, {}, { ctx: ctx() })).structuredContent).toStrictEqual({ id: "a", v: "plain" });
  });
});

describe("the input error table of docs/tool-contract.md: exact code, reason and message, and the tool does not run", () => {
  const rows: { name: string; tool: "views" | "single"; input: Record<string, unknown>; code: string; reason: string; message: string }[] = [
    {
      name: "unknown result_view value",
      tool: "views",
      input: { session_id: "s", result_view: "everything" },
      code: "tool_invalid_input",
      reason: "schema_invalid",
      message: 'tool "session_status" input "result_view" must be one of "compact", "full"',
    },
    {
      name: "result_view is not a string",
      tool: "views",
      input: { session_id: "s", result_view: 1 },
      code: "tool_invalid_input",
      reason: "schema_invalid",
      message: 'tool "session_status" input "result_view" must be one of "compact", "full"',
    },
    {
      name: "result_view is null",
      tool: "views",
      input: { session_id: "s", result_view: null },
      code: "tool_invalid_input",
      reason: "schema_invalid",
      message: 'tool "session_status" input "result_view" must be one of "compact", "full"',
    },
    {
      name: "result_view sent to a single-result tool",
      tool: "single",
      input: { skill: "k", result_view: "full" },
      code: "tool_invalid_input",
      reason: "schema_invalid",
      message: 'tool "skill_view" returns a single result and does not accept "result_view"',
    },
  ];
  for (const row of rows) {
    it(row.name, async () => {
      const calls = newCalls();
      const tool = row.tool === "views" ? sessionStatusTool(calls) : skillViewTool(calls);
      const err = await rejection(invokeTool(tool, row.input, { ctx: ctx() }));
      expect({ name: err.name, code: err.code, reason: err.reason, message: err.message }).toStrictEqual({
        name: "ToolError",
        code: row.code,
        reason: row.reason,
        message: row.message,
      });
      expect(calls.count).toBe(0);
    });
  }

  it("a hook that changes a pinned view is denied with tool_denied / result_view_pinned", async () => {
    const calls = newCalls();
    const seen: PreCallEvent[] = [];
    const hooks: ToolHooks = {
      preCall: (event) => {
        seen.push(event);
        return { input: { ...event.input, result_view: "full" } };
      },
    };
    const err = await rejection(invokeTool(sessionStatusTool(calls), { session_id: "s" }, { ctx: ctx(), hooks, pinnedResultView: "compact" }));
    expect({ code: err.code, reason: err.reason, message: err.message }).toStrictEqual({
      code: "tool_denied",
      reason: "result_view_pinned",
      message: 'tool "session_status" result view is pinned to "compact" by the caller',
    });
    expect(calls.count).toBe(0);
    expect(seen[0]!.pinned_result_view).toBe("compact");
    expect(seen[0]!.has_result_views).toBe(true);
  });

  it("a hook patch that adds result_view to a single-result tool fails with the single-result error", async () => {
    const calls = newCalls();
    const hooks: ToolHooks = { preCall: (event) => ({ input: { ...event.input, result_view: "full" } }) };
    const err = await rejection(invokeTool(skillViewTool(calls), { skill: "k" }, { ctx: ctx(), hooks }));
    expect([err.code, err.reason, err.message]).toStrictEqual(["tool_invalid_input", "schema_invalid", 'tool "skill_view" returns a single result and does not accept "result_view"']);
    expect(calls.count).toBe(0);
  });

  it("a tool whose own input declares result_view is not inspected", async () => {
    const tool = defineTool({
      name: "own_selector",
      description: "Has its own result_view input.",
      input: z.object({ result_view: z.number() }),
      execute: ({ result_view }) => `got ${result_view}`,
    });
    const result = await invokeTool(tool, { result_view: 7 }, { ctx: ctx() });
    expect(result.content).toStrictEqual([{ type: "text", text: "got 7" }]);
  });
});

describe("input validation", () => {
  const cases: { input: unknown; message: string }[] = [
    { input: { skill: 3 }, message: 'tool "skill_view" input "skill" must be string, received number' },
    { input: {}, message: 'tool "skill_view" input "skill" is required: expected string, received undefined' },
    { input: { skill: "k", max_lines: "ten" }, message: 'tool "skill_view" input "max_lines" must be number, received string' },
    { input: { skill: "k", max_lines: -1 }, message: 'tool "skill_view" input "max_lines" is invalid: Too small: expected number to be >0' },
    { input: [1], message: 'tool "skill_view" input must be an object, received array' },
    { input: "skill", message: 'tool "skill_view" input must be an object, received string' },
    { input: null, message: 'tool "skill_view" input must be an object, received null' },
  ];
  for (const { input, message } of cases) {
    it(`rejects ${JSON.stringify(input)} naming the field, the expected and the received type`, async () => {
      const calls = newCalls();
      const err = await rejection(invokeTool(skillViewTool(calls), input, { ctx: ctx() }));
      expect([err.code, err.reason, err.message]).toStrictEqual(["tool_invalid_input", "schema_invalid", message]);
      expect(calls.count).toBe(0);
    });
  }

  it("names nested paths and lists every problem", async () => {
    const tool = defineTool({
      name: "nested",
      description: "Nested input.",
      input: z.object({ filter: z.object({ tags: z.array(z.string()), mode: z.enum(["any", "all"]) }) }),
      execute: () => "ok",
    });
    const err = await rejection(invokeTool(tool, { filter: { tags: ["a", 2], mode: "some" } }, { ctx: ctx() }));
    expect(err.message).toBe('tool "nested" input "filter.tags[1]" must be string, received number; tool "nested" input "filter.mode" must be one of "any", "all", received "some"');
  });

  it("says which types or tags a union accepts", async () => {
    const tool = defineTool({
      name: "unions",
      description: "Union inputs.",
      input: z.object({
        target: z.union([z.string(), z.object({ path: z.string() })]),
        action: z.discriminatedUnion("kind", [z.object({ kind: z.literal("read") }), z.object({ kind: z.literal("write"), text: z.string() })]),
      }),
      execute: () => "ok",
    });
    const err = await rejection(invokeTool(tool, { target: 5, action: { kind: "delete" } }, { ctx: ctx() }));
    expect(err.message).toBe('tool "unions" input "target" must be string or object, received number; tool "unions" input "action.kind" must be one of "read", "write", received "delete"');
    const nested = await rejection(invokeTool(tool, { target: { path: 1 }, action: { kind: "read" } }, { ctx: ctx() }));
    expect(nested.message).toBe('tool "unions" input "target.path" must be string, received number');
  });

  it("passes execute the parsed input (defaults applied) and refuses unknown keys, naming the closest known key", async () => {
    const seen: unknown[] = [];
    const tool = defineTool({
      name: "defaults",
      description: "Has a default.",
      input: z.object({ limit: z.number().default(100) }),
      execute: (input) => {
        seen.push(input);
        return "ok";
      },
    });
    await invokeTool(tool, {}, { ctx: ctx() });
    expect(seen).toStrictEqual([{ limit: 100 }]);
    // A default z.object used to strip them silently: a misspelled optional key was lost.
    await expect(invokeTool(tool, { limt: 5 }, { ctx: ctx() })).rejects.toThrow(
      new ToolError("tool_invalid_input", 'tool "defaults" input has unknown key "limt"; did you mean "limit"?', { reason: "schema_invalid" }),
    );
    await expect(invokeTool(tool, { extra: true }, { ctx: ctx() })).rejects.toThrow('tool "defaults" input has unknown key "extra"; known keys: "limit"');
    expect(seen).toHaveLength(1);
  });
});

describe("execution", () => {
  it("hands execute the caller's ctx object untouched, signal included", async () => {
    const seen: ToolContext[] = [];
    const tool = defineTool({
      name: "ctx_probe",
      description: "Records its ctx.",
      input: z.object({}),
      execute: (_input, c) => {
        seen.push(c);
        return "ok";
      },
    });
    const context = { ...ctx(), taskId: "task-1", depth: 2 };
    await invokeTool(tool, {}, { ctx: context });
    expect(seen[0]).toBe(context);
    expect(seen[0]!.signal).toBe(context.signal);
  });

  it("an execute that throws is tool_failed with the thrown message", async () => {
    const tool = defineTool({
      name: "broken",
      description: "Always fails.",
      input: z.object({}),
      execute: () => {
        throw new Error("disk full: cannot write /tmp/x");
      },
    });
    const err = await rejection(invokeTool(tool, {}, { ctx: ctx() }));
    expect([err.code, err.reason, err.message]).toStrictEqual(["tool_failed", undefined, "disk full: cannot write /tmp/x"]);
  });

  it("a ToolError thrown by execute passes through unchanged", async () => {
    const thrown = new ToolError("task_not_found", 'no task "t1"; call ptc_task_list to see task ids', { reason: "unknown_task" });
    const tool = defineTool({ name: "thrower", description: "Throws its own ToolError.", input: z.object({}), execute: () => Promise.reject(thrown) });
    expect(await rejection(invokeTool(tool, {}, { ctx: ctx() }))).toBe(thrown);
  });

  it("does not run a tool whose signal is already aborted", async () => {
    const calls = newCalls();
    const controller = new AbortController();
    controller.abort();
    const err = await rejection(invokeTool(skillViewTool(calls), { skill: "k" }, { ctx: ctx(controller.signal) }));
    expect([err.code, err.message]).toStrictEqual(["tool_aborted", 'tool "skill_view" was cancelled before it ran']);
    expect(calls.count).toBe(0);
  });

  it("reports a throw after the signal fired as tool_aborted", async () => {
    const controller = new AbortController();
    const tool = defineTool({
      name: "slow",
      description: "Waits for its signal.",
      input: z.object({}),
      execute: (_i, c) =>
        new Promise((_resolve, reject) => {
          c.signal.addEventListener("abort", () => reject(new Error("stopped")));
          controller.abort();
        }),
    });
    const err = await rejection(invokeTool(tool, {}, { ctx: ctx(controller.signal) }));
    expect([err.code, err.message]).toStrictEqual(["tool_aborted", 'tool "slow" was cancelled: stopped']);
  });

  it("a record that does not fit the output schema is tool_output_invalid naming the field", async () => {
    const tool = defineTool({
      name: "bad_output",
      description: "Returns a number where a string is promised.",
      input: z.object({}),
      output: z.object({ name: z.string() }),
      execute: () => ({ name: 42 }) as unknown as { name: string },
    });
    const err = await rejection(invokeTool(tool, {}, { ctx: ctx() }));
    expect([err.code, err.reason, err.message]).toStrictEqual([
      "tool_output_invalid",
      "schema_invalid",
      'tool "bad_output" returned a record that does not match its output schema: record "name" must be string, received number',
    ]);
  });

  it("a single-result tool projects its output schema and keeps the full record in details", async () => {
    const result = await invokeTool(skillViewTool(newCalls()), { skill: "k" }, { ctx: ctx() });
    expect(result).toStrictEqual({
      content: [{ type: "text", text: '{"name":"k","lines":12,"body":"not in the output schema"}' }],
      structuredContent: { name: "k", lines: 12 },
      details: { name: "k", lines: 12, body: "not in the output schema" },
    });
  });

  it("a tool without output schema gives text: strings as they are, other values as JSON, no structuredContent", async () => {
    const text = defineTool({ name: "say", description: "Says hi.", input: z.object({}), execute: () => "hi there" });
    const json = defineTool({ name: "count", description: "Counts.", input: z.object({}), execute: () => ({ n: 2 }) });
    const r1 = await invokeTool(text, {}, { ctx: ctx() });
    const r2 = await invokeTool(json, {}, { ctx: ctx() });
    expect(r1).toStrictEqual({ content: [{ type: "text", text: "hi there" }], details: "hi there" });
    expect(r2).toStrictEqual({ content: [{ type: "text", text: '{"n":2}' }], details: { n: 2 } });
  });

  it("a plain toTool tool takes any JSON object and returns text", async () => {
    const seen: unknown[] = [];
    const tool = toTool({
      name: "echo",
      description: "Echoes.",
      execute: (input: Record<string, unknown>) => {
        seen.push(input);
        return input;
      },
    });
    const result = await invokeTool(tool, { anything: [1, 2], result_view: "full" }, { ctx: ctx() });
    expect(result.content).toStrictEqual([{ type: "text", text: '{"anything":[1,2],"result_view":"full"}' }]);
    expect(Object.hasOwn(result, "structuredContent")).toBe(false);
    expect(seen).toStrictEqual([{ anything: [1, 2], result_view: "full" }]);
  });
});

describe("model output, fail soft", () => {
  it("resolution order: ToolResult.modelOutput, then toModelOutput, then JSON", async () => {
    const calls = newCalls();
    const viaResult = defineTool({
      name: "searcher",
      description: "Search.",
      input: z.object({}),
      output: z.object({ hits: z.array(z.string()) }),
      execute: () => ({ output: { hits: ["a", "b"] }, modelOutput: "2 hits; top: a" }),
      toModelOutput: () => "never used when execute gave modelOutput",
    });
    expect((await invokeTool(viaResult, {}, { ctx: ctx() })).content).toStrictEqual([{ type: "text", text: "2 hits; top: a" }]);
    const viaHook = sessionStatusTool(calls, sampleRecord, { toModelOutput: (r) => `${r.session.id}: ${r.session.state}` });
    const result = await invokeTool(viaHook, { session_id: "s" }, { ctx: ctx() });
    expect(result.content).toStrictEqual([{ type: "text", text: "sess-example: active" }]);
    expect(result.structuredContent).toStrictEqual(COMPACT);
  });

  it("a toModelOutput that throws falls back to the JSON result with a warning", async () => {
    const tool = sessionStatusTool(newCalls(), sampleRecord, {
      toModelOutput: () => {
        throw new Error("summary broke");
      },
    });
    const result = await invokeTool(tool, { session_id: "s" }, { ctx: ctx() });
    const warning = 'tool "session_status" toModelOutput failed (summary broke); the model was sent the JSON result instead';
    expect(result).toStrictEqual({
      content: [{ type: "text", text: JSON.stringify(sampleRecord()) }],
      structuredContent: COMPACT,
      details: { ...sampleRecord(), warnings: [warning] },
      warnings: [warning],
    });
  });

  it("ToolResult details and toDetails feed the details channel; a throwing toDetails keeps the record", async () => {
    const withDetails = defineTool({
      name: "detailed",
      description: "Has details.",
      input: z.object({}),
      execute: () => toolResult({ output: "only an output key" }, { details: { rows: 3 } }),
    });
    expect(await invokeTool(withDetails, {}, { ctx: ctx() })).toStrictEqual({
      content: [{ type: "text", text: '{"output":"only an output key"}' }],
      details: { rows: 3 },
    });
    const throwing = defineTool({
      name: "detail_bug",
      description: "toDetails throws.",
      input: z.object({}),
      execute: () => ({ a: 1 }),
      toDetails: () => {
        throw new Error("nope");
      },
    });
    expect(await invokeTool(throwing, {}, { ctx: ctx() })).toStrictEqual({
      content: [{ type: "text", text: '{"a":1}' }],
      details: { a: 1, warnings: ['tool "detail_bug" toDetails failed (nope); details hold the record instead'] },
      warnings: ['tool "detail_bug" toDetails failed (nope); details hold the record instead'],
    });
    const ownWarnings = defineTool({
      name: "own_warnings",
      description: "Details already carry warnings.",
      input: z.object({}),
      execute: () => ({ warnings: ["disk almost full"] }),
      toModelOutput: () => {
        throw new Error("x");
      },
    });
    const record = { warnings: ["disk almost full"] };
    const merged = await invokeTool(ownWarnings, {}, { ctx: ctx() });
    expect(merged.details).toStrictEqual({ warnings: ["disk almost full", 'tool "own_warnings" toModelOutput failed (x); the model was sent the JSON result instead'] });
    expect(record).toStrictEqual({ warnings: ["disk almost full"] });
  });

  it("a bare { output } record is a record, not a ToolResult", async () => {
    const tool = defineTool({
      name: "command",
      description: "Runs a command.",
      input: z.object({}),
      output: z.object({ output: z.string() }),
      execute: () => ({ output: "stdout text" }),
    });
    expect((await invokeTool(tool, {}, { ctx: ctx() })).structuredContent).toStrictEqual({ output: "stdout text" });
  });

  it("a record shaped like { output, details } stays a record when the tool's schema declares output", async () => {
    const tool = defineTool({
      name: "run_command",
      description: "Runs a command.",
      input: z.object({}),
      output: z.object({ output: z.string(), details: z.string() }),
      execute: () => ({ output: "stdout", details: "exit 0" }),
    });
    const result = await invokeTool(tool, {}, { ctx: ctx() });
    expect(result.structuredContent).toStrictEqual({ output: "stdout", details: "exit 0" });
    const branded = defineTool({
      name: "run_command2",
      description: "Runs a command.",
      input: z.object({}),
      output: z.object({ output: z.string(), details: z.string() }),
      execute: () => toolResult({ output: "stdout", details: "exit 0" }, { modelOutput: "ok" }),
    });
    const r2 = await invokeTool(branded, {}, { ctx: ctx() });
    expect([r2.content[0]!.text, r2.structuredContent]).toStrictEqual(["ok", { output: "stdout", details: "exit 0" }]);
  });

  it("bounds content by the output budget: head and tail with a marker, never over budget, never splitting a character", async () => {
    const long = "é".repeat(400) + "tail";
    const tool = defineTool({ name: "long", description: "Long text.", input: z.object({}), execute: () => long });
    const result = await invokeTool(tool, {}, { ctx: ctx(), outputBudget: 300 });
    const text = result.content[0]!.text;
    expect(Buffer.byteLength(text)).toBe(299);
    expect(text).toBe(`${"é".repeat(67)}\n\n[… 580 of 804 bytes of output cut; the full output was not saved …]\n\n${"é".repeat(43)}tail`);
    expect(result.details).toBe(long);
    expect(result.warnings).toStrictEqual(['tool "long" output was 804 bytes; the model was sent its head and tail within the 300-byte budget']);
  });
});

describe("hooks", () => {
  it("preCall sees the input as sent and can deny; the tool does not run", async () => {
    const calls = newCalls();
    const seen: PreCallEvent[] = [];
    const hooks: ToolHooks = {
      preCall: (event) => {
        seen.push(event);
        return { deny: "writes are not allowed in this run" };
      },
    };
    const context = ctx();
    const err = await rejection(invokeTool(sessionStatusTool(calls), { session_id: "s", result_view: "full" }, { ctx: context, hooks }));
    expect([err.code, err.reason, err.message]).toStrictEqual(["tool_denied", "hook_denied", 'tool "session_status" call denied: writes are not allowed in this run']);
    expect(calls.count).toBe(0);
    expect(seen).toStrictEqual([
      {
        tool: { id: "session_status", name: "session_status" },
        input: { session_id: "s", result_view: "full" },
        has_result_views: true,
        ctx: context,
      },
    ]);
    expect(Object.hasOwn(seen[0]!, "pinned_result_view")).toBe(false);
  });

  it("preCall can request the full record; the caller then receives it too", async () => {
    const hooks: ToolHooks = { preCall: (event) => ({ input: { ...event.input, result_view: "full" } }) };
    const result = await invokeTool(sessionStatusTool(newCalls()), { session_id: "s" }, { ctx: ctx(), hooks });
    expect(result.structuredContent).toStrictEqual(FULL);
  });

  it("a patched input is validated again", async () => {
    const calls = newCalls();
    const hooks: ToolHooks = { preCall: () => ({ input: { skill: 5 } }) };
    const err = await rejection(invokeTool(skillViewTool(calls), { skill: "k" }, { ctx: ctx(), hooks }));
    expect(err.message).toBe('tool "skill_view" input "skill" must be string, received number');
    expect(calls.count).toBe(0);
  });

  it("a preCall hook that throws denies the call (fail closed)", async () => {
    const calls = newCalls();
    const hooks: ToolHooks = {
      preCall: () => {
        throw new Error("policy service down");
      },
    };
    const err = await rejection(invokeTool(skillViewTool(calls), { skill: "k" }, { ctx: ctx(), hooks }));
    expect([err.code, err.reason, err.message]).toStrictEqual(["tool_denied", "hook_failed", 'tool "skill_view" call denied: its preCall hook failed: policy service down']);
    expect(calls.count).toBe(0);
  });

  it("postCall sees the full record and result_view while the model text and structuredContent are compact", async () => {
    const seen: PostCallEvent[] = [];
    const tool = sessionStatusTool(newCalls(), sampleRecord, { toModelOutput: (r) => `session ${r.session.id}` });
    const result = await invokeTool(tool, { session_id: "s" }, { ctx: ctx(), hooks: { postCall: (e) => void seen.push(e) } });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.record).toStrictEqual(sampleRecord());
    expect(seen[0]!.result_view).toBe("compact");
    expect(seen[0]!.has_result_views).toBe(true);
    expect(seen[0]!.result).toStrictEqual(result);
    expect(result.content).toStrictEqual([{ type: "text", text: "session sess-example" }]);
    expect(result.structuredContent).toStrictEqual(COMPACT);
  });

  it("postCall on a single-result tool carries no result_view", async () => {
    const seen: PostCallEvent[] = [];
    await invokeTool(skillViewTool(newCalls()), { skill: "k" }, { ctx: ctx(), hooks: { postCall: (e) => void seen.push(e) } });
    expect(Object.hasOwn(seen[0]!, "result_view")).toBe(false);
    expect(seen[0]!.has_result_views).toBe(false);
  });

  it("a postCall redaction happens before the model view is built: every channel loses the secret", async () => {
    const secretRecord = () => ({ ...sampleRecord(), session: { ...sampleRecord().session, name: "token=abc123" } });
    const tool = sessionStatusTool(newCalls(), secretRecord, { toModelOutput: (r) => `session ${r.session.id} "${r.session.name}"` });
    const hooks: ToolHooks = {
      postCall: (event) => {
        const record = event.record as ReturnType<typeof secretRecord>;
        return { record: { ...record, session: { ...record.session, name: "[redacted]" } } };
      },
    };
    const result = await invokeTool(tool, { session_id: "s" }, { ctx: ctx(), hooks });
    expect(result.content).toStrictEqual([{ type: "text", text: 'session sess-example "[redacted]"' }]);
    expect((result.structuredContent!.session as Record<string, unknown>).name).toBe("[redacted]");
    expect(JSON.stringify(result)).not.toContain("abc123");
  });

  it("a redaction also replaces a modelOutput that execute built from the unredacted record", async () => {
    const tool = defineTool({
      name: "leaky_summary",
      description: "Summary includes a secret.",
      input: z.object({}),
      output: z.object({ user: z.string() }),
      execute: () => ({ output: { user: "alice:hunter2" }, modelOutput: "user alice:hunter2" }),
    });
    const hooks: ToolHooks = { postCall: () => ({ record: { user: "alice" } }) };
    const result = await invokeTool(tool, {}, { ctx: ctx(), hooks });
    expect(result).toStrictEqual({
      content: [{ type: "text", text: '{"user":"alice"}' }],
      structuredContent: { user: "alice" },
      details: { user: "alice" },
    });
  });

  it("postError sees the stage and the error; its own failure does not replace the error", async () => {
    const seen: PostErrorEvent[] = [];
    const hooks: ToolHooks = {
      postError: (e) => {
        seen.push(e);
        throw new Error("logger down");
      },
    };
    const broken = defineTool({ name: "broken", description: "Fails.", input: z.object({}), execute: () => Promise.reject(new Error("boom")) });
    const err = await rejection(invokeTool(broken, {}, { ctx: ctx(), hooks }));
    expect(err.message).toBe("boom");
    await rejection(invokeTool(skillViewTool(newCalls()), { skill: 1 }, { ctx: ctx(), hooks }));
    expect(seen.map((e) => [e.stage, e.error.code, e.tool.id])).toStrictEqual([
      ["execute", "tool_failed", "broken"],
      ["input", "tool_invalid_input", "skill_view"],
    ]);
  });

  it("a postCall hook that throws leaves the result and adds a warning", async () => {
    const result = await invokeTool(
      skillViewTool(newCalls()),
      { skill: "k" },
      {
        ctx: ctx(),
        hooks: {
          postCall: () => {
            throw new Error("tracer down");
          },
        },
      },
    );
    expect(result.structuredContent).toStrictEqual({ name: "k", lines: 12 });
    expect(result.warnings).toStrictEqual(['tool "skill_view" postCall hook failed: tracer down']);
    expect(result.details).toStrictEqual({ name: "k", lines: 12, body: "not in the output schema", warnings: ['tool "skill_view" postCall hook failed: tracer down'] });
  });
});

describe("any input, property-based", () => {
  it("either runs the tool on valid input or rejects with tool_invalid_input naming the tool — never anything else", async () => {
    const anyInput = fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.record({ skill: fc.jsonValue({ maxDepth: 1 }), max_lines: fc.jsonValue({ maxDepth: 1 }), result_view: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: [] }),
      fc.record({ session_id: fc.jsonValue({ maxDepth: 1 }), result_view: fc.oneof(fc.constantFrom("compact", "full"), fc.jsonValue({ maxDepth: 1 })) }, { requiredKeys: [] }),
    );
    await fc.assert(
      fc.asyncProperty(anyInput, fc.boolean(), async (input, views) => {
        const calls = newCalls();
        const tool = views ? sessionStatusTool(calls) : skillViewTool(calls);
        try {
          const result = await invokeTool(tool, input, { ctx: ctx() });
          expect(calls.count).toBe(1);
          expect(JSON.parse(JSON.stringify(result.structuredContent))).toStrictEqual(result.structuredContent);
        } catch (err) {
          expect(err).toBeInstanceOf(ToolError);
          expect([(err as ToolError).code, (err as ToolError).reason]).toStrictEqual(["tool_invalid_input", "schema_invalid"]);
          expect((err as ToolError).message.startsWith(`tool "${tool.id}" `)).toBe(true);
          expect(calls.count).toBe(0);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("invokeTool argument checks", () => {
  const tool = skillViewTool(newCalls());
  const cases: { options: unknown; message: string }[] = [
    { options: undefined, message: "invokeTool: options must be an object { ctx, hooks?, outputBudget?, development?, pinnedResultView? }, received undefined" },
    { options: { ctx: { callId: "c", runId: "r", depth: 0 } }, message: "invokeTool: options.ctx.signal must be an AbortSignal, received undefined" },
    { options: { ctx: { ...ctx(), callId: "" } }, message: "invokeTool: options.ctx.callId must be a non-empty string, received string" },
    { options: { ctx: { ...ctx(), depth: -1 } }, message: "invokeTool: options.ctx.depth must be an integer ≥ 0, received -1" },
    { options: { ctx: ctx(), outputBudget: 10 }, message: "invokeTool: options.outputBudget must be an integer number of bytes ≥ 256 (or Infinity), received 10" },
    { options: { ctx: ctx(), pinnedResultView: "all" }, message: 'invokeTool: options.pinnedResultView must be "compact" or "full", received "all"' },
    { options: { ctx: ctx(), hooks: { preCall: 1 } }, message: "invokeTool: options.hooks.preCall must be a function, received number" },
  ];
  for (const { options, message } of cases) {
    it(message, async () => {
      await expect(invokeTool(tool, { skill: "k" }, options as never)).rejects.toThrow(new TypeError(message));
    });
  }

  it("rejects something that is not a tool", async () => {
    await expect(invokeTool({ name: "x" } as never, {}, { ctx: ctx() })).rejects.toThrow(new TypeError("invokeTool: tool must be a tool created by defineTool() or toTool(), received object"));
  });
});

describe("audience: program", () => {
  it("builds only structuredContent for a tool with an output, and no model text for a tool without one", async () => {
    let modelOutputCalls = 0;
    const withOutput = defineTool({
      name: "measure",
      description: "d",
      input: z.object({}),
      output: z.object({ n: z.number() }),
      execute: async () => ({ n: 1, secret: "host only" }),
      toModelOutput: () => {
        modelOutputCalls++;
        return "n is 1";
      },
    });
    const textTool = defineTool({ name: "say", description: "d", input: z.object({}), execute: async () => "hello" });
    const ctx = { signal: new AbortController().signal, callId: "c", runId: "r", depth: 0 };
    const forProgram = await invokeTool(withOutput, {}, { ctx, audience: "program" });
    expect(forProgram).toStrictEqual({ content: [], structuredContent: { n: 1 } });
    expect(modelOutputCalls).toBe(0);
    const forModel = await invokeTool(withOutput, {}, { ctx });
    expect(forModel.content).toStrictEqual([{ type: "text", text: "n is 1" }]);
    // A program gets what the tool returned (invokeToolForProgram), never its model text.
    expect((await invokeTool(textTool, {}, { ctx, audience: "program" })).content).toStrictEqual([]);
    expect(await invokeToolForProgram(textTool, {}, { ctx })).toBe("hello");
    expect(await invokeToolForProgram(withOutput, {}, { ctx })).toStrictEqual({ n: 1 });
    await expect(invokeTool(textTool, {}, { ctx, audience: "robot" as never })).rejects.toThrow('invokeTool: options.audience must be "model" or "program", received "robot"');
  });
});

describe("a tool that flags its own result as an error", () => {
  const check = defineTool({
    name: "check",
    description: "says whether n is even",
    input: z.object({ n: z.number() }),
    output: z.object({ even: z.boolean() }),
    execute: ({ n }) => toolResult({ even: n % 2 === 0 }, { modelOutput: n % 2 === 0 ? "even" : "odd: not accepted", isError: n % 2 !== 0 }),
  });

  it("the model's result is isError with the channels built as usual; a program still gets the record", async () => {
    expect(await invokeTool(check, { n: 3 }, { ctx: ctx() })).toStrictEqual({
      content: [{ type: "text", text: "odd: not accepted" }],
      structuredContent: { even: false },
      details: { even: false },
      isError: true,
    });
    const ok = await invokeTool(check, { n: 2 }, { ctx: ctx() });
    expect([ok.structuredContent, Object.hasOwn(ok, "isError")]).toStrictEqual([{ even: true }, false]);
    expect(await invokeToolForProgram(check, { n: 3 }, { ctx: ctx() })).toStrictEqual({ even: false });
  });

  it("toolResult refuses an isError that is not a boolean", () => {
    expect(() => toolResult({}, { isError: "yes" as unknown as boolean })).toThrow('toolResult: "isError" must be a boolean, received');
  });
});
