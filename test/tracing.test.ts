// Tracing through @opentelemetry/api, recorded by the real SDK's in-memory exporter: the span tree
// of programs, tool calls and tasks, their attributes, the full record (redacted as the postCall
// hook redacts it), and the trace context a command agent gets.
import { afterEach, describe, expect, it } from "vitest";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { trace, SpanStatusCode } from "@opentelemetry/api";
import { AlwaysOffSampler, BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { createCodemode, defineTool, z, type Codemode, type CodemodeOptions } from "../src/index.js";
import { resolveTracer, TRACE_EVENT_BYTES } from "../src/tracing.js";

const opened: Codemode[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((cm) => cm.close()));
  trace.disable();
});

function recorder(sampler?: AlwaysOffSampler) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)], ...(sampler ? { sampler } : {}) });
  return { exporter, provider, tracer: provider.getTracer("test") };
}

const lookup = defineTool({
  name: "lookup",
  description: "a person's record, with a secret the hook removes",
  input: z.object({ who: z.string() }),
  output: z.object({ name: z.string(), token: z.string().optional() }),
  execute: async ({ who }) => {
    if (who === "nobody") throw new Error("no such person");
    return { name: who, token: "s3cr3t-token" };
  },
});
const big = defineTool({ name: "big", description: "100 KB", input: z.object({}), execute: async () => ({ data: "x".repeat(100_000) }) });

async function open(options: CodemodeOptions): Promise<Codemode> {
  const cm = await createCodemode({
    agentDirs: [],
    tools: [lookup, big],
    workers: { max: 2 },
    tasks: { killGraceMs: 100 },
    // The redaction every channel, and every span, sees.
    hooks: { postCall: (e) => (e.tool.name === "lookup" ? { record: { name: (e.record as { name: string }).name } } : undefined) },
    ...options,
  });
  opened.push(cm);
  return cm;
}

interface Node {
  name: string;
  attributes: Record<string, unknown>;
  events: Array<[string, Record<string, unknown>]>;
  status: SpanStatusCode;
  children: Node[];
  span: ReadableSpan;
}

/** The finished spans as a tree (by parent span id), children in the order they started. */
function tree(spans: readonly ReadableSpan[]): Node[] {
  const time = (s: ReadableSpan) => s.startTime[0] * 1e9 + s.startTime[1];
  const nodes = new Map<string, Node>();
  const sorted = [...spans].sort((a, b) => time(a) - time(b));
  for (const span of sorted) {
    nodes.set(span.spanContext().spanId, {
      name: span.name,
      attributes: { ...span.attributes },
      events: span.events.map((e) => [e.name, { ...e.attributes }]),
      status: span.status.code,
      children: [],
      span,
    });
  }
  const roots: Node[] = [];
  for (const span of sorted) {
    const node = nodes.get(span.spanContext().spanId)!;
    const parent = span.parentSpanContext && nodes.get(span.parentSpanContext.spanId);
    (parent ? parent.children : roots).push(node);
  }
  return roots;
}

const shape = (n: Node): unknown => [n.name, n.children.map(shape)];
const duration = expect.any(Number);

describe("tracing", () => {
  it("the span tree of a program that calls a tool and spawns a subagent that calls it too; the redacted field reaches no span", async () => {
    const { exporter, tracer } = recorder();
    const agent = { name: "echo", description: "looks its task up", driver: "script" as const, tools: ["lookup"], scriptCode: "const r = await tools.lookup({ who: task }); text(r.name)" };
    const cm = await open({ tracer, agents: [agent] });
    const result = await cm.run(`const a = await tools.lookup({ who: "ada" }); const c = await tools.ptc_subagent({ agent: "echo", task: "bob" }); text(a.name + " " + c.status)`);
    expect(result.content).toStrictEqual([{ type: "text", text: "ada succeeded" }]);
    const roots = tree(exporter.getFinishedSpans());
    expect(roots.map(shape)).toStrictEqual([
      [
        "codemode.run",
        [
          ["execute_tool lookup", []],
          ["execute_tool ptc_subagent", [["codemode.task", [["codemode.task.run", [["codemode.run", [["execute_tool lookup", []]]]]]]]]],
        ],
      ],
    ]);
    const [run] = roots as [Node];
    const [call, spawn] = run.children as [Node, Node];
    const task = spawn.children[0]!;
    const taskRun = task.children[0]!;
    const childRun = taskRun.children[0]!;
    const childCall = childRun.children[0]!;
    const runId = result.details.runId;
    const record = cm.tasks.list().records[0]!;

    expect(run.attributes).toStrictEqual({
      "codemode.run.id": runId,
      "codemode.session": "default",
      "codemode.depth": 0,
      "codemode.run.status": "ok",
      "codemode.run.duration_ms": result.structuredContent.duration_ms,
      "codemode.run.tool_calls": 2,
      "codemode.run.output_bytes": 13,
    });
    expect(run.events).toStrictEqual([["codemode.model_text", { "codemode.model_text.content": "ada succeeded", "codemode.model_text.bytes": 13, "codemode.model_text.truncated": false }]]);
    expect(call.attributes).toStrictEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "lookup",
      "gen_ai.tool.call.id": `${runId}:1`,
      "codemode.tool.path": "lookup",
      "codemode.tool.id": "lookup",
      "codemode.run.id": runId,
      "codemode.tool.input_bytes": 13,
      "codemode.tool.status": "ok",
      "codemode.tool.duration_ms": duration,
      "codemode.tool.output_bytes": 14,
    });
    // The full record as the hook left it; a program's call has no model text (the run's is on the run span).
    expect(call.events).toStrictEqual([["codemode.tool.record", { "codemode.record.json": '{"name":"ada"}', "codemode.record.bytes": 14, "codemode.record.truncated": false }]]);
    expect(spawn.attributes).toMatchObject({ "codemode.tool.path": "ptc_subagent", "codemode.tool.result_view": "compact", "codemode.tool.status": "ok" });
    // The full record of ptc_subagent: the whole task record, beyond what the compact view gave the program.
    const spawnRecord = JSON.parse(spawn.events[0]![1]["codemode.record.json"] as string);
    expect([spawnRecord.task.id, spawnRecord.task.cwd, spawnRecord.output_tail]).toStrictEqual([record.id, record.cwd, "bob"]);

    expect(task.attributes).toStrictEqual({
      "codemode.task.id": record.id,
      "codemode.task.agent": "echo",
      "codemode.task.driver": "script",
      "codemode.task.depth": 1,
      "codemode.task.background": false,
      "codemode.task.label": "bob",
      "codemode.task.status": "succeeded",
      "codemode.task.output_bytes": 3,
      "codemode.task.exit_code": 0,
      "codemode.task.duration_ms": record.endedAt! - record.startedAt!,
      "codemode.task.usage.input_tokens": 0,
      "codemode.task.usage.output_tokens": 0,
      "codemode.task.usage.cost": 0,
      "codemode.task.usage.turns": 1,
    });
    expect(task.events).toStrictEqual([["codemode.task.started", { "codemode.task.queued_ms": record.startedAt! - record.createdAt }]]);
    expect(taskRun.attributes).toStrictEqual({
      "codemode.task.id": record.id,
      "codemode.task.driver": "script",
      "codemode.task.status": "succeeded",
      "codemode.task.exit_code": 0,
      "codemode.task.duration_ms": record.endedAt! - record.startedAt!,
    });
    expect(childRun.attributes).toMatchObject({
      "codemode.session": `task-${record.id}`,
      "codemode.depth": 1,
      "codemode.task.id": record.id,
      "codemode.run.status": "ok",
      "codemode.run.tool_calls": 1,
    });
    expect(childCall.attributes).toMatchObject({ "codemode.tool.path": "lookup", "codemode.task.id": record.id, "codemode.tool.output_bytes": 14 });
    expect(childCall.events[0]![1]["codemode.record.json"]).toBe('{"name":"bob"}');
    // One trace, all of it.
    expect(new Set(exporter.getFinishedSpans().map((s) => s.spanContext().traceId)).size).toBe(1);
    // The field the hook removed reached no span, no attribute and no event.
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => [s.attributes, s.events]))).not.toContain("s3cr3t");
    expect(exporter.getFinishedSpans().every((s) => s.status.code !== SpanStatusCode.ERROR)).toBe(true);
  });

  it("a failed call and a failed run are error spans with the code, the stage and the kind", async () => {
    const { exporter, tracer } = recorder();
    const cm = await open({ tracer });
    const result = await cm.run(`await tools.lookup({ who: "nobody" })`);
    expect(result.structuredContent.status).toBe("error");
    const [run] = tree(exporter.getFinishedSpans()) as [Node];
    const call = run.children[0]!;
    expect([run.status, run.attributes["codemode.run.status"], run.attributes["codemode.run.error_kind"]]).toStrictEqual([SpanStatusCode.ERROR, "error", "exception"]);
    expect(run.span.status.message).toBe(`exception: ${result.structuredContent.error!.message}`);
    expect(call.status).toBe(SpanStatusCode.ERROR);
    expect(call.attributes).toMatchObject({ "codemode.tool.status": "error", "codemode.tool.error_code": "tool_failed", "codemode.tool.error_stage": "execute" });
    expect(call.events).toStrictEqual([["exception", { "exception.type": "tool_failed", "exception.message": "no such person" }]]);
    const invalid = await cm.run(`await tools.lookup({ whom: "x" })`);
    expect(invalid.structuredContent.status).toBe("error");
    const second = tree(exporter.getFinishedSpans()).at(-1)!.children[0]!;
    expect(second.attributes).toMatchObject({ "codemode.tool.error_code": "tool_invalid_input", "codemode.tool.error_stage": "input" });
  });

  it("a background task's life: spawn, start, a stop (linked to the task) with its reason, the wait in between", async () => {
    const { exporter, tracer } = recorder();
    const hang = { name: "hang", description: "runs until stopped", driver: "script" as const, scriptCode: "await sleep(600000)" };
    const cm = await open({ tracer, agents: [hang] });
    const result = await cm.run(`
const t = await tools.ptc_subagent({ agent: "hang", task: "h", background: true });
const w = await tools.ptc_task_wait({ timeout_ms: 50 });
const s = await tools.ptc_task_stop({ task_id: t.task_id, reason: "enough" });
text(w.timed_out + " " + s.status);`);
    expect(result.content).toStrictEqual([{ type: "text", text: "true canceled" }]);
    const [run] = tree(exporter.getFinishedSpans()) as [Node];
    expect(run.children.map(shape)).toStrictEqual([
      ["execute_tool ptc_subagent", [["codemode.task", [["codemode.task.run", [["codemode.run", []]]]]]]],
      ["execute_tool ptc_task_wait", []],
      ["execute_tool ptc_task_stop", [["codemode.task.stop", []]]],
    ]);
    const [spawn, wait, stop] = run.children as [Node, Node, Node];
    const task = spawn.children[0]!;
    const stopSpan = stop.children[0]!;
    const id = cm.tasks.list().records[0]!.id;
    expect(task.attributes).toMatchObject({
      "codemode.task.id": id,
      "codemode.task.background": true,
      "codemode.task.status": "canceled",
      "codemode.task.stop_reason": "enough",
      "codemode.task.usage.turns": 1,
    });
    expect(task.events.map(([name]) => name)).toStrictEqual(["codemode.task.started", "codemode.task.stop_requested"]);
    expect(task.events[1]).toStrictEqual(["codemode.task.stop_requested", { "codemode.task.stop_reason": "enough" }]);
    expect(stopSpan.attributes).toStrictEqual({ "codemode.task.id": id, "codemode.task.from_status": "running", "codemode.task.stop_reason": "enough", "codemode.task.status": "canceled" });
    expect(stopSpan.span.links.map((l) => l.context.spanId)).toStrictEqual([task.span.spanContext().spanId]);
    expect(JSON.parse(wait.events[0]![1]["codemode.record.json"] as string)).toMatchObject({ done: [], pending: [id], timed_out: true });
  });

  it("a command agent gets TRACEPARENT: the trace and its task's run span", async () => {
    const { exporter, tracer } = recorder();
    const agent = { name: "env", description: "prints its trace context", driver: "command" as const, command: [process.execPath, "-e", "process.stdout.write(process.env.TRACEPARENT || 'none')"] };
    const cm = await open({ tracer, agents: [agent] });
    await cm.run(`await tools.ptc_subagent({ agent: "env", task: "t" })`);
    const taskRun = exporter.getFinishedSpans().find((s) => s.name === "codemode.task.run")!;
    const { traceId, spanId } = taskRun.spanContext();
    expect(cm.tasks.output(cm.tasks.list().records[0]!.id).output).toBe(`00-${traceId}-${spanId}-01`);
  });

  it("sampled out: nothing is recorded, and a command agent still gets the context, marked not sampled", async () => {
    const { exporter, tracer } = recorder(new AlwaysOffSampler());
    const agent = { name: "env", description: "prints its trace context", driver: "command" as const, command: [process.execPath, "-e", "process.stdout.write(process.env.TRACEPARENT || 'none')"] };
    const cm = await open({ tracer, agents: [agent] });
    await cm.run(`await tools.lookup({ who: "ada" }); await tools.ptc_subagent({ agent: "env", task: "t" })`);
    expect(exporter.getFinishedSpans()).toStrictEqual([]);
    expect(cm.tasks.output(cm.tasks.list().records[0]!.id).output).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
  });

  it("with no tracer given, the global provider's is used; with none registered, nothing", async () => {
    expect(resolveTracer(undefined)).toBeUndefined();
    const { exporter, provider } = recorder();
    const cm = await open({});
    await cm.run(`await tools.lookup({ who: "ada" })`);
    expect(exporter.getFinishedSpans()).toStrictEqual([]);
    trace.setGlobalTracerProvider(provider);
    await cm.run(`await tools.lookup({ who: "ada" })`);
    expect(exporter.getFinishedSpans().map((s) => s.name)).toStrictEqual(["execute_tool lookup", "codemode.run"]);
    trace.disable();
    await cm.run(`await tools.lookup({ who: "ada" })`);
    expect(exporter.getFinishedSpans().length).toBe(2);
  });

  it("a call a model makes directly carries its model text; both events are cut at the bound and say how long they were", async () => {
    const { exporter, tracer } = recorder();
    const cm = await open({ tracer });
    const direct = await cm.callTool("lookup", { who: "ada" });
    expect(direct.content[0]!.text).toBe('{"name":"ada"}');
    const [span] = exporter.getFinishedSpans();
    expect(span!.events.map((e) => [e.name, e.attributes])).toStrictEqual([
      ["codemode.tool.record", { "codemode.record.json": '{"name":"ada"}', "codemode.record.bytes": 14, "codemode.record.truncated": false }],
      ["codemode.model_text", { "codemode.model_text.content": '{"name":"ada"}', "codemode.model_text.bytes": 14, "codemode.model_text.truncated": false }],
    ]);
    expect(span!.attributes["gen_ai.tool.call.id"]).toMatch(/^direct:/);
    await cm.callTool("big", {});
    const bigSpan = exporter.getFinishedSpans()[1]!;
    const [recordEvent, textEvent] = bigSpan.events.map((e) => e.attributes!) as [Record<string, unknown>, Record<string, unknown>];
    expect([(recordEvent["codemode.record.json"] as string).length, recordEvent["codemode.record.bytes"], recordEvent["codemode.record.truncated"]]).toStrictEqual([TRACE_EVENT_BYTES, 100_011, true]);
    expect([(textEvent["codemode.model_text.content"] as string).length, textEvent["codemode.model_text.truncated"]]).toStrictEqual([TRACE_EVENT_BYTES, true]);
    expect(bigSpan.attributes["codemode.tool.output_bytes"]).toBe(100_011);
  });

  it("a workflow's tool nodes are spans under the workflow's task", async () => {
    const { exporter, tracer } = recorder();
    const cm = await open({ tracer });
    const result = await cm.run(
      `const r = await tools.ptc_workflow({ workflow: { graph: { nodes: [{ id: "a", class: "action", kind: "lookup", params: { who: "ada" } }] } } }); text(r.outputs.a.name)`,
    );
    expect(result.content).toStrictEqual([{ type: "text", text: "ada" }]);
    const [run] = tree(exporter.getFinishedSpans()) as [Node];
    expect(run.children.map(shape)).toStrictEqual([["execute_tool ptc_workflow", [["codemode.task", [["codemode.task.run", [["execute_tool lookup", []]]]]]]]]);
  });

  it("an openai agent's tool calls are spans under its task's run span", async () => {
    // A local server speaking chat completions: first a call of lookup, then the answer.
    const replies = [{ tool_calls: [{ id: "c1", type: "function", function: { name: "lookup", arguments: '{"who":"ada"}' } }] }, { content: "found ada" }];
    const server = createServer((req, res) => {
      req.resume().on("end", () => {
        const message = { role: "assistant", ...replies.shift() };
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ choices: [{ index: 0, message }], usage: { prompt_tokens: 5, completion_tokens: 2 } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { exporter, tracer } = recorder();
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const cm = await open({ tracer, agents: [{ name: "oa", description: "d", driver: "openai", model: "m", baseUrl, tools: ["lookup"] }] });
      const result = await cm.run(`text((await tools.ptc_subagent({ agent: "oa", task: "find ada" })).status)`);
      expect(result.content).toStrictEqual([{ type: "text", text: "succeeded" }]);
      const [run] = tree(exporter.getFinishedSpans()) as [Node];
      expect(run.children.map(shape)).toStrictEqual([["execute_tool ptc_subagent", [["codemode.task", [["codemode.task.run", [["execute_tool lookup", []]]]]]]]]);
      const call = run.children[0]!.children[0]!.children[0]!.children[0]!;
      // A model read this call's result: its text is there, redacted like the record.
      expect(call.events.map(([name, attributes]) => [name, attributes["codemode.record.json"] ?? attributes["codemode.model_text.content"]])).toStrictEqual([
        ["codemode.tool.record", '{"name":"ada"}'],
        ["codemode.model_text", '{"name":"ada"}'],
      ]);
      expect(run.children[0]!.children[0]!.attributes).toMatchObject({ "codemode.task.usage.input_tokens": 10, "codemode.task.usage.output_tokens": 4, "codemode.task.usage.turns": 2 });
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("refuses a tracer that is not one, naming the option", async () => {
    await expect(createCodemode({ tracer: {} as never })).rejects.toThrow('options.tracer must be an OpenTelemetry Tracer (e.g. trace.getTracer("my-app") from @opentelemetry/api), got an object');
  });
});
