import { describe, it, expect, afterEach, beforeEach } from "vitest";
import { readFileSync } from "node:fs";
import { assertViewSubset, type Tool, type ToolCallResult, type ToolContext } from "../../src/tools/index.js";
import { AgentRegistry, TaskHost, type AgentInput, type TaskStore, type Usage } from "../../src/tasks/index.js";
import { ptcTools, toSnake } from "../../src/ptc/index.js";
import { callTool, refusalOf } from "./helpers.js";
import { useBackends, type Backend } from "../tasks/helpers/backends.js";
import { NO_REDIS } from "../tasks/helpers/redis-server.js";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const gate = { current: deferred() };
const AGENTS: AgentInput[] = [
  { name: "echo", description: "d", driver: "function", run: async ({ task }) => `echo: ${task}` },
  {
    name: "reporter",
    description: "d",
    driver: "function",
    readOnly: true,
    prices: { input: 1, output: 2 },
    run: async ({ emit }) => {
      emit({ type: "turn" });
      emit({ type: "usage", input: 100, output: 10 });
      emit({ type: "report", report: { summary: "found one", findings: [{ what: "bug", evidence: "a.ts:1" }], files_touched: ["a.ts"], usage: { input: 1, output: 1, cost: 0, turns: 1 } } });
      return "analysis text";
    },
  },
  { name: "quiet", description: "d", driver: "function", report: false, run: async () => "done quietly" },
  { name: "adv", description: "d", driver: "command", readOnly: true, command: [process.execPath, "-e", "process.stdout.write('cmd ok')"] },
  {
    name: "broken",
    description: "d",
    driver: "function",
    run: async ({ emit }) => {
      emit({ type: "turn" });
      emit({ type: "usage", input: 7, output: 3 });
      emit({ type: "text", text: "partial " });
      throw new Error("disk full");
    },
  },
  {
    name: "gated",
    description: "d",
    driver: "function",
    run: async ({ emit, signal }) => {
      emit({ type: "text", text: "started\n" });
      await Promise.race([gate.current.promise, new Promise((_, rej) => signal.addEventListener("abort", () => rej(new Error("stopped"))))]);
      return "released";
    },
  },
  { name: "big", description: "d", driver: "function", run: async () => "x".repeat(60 * 1024) + "\nend\n" },
  { name: "lines", description: "d", driver: "function", run: async () => Array.from({ length: 1500 }, (_, i) => `line ${String(i).padStart(4, "0")} ${"y".repeat(20)}`).join("\n") + "\n" },
];

const hosts: TaskHost[] = [];
const BACKENDS = useBackends();
afterEach(async () => {
  gate.current.resolve();
  gate.current = deferred();
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});
let backend: Backend;

function setup(opts: { maxRunning?: number; store?: TaskStore; agents?: AgentInput[] } = {}) {
  const { agents = AGENTS, ...rest } = opts;
  const store = opts.store ?? backend.store();
  const host = new TaskHost({ store, agents: new AgentRegistry({ agents, dirs: [] }), killGraceMs: 50, ...rest, ...backend.hostOptions(store, agents, { killGraceMs: 50 }) });
  hosts.push(host);
  const tools = Object.fromEntries(ptcTools(host).map((t) => [t.name, t])) as Record<string, Tool>;
  return { host, tools };
}

const ctx = (depth = 0, taskId?: string): ToolContext => ({ signal: new AbortController().signal, callId: "c", runId: "r", depth, ...(taskId ? { taskId } : {}) });

const call = (tool: Tool, input: Record<string, unknown>, c: ToolContext = ctx(), outputBudget?: number) => callTool(tool, input, c, outputBudget);
const refusal = (tool: Tool, input: Record<string, unknown>, c: ToolContext = ctx()) => refusalOf(tool, input, c);

/** The usage numbers the text content states, parsed back. */
function usageInText(r: ToolCallResult): Usage | "not recorded" {
  const line = r.content[0]!.text.split("\n").find((l) => l.startsWith("usage: "))!;
  if (line === "usage: not recorded") return "not recorded";
  const m = /^usage: input=(\S+) output=(\S+) cost=(\S+) turns=(\S+)$/.exec(line)!;
  return { input: Number(m[1]), output: Number(m[2]), cost: Number(m[3]), turns: Number(m[4]) };
}

const REPORTER_USAGE = { input: 100, output: 10, cost: 0.00012, turns: 1 };

// The same contract on every backend: the embedded store and Redis with its queue of workers.
for (const b of BACKENDS) {
  describe.skipIf(!b.available)(`${b.name} backend${b.available ? "" : ` (skipped: ${NO_REDIS})`}`, () => {
    beforeEach(() => {
      backend = b;
    });
    describe("ptc_subagent", () => {
      it("background: task_id, running, report_channel none, no usage or exit_code", async () => {
        const { host, tools } = setup();
        const r = await call(tools.ptc_subagent!, { agent: "gated", task: "wait", background: true });
        const id = r.sc.task_id as string;
        expect(r.sc).toStrictEqual({ task_id: id, status: "running", report_channel: "none" });
        expect([Object.hasOwn(r.sc, "usage"), Object.hasOwn(r.sc, "exit_code")]).toStrictEqual([false, false]);
        expect(r.content).toStrictEqual([
          {
            type: "text",
            text: `Started background task ${id} (agent gated), status running. Wait for it with ptc_task_wait({ task_ids: ["${id}"] }), then read it with ptc_task_output.\nusage: not recorded`,
          },
        ]);
        const d = r.details as { task: Record<string, unknown> };
        expect([d.task.id, d.task.background, typeof d.task.createdAt, Object.hasOwn(d.task, "outputPreview")]).toStrictEqual([id, true, "number", true]);
        gate.current.resolve();
        await host.wait(id);
      });

      it("background past the cap: queued; read-only agents carry their tier", async () => {
        const { tools } = setup({ maxRunning: 1 });
        await call(tools.ptc_subagent!, { agent: "gated", task: "a", background: true });
        const q = await call(tools.ptc_subagent!, { agent: "reporter", task: "b", background: true });
        expect(q.sc).toStrictEqual({ task_id: q.sc.task_id, status: "queued", report_channel: "none", read_only_tier: "advisory" });
      });

      it("background full view adds the snake_case record", async () => {
        const { host, tools } = setup();
        const r = await call(tools.ptc_subagent!, { agent: "gated", task: "full", background: true, label: "L", result_view: "full" });
        const id = r.sc.task_id as string;
        const rec = host.get(id)!;
        expect(r.sc).toStrictEqual({ task_id: id, status: "running", report_channel: "none", task: toSnake({ ...rec, outputBytes: 0 }) });
        expect(Object.keys(r.sc.task as object)).toStrictEqual(["id", "status", "agent", "depth", "label", "driver", "task", "background", "cwd", "owner", "created_at", "started_at"]);
      });

      it("foreground with a tool report: succeeded, exit_code, report stamped with host usage", async () => {
        const { tools } = setup();
        const r = await call(tools.ptc_subagent!, { agent: "reporter", task: "analyse" });
        expect(r.sc).toStrictEqual({
          status: "succeeded",
          exit_code: 0,
          report_channel: "tool",
          read_only_tier: "advisory",
          report: { summary: "found one", findings: [{ what: "bug", evidence: "a.ts:1" }], files_touched: ["a.ts"], usage: REPORTER_USAGE },
          usage: REPORTER_USAGE,
        });
        expect(Object.hasOwn(r.sc, "task_id")).toBe(false);
        expect(usageInText(r)).toStrictEqual(r.sc.usage);
        expect(r.content[0]!.text).toContain("report: found one\n- bug (a.ts:1)\nfiles touched: a.ts\n\nanalysis text");
      });

      it("foreground without a report, opted out, and advisory (command) tiers", async () => {
        const { host, tools } = setup();
        const none = await call(tools.ptc_subagent!, { agent: "echo", task: "hi" });
        const zero = { input: 0, output: 0, cost: 0, turns: 0 };
        expect(none.sc).toStrictEqual({ status: "succeeded", exit_code: 0, report_channel: "none", usage: zero });
        expect(usageInText(none)).toStrictEqual(zero);
        const opted = await call(tools.ptc_subagent!, { agent: "quiet", task: "hi" });
        expect(opted.sc).toStrictEqual({ status: "succeeded", exit_code: 0, report_channel: "opted-out", usage: zero });
        const adv = await call(tools.ptc_subagent!, { agent: "adv", task: "hi" });
        expect(adv.sc).toStrictEqual({ status: "succeeded", exit_code: 0, report_channel: "none", read_only_tier: "advisory", usage: zero });
        // On Redis a command agent went through the queue: its record names the worker that ran it, and only there.
        const advRecord = host.list().records.at(-1)!;
        expect([advRecord.agent, Object.hasOwn(advRecord, "worker"), Object.hasOwn(toSnake(advRecord), "worker")]).toStrictEqual(["adv", backend.name === "redis", backend.name === "redis"]);
      });

      it("a failing foreground child rejects with its task id, and its usage stays readable", async () => {
        const { tools } = setup();
        const err = await refusal(tools.ptc_subagent!, { agent: "broken", task: "go" });
        const id = /subagent task (\S+) /.exec(err.message)![1]!;
        // The id is a field of the rejection too, so a program reads it without parsing the message.
        expect(err.fields).toStrictEqual({ task_id: id });
        expect([err.code, err.message]).toStrictEqual([
          "task_failed",
          `subagent task ${id} (agent "broken") failed: disk full; its output and usage stay readable with ptc_task_output({ task_id: "${id}" })`,
        ]);
        const out = await call(tools.ptc_task_output!, { task_id: id });
        expect(out.sc).toStrictEqual({
          task_id: id,
          status: "failed",
          output: "partial ",
          output_bytes: 8,
          output_preview: "partial ",
          output_truncated: false,
          report_channel: "none",
          usage: { input: 7, output: 3, cost: 0, turns: 1 },
        });
        expect(usageInText(out)).toStrictEqual(out.sc.usage);
      });

      it("refuses depth 4 and unknown agents with what to do", async () => {
        const { tools } = setup();
        const deep = await refusal(tools.ptc_subagent!, { agent: "echo", task: "x" }, ctx(3));
        expect([deep.code, deep.message]).toStrictEqual([
          "task_depth_exceeded",
          'cannot spawn agent "echo" at depth 4: subagents nest at most 3 deep and this program already runs at depth 3; do this work here instead of spawning another subagent',
        ]);
        const unknown = await refusal(tools.ptc_subagent!, { agent: "nobody", task: "x" });
        expect([unknown.code, unknown.message]).toStrictEqual([
          "agent_unknown",
          'unknown agent "nobody"; known agents: adv, big, broken, echo, gated, lines, quiet, reporter (loaded from code). Use one of them, or add nobody.md to one of those directories',
        ]);
      });

      it("links a child to the calling task (ctx.taskId) for depth and parent", async () => {
        const { host, tools } = setup();
        const parent = await call(tools.ptc_subagent!, { agent: "gated", task: "p", background: true });
        const child = await call(tools.ptc_subagent!, { agent: "echo", task: "c", result_view: "full" }, ctx(0, parent.sc.task_id as string));
        const t = child.sc.task as Record<string, unknown>;
        expect([t.depth, t.parent_task_id]).toStrictEqual([2, parent.sc.task_id]);
        gate.current.resolve();
        await host.wait(parent.sc.task_id as string);
      });
    });

    describe("ptc_task_list", () => {
      it("lists rows with output_bytes and error_message only when present; full rows are the snake records", async () => {
        const { host, tools } = setup({ maxRunning: 1 });
        const ok = await call(tools.ptc_subagent!, { agent: "echo", task: "one" });
        await refusal(tools.ptc_subagent!, { agent: "broken", task: "two" });
        const running = await call(tools.ptc_subagent!, { agent: "gated", task: "three", background: true, label: "gate" });
        const queued = await call(tools.ptc_subagent!, { agent: "echo", task: "four", background: true });
        void ok;
        const ids = host.list().records.map((r) => r.id);
        const r = await call(tools.ptc_task_list!, {});
        expect(r.sc).toStrictEqual({
          tasks: [
            { id: ids[0], status: "succeeded", agent: "echo", depth: 1, label: "one", output_bytes: 9 },
            { id: ids[1], status: "failed", agent: "broken", depth: 1, label: "two", output_bytes: 8, error_message: "disk full" },
            { id: ids[2], status: "running", agent: "gated", depth: 1, label: "gate", output_bytes: 8 },
            { id: ids[3], status: "queued", agent: "echo", depth: 1, label: "four" },
          ],
          count: 4,
        });
        expect(Object.hasOwn((r.sc.tasks as object[])[3]!, "output_bytes")).toBe(false);
        expect(r.content[0]!.text).toBe(
          [
            `4 tasks`,
            `${ids[0]} succeeded echo depth=1 "one" 9B`,
            `${ids[1]} failed broken depth=1 "two" 8B error: disk full`,
            `${ids[2]} running gated depth=1 "gate" 8B`,
            `${ids[3]} queued echo depth=1 "four" 0B`,
          ].join("\n"),
        );
        const filtered = await call(tools.ptc_task_list!, { status: ["running", "queued"], limit: 1 });
        expect(filtered.sc).toStrictEqual({ tasks: [{ id: queued.sc.task_id, status: "queued", agent: "echo", depth: 1, label: "four" }], count: 2 });
        const full = await call(tools.ptc_task_list!, { result_view: "full" });
        expect(full.sc).toStrictEqual({ tasks: host.list().records.map(toSnake), count: 4 });
        assertViewSubset(r.sc, full.sc);
        const details = r.details as { tasks: Array<{ id: string; outputPreview: string }> };
        expect(details.tasks.map((t) => t.outputPreview)).toStrictEqual(["echo: one", "partial ", "started\n", ""]);
        expect((await refusal(tools.ptc_task_list!, { status: ["done"] })).code).toBe("tool_invalid_input");
        void running;
      });
    });

    describe("ptc_task_list against long error messages", () => {
      it("cuts each row's error_message at 300 characters, in both views, saying where the whole message is", async () => {
        const host = new TaskHost({
          store: backend.store(),
          agents: new AgentRegistry({
            dirs: [],
            agents: [
              {
                name: "verbose",
                description: "d",
                driver: "function",
                run: async () => {
                  throw new Error("e".repeat(50_000));
                },
              },
            ],
          }),
        });
        hosts.push(host);
        const tools = Object.fromEntries(ptcTools(host).map((t) => [t.name, t])) as Record<string, Tool>;
        for (let i = 0; i < 3; i++) await refusal(tools.ptc_subagent!, { agent: "verbose", task: `t${i}` });
        const compact = await call(tools.ptc_task_list!, {});
        const full = await call(tools.ptc_task_list!, { result_view: "full" });
        for (const view of [compact, full]) {
          for (const row of view.sc.tasks as Array<{ id: string; error_message: string }>) {
            // The stored message is 4,096 characters and its own cut note (4,125 in all).
            expect(row.error_message).toBe(`${"e".repeat(300)}… (3825 more characters: ptc_task_output({ task_id: "${row.id}" }) has the whole message)`);
          }
        }
        assertViewSubset(compact.sc, full.sc);
        // The record keeps up to 4 KiB of it; ptc_task_output shows that much.
        const id = (compact.sc.tasks as Array<{ id: string }>)[0]!.id;
        const out = await call(tools.ptc_task_output!, { task_id: id, result_view: "full" });
        expect((out.sc.task as { error_message: string }).error_message).toMatch(/^e{4096}… \(45904 more characters cut\)$/);
        expect(JSON.stringify(compact.sc).length).toBeLessThan(2000);
      });
    });

    describe("ptc_task_output", () => {
      it("running: current status, no usage, no report_channel; paging with since_bytes", async () => {
        const { tools } = setup();
        const bg = await call(tools.ptc_subagent!, { agent: "gated", task: "w", background: true });
        const id = bg.sc.task_id as string;
        const r = await call(tools.ptc_task_output!, { task_id: id });
        expect(r.sc).toStrictEqual({ task_id: id, status: "running", output: "started\n", output_bytes: 8, output_preview: "started\n", output_truncated: false });
        expect(usageInText(r)).toBe("not recorded");
        gate.current.resolve();
        const done = await (async () => {
          for (;;) {
            const o = await call(tools.ptc_task_output!, { task_id: id, since_bytes: 8 });
            if (o.sc.status === "succeeded") return o;
            await new Promise((res) => setTimeout(res, 5));
          }
        })();
        expect(done.sc).toStrictEqual({
          task_id: id,
          status: "succeeded",
          output: "released",
          output_bytes: 16,
          output_preview: "started\nreleased",
          output_truncated: false,
          report_channel: "none",
          usage: { input: 0, output: 0, cost: 0, turns: 0 },
        });
        const bad = await refusal(tools.ptc_task_output!, { task_id: id, since_bytes: 17 });
        expect([bad.code, bad.message]).toStrictEqual([
          "task_output_range",
          `"since_bytes" 17 is past the end of task ${id}'s output (16 bytes); pass a value from 0 to 16, e.g. the output_bytes of the previous read`,
        ]);
      });

      it("succeeded with a report; full view adds the record; compact ⊆ full", async () => {
        const { host, tools } = setup();
        await call(tools.ptc_subagent!, { agent: "reporter", task: "r" });
        const id = host.list().records[0]!.id;
        const r = await call(tools.ptc_task_output!, { task_id: id });
        const report = { summary: "found one", findings: [{ what: "bug", evidence: "a.ts:1" }], files_touched: ["a.ts"], usage: REPORTER_USAGE };
        const compact = {
          task_id: id,
          status: "succeeded",
          output: "analysis text",
          output_bytes: 13,
          output_preview: "analysis text",
          output_truncated: false,
          report_channel: "tool",
          read_only_tier: "advisory",
          report,
          usage: REPORTER_USAGE,
        };
        expect(r.sc).toStrictEqual(compact);
        expect(usageInText(r)).toStrictEqual(REPORTER_USAGE);
        const full = await call(tools.ptc_task_output!, { task_id: id, result_view: "full" });
        expect(full.sc).toStrictEqual({ ...compact, task: toSnake(host.get(id)!) });
        assertViewSubset(r.sc, full.sc);
      });

      it("truncated: the last 50 KB of a long last line, cut on a character and marked; a full log path, no preview", async () => {
        const { tools } = setup();
        const r0 = await call(tools.ptc_subagent!, { agent: "big", task: "b", result_view: "full" });
        const id = (r0.sc.task as { id: string }).id;
        const r = await call(tools.ptc_task_output!, { task_id: id });
        const total = 60 * 1024 + 5;
        // The 60 KB line ends 5 bytes before the end: dropping it whole would leave "end\n" (4 bytes).
        expect(r.sc).toStrictEqual({
          task_id: id,
          status: "succeeded",
          output: "x".repeat(50 * 1024 - 5) + "\nend\n",
          output_bytes: total,
          output_truncated: true,
          output_full_path: r.sc.output_full_path,
          report_channel: "none",
          usage: { input: 0, output: 0, cost: 0, turns: 0 },
        });
        expect(readFileSync(r.sc.output_full_path as string, "utf8")).toBe("x".repeat(60 * 1024) + "\nend\n");
        expect(Object.hasOwn(r.sc, "output_preview")).toBe(false);
        expect(r.content[0]!.text).toBe(
          [
            `Task ${id} (agent big, depth 1) succeeded, exit code 0`,
            "usage: input=0 output=0 cost=0 turns=0",
            `[output cut to its last 51200 bytes of ${total}, starting mid-line; full log: ${r.sc.output_full_path}]`,
            "[the text below shows the last 32768 bytes of this page; structuredContent.output has all of it]",
            "",
            `…${"x".repeat(32768 - 5)}\nend\n`,
          ].join("\n"),
        );
      });

      it("canceled has usage; lost has neither usage nor report_channel", async () => {
        const store = backend.store();
        const { tools } = setup({ store });
        const bg = await call(tools.ptc_subagent!, { agent: "gated", task: "w", background: true });
        const id = bg.sc.task_id as string;
        const stop = await call(tools.ptc_task_stop!, { task_id: id, reason: "no longer needed" });
        expect(stop.sc).toStrictEqual({ task_id: id, status: "canceled", from_status: "running", stop_reason: "no longer needed" });
        const canceled = await call(tools.ptc_task_output!, { task_id: id });
        expect(canceled.sc).toStrictEqual({
          task_id: id,
          status: "canceled",
          output: "started\n",
          output_bytes: 8,
          output_preview: "started\n",
          output_truncated: false,
          report_channel: "none",
          usage: { input: 0, output: 0, cost: 0, turns: 0 },
        });
        expect(usageInText(canceled)).toStrictEqual(canceled.sc.usage);
        expect(usageInText(stop)).toStrictEqual(canceled.sc.usage);

        // A record whose owner process is gone: the next host on the store marks it lost.
        store.insert({
          id: "01ARZ3NDEKTSV4RRFFQ69G5FAV",
          agent: "echo",
          driver: "function",
          task: "t",
          label: "t",
          depth: 1,
          background: true,
          cwd: "/",
          status: "running",
          owner: { pid: 2 ** 22 + 1, startTime: "proc:1" },
          createdAt: 0,
          startedAt: 0,
          outputBytes: 0,
        });
        store.appendOutput("01ARZ3NDEKTSV4RRFFQ69G5FAV", Buffer.from("before the crash\n"));
        const next = setup({ store });
        const lost = await call(next.tools.ptc_task_output!, { task_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV" });
        expect(lost.sc).toStrictEqual({
          task_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV",
          status: "lost",
          output: "before the crash\n",
          output_bytes: 17,
          output_preview: "before the crash\n",
          output_truncated: false,
        });
        expect(usageInText(lost)).toBe("not recorded");
        const full = await call(next.tools.ptc_task_output!, { task_id: "01ARZ3NDEKTSV4RRFFQ69G5FAV", result_view: "full" });
        expect((full.sc.task as Record<string, unknown>).lost_reason).toBe("host_exited_while_running");
      });

      it("a legacy record (written before usage existed) has no usage, and its text shows the report's own numbers", async () => {
        const store = backend.store();
        const id = "01ARZ3NDEKTSV4RRFFQ69G5FAW";
        store.insert({
          id,
          agent: "echo",
          driver: "function",
          task: "t",
          label: "t",
          depth: 1,
          background: true,
          cwd: "/",
          status: "succeeded",
          owner: { pid: process.pid, startTime: "proc:1" },
          createdAt: 0,
          startedAt: 0,
          endedAt: 1,
          exitCode: 0,
          reportChannel: "tool",
          outputBytes: 2,
          report: { summary: "old", findings: [], files_touched: [], usage: { input: 5, output: 6, cost: 0.5, turns: 2 } },
        });
        store.appendOutput(id, Buffer.from("ok"));
        const { tools } = setup({ store });
        const out = await call(tools.ptc_task_output!, { task_id: id });
        expect(Object.hasOwn(out.sc, "usage")).toBe(false);
        expect(usageInText(out)).toBe("not recorded");
        expect(out.content[0]!.text).toContain("report: old\nreport usage: input=5 output=6 cost=0.5 turns=2");
      });

      it("the model text of a large page keeps its newest part", async () => {
        const { tools } = setup();
        const r0 = await call(tools.ptc_subagent!, { agent: "lines", task: "b", result_view: "full" });
        const id = (r0.sc.task as { id: string }).id;
        const page = await call(tools.ptc_task_output!, { task_id: id });
        // The page (about 45 KB) is whole in structuredContent; the model's text keeps its end.
        expect([page.sc.output_truncated, (page.sc.output as string).startsWith("line 0000")]).toStrictEqual([false, true]);
        const text = page.content[0]!.text;
        expect(text.endsWith(`line 1499 ${"y".repeat(20)}\n`)).toBe(true);
        expect(text).toContain("[the text below shows the last 32768 bytes of this page; structuredContent.output has all of it]");
        expect(Buffer.byteLength(text)).toBeLessThanOrEqual(40_000);
      });

      it("refuses an unknown task id with what to do", async () => {
        const { tools } = setup();
        const err = await refusal(tools.ptc_task_output!, { task_id: "nope" });
        expect([err.code, err.message]).toStrictEqual(["task_not_found", 'unknown task id "nope"; list task ids with ptc_task_list']);
      });
    });

    describe("ptc_task_stop", () => {
      it("cancels a queued task, refuses a finished one, and its full view carries the record", async () => {
        const { host, tools } = setup({ maxRunning: 1 });
        await call(tools.ptc_subagent!, { agent: "gated", task: "a", background: true });
        const q = await call(tools.ptc_subagent!, { agent: "echo", task: "b", background: true });
        const id = q.sc.task_id as string;
        const r = await call(tools.ptc_task_stop!, { task_id: id, result_view: "full" });
        expect(r.sc).toStrictEqual({ task_id: id, status: "canceled", from_status: "queued", task: toSnake(host.get(id)!) });
        expect(Object.hasOwn(r.sc, "stop_reason")).toBe(false);
        expect(r.content[0]!.text).toBe(`Stopped task ${id} (agent echo): queued → canceled\nusage: input=0 output=0 cost=0 turns=0`);
        const again = await refusal(tools.ptc_task_stop!, { task_id: id });
        expect([again.code, again.message]).toStrictEqual([
          "task_illegal_transition",
          `task ${id} cannot go from "canceled" to "canceled": it has already ended (canceled); read its output with ptc_task_output or spawn a new task`,
        ]);
      });
    });

    describe("what survives a cut of the text, and what each channel says", () => {
      const LONG = "e".repeat(50_000);
      const AGENTS_17: AgentInput[] = [
        {
          name: "verbose",
          description: "d",
          driver: "function",
          run: async ({ emit }) => {
            emit({ type: "text", text: "partial " });
            throw new Error(LONG);
          },
        },
        // 2,032 bytes of stderr: the driver keeps its last 2,000 characters in the error message.
        { name: "loud", description: "d", driver: "command", command: [process.execPath, "-e", "process.stderr.write('s'.repeat(2032)); process.exit(1)"] },
        {
          name: "fenced",
          description: "d",
          driver: "function",
          run: async ({ emit }) => {
            emit({ type: "text", text: 'done\n```json\n{"summary":"s"}\n```\n' });
            throw new Error("crashed after");
          },
        },
        {
          name: "eventful",
          description: "d",
          driver: "function",
          run: async ({ emit }) => {
            emit({ type: "report", report: { summary: "s" } });
            emit({ type: "text", text: "x" });
            throw new Error("crashed after");
          },
        },
        {
          name: "quietfail",
          description: "d",
          driver: "function",
          report: false,
          run: async () => {
            throw new Error("no");
          },
        },
        {
          name: "wait",
          description: "d",
          driver: "function",
          run: async ({ emit, signal }) => {
            emit({ type: "text", text: "w" });
            await new Promise((_, rej) => signal.addEventListener("abort", () => rej(new Error("stopped"))));
          },
        },
        {
          name: "readonly",
          description: "d",
          driver: "function",
          readOnly: true,
          run: async ({ emit }) => {
            emit({ type: "report", report: { summary: "ok", findings: [{ what: "w", evidence: "e" }], files_touched: ["a.ts"] } });
            return "r";
          },
        },
      ];

      async function failedTask(tools: Record<string, Tool>, agent: string): Promise<string> {
        const err = await refusal(tools.ptc_subagent!, { agent, task: "go" });
        return err.fields!.task_id!;
      }

      it("a 50,000-character error message is stored cut to 4 KiB, and the budget cuts the rest: the status and usage lines stay", async () => {
        const { tools } = setup({ agents: AGENTS_17 });
        const id = await failedTask(tools, "verbose");
        const r = await call(tools.ptc_task_output!, { task_id: id }, ctx(), 3000);
        const text = r.content[0]!.text;
        expect(Buffer.byteLength(text)).toBe(3000);
        // The record keeps the first 4,096 characters and says how many it cut; the budget then cuts the middle.
        expect(text).toBe(
          `Task ${id} (agent verbose, depth 1) failed, exit code 1\nusage: input=0 output=0 cost=0 turns=0\nerror: ${"e".repeat(1630)}` +
            `\n\n[… 1337 of 4260 bytes of output cut; the full output was not saved …]\n\n${"e".repeat(1129)}… (45904 more characters cut)\n\npartial `,
        );
        expect(usageInText(r)).toStrictEqual(r.sc.usage);
      });

      it("a 2,032-character stderr under a 1,000-byte budget keeps the status and usage lines whole", async () => {
        const { tools } = setup({ agents: AGENTS_17 });
        const id = await failedTask(tools, "loud");
        const r = await call(tools.ptc_task_output!, { task_id: id }, ctx(), 1000);
        const pinned = `Task ${id} (agent loud, depth 1) failed, exit code 1\nusage: input=0 output=0 cost=0 turns=0\n`;
        expect(r.content[0]!.text).toBe(
          `${pinned}error: the command exited with code 1: ${"s".repeat(401)}\n\n[… 1229 of 2152 bytes of output cut; the full output was not saved …]\n\n${"s".repeat(370)}`,
        );
        // Any budget down to the minimum keeps the two lines whole, and never exceeds itself.
        for (const budget of [256, 300, 400, 512, 777, 1000, 2048]) {
          const cut = (await call(tools.ptc_task_output!, { task_id: id }, ctx(), budget)).content[0]!.text;
          expect([cut.startsWith(pinned), Buffer.byteLength(cut) <= budget]).toStrictEqual([true, true]);
        }
      });

      it("status lines read as English for every status", async () => {
        const { host, tools } = setup({ agents: [...AGENTS_17, ...AGENTS], maxRunning: 1 });
        const first = (r: ToolCallResult) => r.content[0]!.text.split("\n")[0];
        const ok = await call(tools.ptc_subagent!, { agent: "echo", task: "hi" });
        const okId = host.list().records[0]!.id;
        expect(first(ok)).toBe(`Task ${okId} (agent echo, depth 1) succeeded, exit code 0`);
        const failedId = await failedTask(tools, "quietfail");
        expect(first(await call(tools.ptc_task_output!, { task_id: failedId }))).toBe(`Task ${failedId} (agent quietfail, depth 1) failed, exit code 1`);
        const running = (await call(tools.ptc_subagent!, { agent: "wait", task: "w", background: true })).sc.task_id as string;
        const queued = (await call(tools.ptc_subagent!, { agent: "wait", task: "q", background: true })).sc.task_id as string;
        expect(first(await call(tools.ptc_task_output!, { task_id: running }))).toBe(`Task ${running} (agent wait, depth 1) is running`);
        expect(first(await call(tools.ptc_task_output!, { task_id: queued }))).toBe(`Task ${queued} (agent wait, depth 1) is queued`);
        await call(tools.ptc_task_stop!, { task_id: queued });
        expect(first(await call(tools.ptc_task_output!, { task_id: queued }))).toBe(`Task ${queued} (agent wait, depth 1) was canceled`);
        const stopped = await call(tools.ptc_task_stop!, { task_id: running, reason: "enough" });
        expect(stopped.content[0]!.text).toBe(`Stopped task ${running} (agent wait): running → canceled\nusage: input=0 output=0 cost=0 turns=0\nstop reason: enough`);
        expect(first(await call(tools.ptc_task_output!, { task_id: running }))).toBe(`Task ${running} (agent wait, depth 1) was canceled, exit code 1`);
        const store = backend.store();
        store.insert({
          id: "01ARZ3NDEKTSV4RRFFQ69G5FAX",
          agent: "echo",
          driver: "function",
          task: "t",
          label: "t",
          depth: 1,
          background: true,
          cwd: "/",
          status: "running",
          owner: { pid: 2 ** 22 + 1, startTime: "proc:1" },
          createdAt: 0,
          startedAt: 0,
          outputBytes: 0,
        });
        const lost = setup({ store });
        const text = (await call(lost.tools.ptc_task_output!, { task_id: "01ARZ3NDEKTSV4RRFFQ69G5FAX" })).content[0]!.text;
        expect(text.split("\n").slice(0, 3)).toStrictEqual([
          "Task 01ARZ3NDEKTSV4RRFFQ69G5FAX (agent echo, depth 1) was lost (host_exited_while_running)",
          "usage: not recorded",
          `error: the host (pid ${2 ** 22 + 1}) exited while the task was running; its output so far is kept — read it with ptc_task_output, or spawn the task again`,
        ]);
        expect(/\bis (succeeded|failed|canceled|lost)\b/.test(text)).toBe(false);
      });

      it("a failed task's channel says what was stored: no report, so none (or opted-out)", async () => {
        const { tools } = setup({ agents: AGENTS_17 });
        for (const [agent, channel] of [
          ["fenced", "none"],
          ["eventful", "none"],
          ["quietfail", "opted-out"],
        ] as const) {
          const id = await failedTask(tools, agent);
          const out = await call(tools.ptc_task_output!, { task_id: id });
          expect([out.sc.status, out.sc.report_channel, Object.hasOwn(out.sc, "report")]).toStrictEqual(["failed", channel, false]);
        }
      });

      it("details are camelCase at every depth; the report inside keeps its wire shape, the same in every channel", async () => {
        const { tools } = setup({ agents: AGENTS_17 });
        const r = await call(tools.ptc_subagent!, { agent: "readonly", task: "go" });
        const task = (r.details as { task: Record<string, unknown> }).task;
        const snakeKeys: string[] = [];
        const walk = (value: unknown, path: string): void => {
          if (value === null || typeof value !== "object") return;
          for (const [key, item] of Object.entries(value)) {
            if (/_/.test(key)) snakeKeys.push(`${path}.${key}`);
            if (key !== "report") walk(item, `${path}.${key}`);
          }
        };
        walk(r.details, "details");
        expect(snakeKeys).toStrictEqual([]);
        expect(task.report).toStrictEqual(r.sc.report);
        expect(task.report).toStrictEqual({ summary: "ok", findings: [{ what: "w", evidence: "e" }], files_touched: ["a.ts"], usage: { input: 0, output: 0, cost: 0, turns: 0 } });
      });

      it("a read-only function agent is advisory: it is host code, which no wall confines", async () => {
        const { tools } = setup({ agents: AGENTS_17 });
        const r = await call(tools.ptc_subagent!, { agent: "readonly", task: "go" });
        expect([r.sc.read_only_tier, (r.details as { task: Record<string, unknown> }).task.readOnlyTier]).toStrictEqual(["advisory", "advisory"]);
      });
    });
  });
}
