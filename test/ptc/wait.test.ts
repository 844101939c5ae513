// ptc_task_wait on a task host of function agents: every way a wait ends, what each channel says,
// and the refusals. End-to-end programs that wait are in wait-e2e.test.ts.
import { describe, it, expect, afterEach } from "vitest";
import { assertViewSubset, type Tool, type ToolContext } from "../../src/tools/index.js";
import { AgentRegistry, TaskHost, memoryTaskStore, type AgentInput } from "../../src/tasks/index.js";
import { ptcTools, toSnake } from "../../src/ptc/index.js";
import { callTool, refusalOf } from "./helpers.js";

/** Gates by task text: a "gated" task ends when its gate is opened (or it is stopped). */
const gates = new Map<string, () => void>();
const open = (task: string): void => gates.get(task)!();
const AGENTS: AgentInput[] = [
  {
    name: "gated",
    description: "d",
    driver: "function",
    run: async ({ task, emit, signal }) => {
      emit({ type: "turn" });
      emit({ type: "usage", input: 10, output: 2 });
      await new Promise<void>((resolve, reject) => {
        gates.set(task, resolve);
        signal.addEventListener("abort", () => reject(new Error("stopped")));
      });
      if (task.startsWith("fail")) throw new Error(`${task} broke`);
      return `done ${task}`;
    },
  },
];

const hosts: TaskHost[] = [];
afterEach(async () => {
  for (const release of gates.values()) release();
  gates.clear();
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

function setup(opts: { maxRunning?: number } = {}) {
  const host = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents: AGENTS, dirs: [] }), killGraceMs: 50, ...opts });
  hosts.push(host);
  const tools = Object.fromEntries(ptcTools(host).map((t) => [t.name, t])) as Record<string, Tool>;
  return { host, tools };
}

const ctx = (extra: Partial<ToolContext> = {}): ToolContext => ({ signal: new AbortController().signal, callId: "c", runId: "r", depth: 0, ...extra });

const call = (tool: Tool, input: Record<string, unknown>, c: ToolContext = ctx(), outputBudget?: number) => callTool(tool, input, c, outputBudget);
const refusal = (tool: Tool, input: Record<string, unknown>, c: ToolContext = ctx()) => refusalOf(tool, input, c);

async function spawn(tools: Record<string, Tool>, task: string, c: ToolContext = ctx()): Promise<string> {
  return (await call(tools.ptc_subagent!, { agent: "gated", task, background: true, label: task }, c)).sc.task_id as string;
}

/** Resolves once every task in `tasks` has started (its gate exists). */
async function started(...tasks: string[]): Promise<void> {
  while (!tasks.every((t) => gates.has(t))) await new Promise((r) => setTimeout(r, 2));
}

const USAGE = { input: 10, output: 2, cost: 0, turns: 1 };

describe("ptc_task_wait", () => {
  it('until "all": returns when the last task ends, with ptc_task_list rows, done and pending', async () => {
    const { host, tools } = setup();
    const [a, b, c] = [await spawn(tools, "a"), await spawn(tools, "b"), await spawn(tools, "fail-c")];
    await started("a", "b", "fail-c");
    const waiting = call(tools.ptc_task_wait!, { task_ids: [a, b, c] });
    open("a");
    open("fail-c");
    await host.wait(c);
    // Two of three ended: the wait is still waiting.
    expect(await Promise.race([waiting.then(() => "returned"), new Promise((r) => setTimeout(() => r("waiting"), 50))])).toBe("waiting");
    open("b");
    const r = await waiting;
    expect(r.sc).toStrictEqual({
      tasks: [
        { id: a, status: "succeeded", agent: "gated", depth: 1, label: "a", output_bytes: 6 },
        { id: b, status: "succeeded", agent: "gated", depth: 1, label: "b", output_bytes: 6 },
        { id: c, status: "failed", agent: "gated", depth: 1, label: "fail-c", error_message: "fail-c broke" },
      ],
      done: [a, b, c],
      pending: [],
      timed_out: false,
    });
    // The same rows as ptc_task_list's.
    const list = await call(tools.ptc_task_list!, {});
    expect(r.sc.tasks).toStrictEqual(list.sc.tasks);
    expect(r.content).toStrictEqual([
      {
        type: "text",
        text: [
          "3 of 3 tasks ended (2 succeeded, 1 failed).",
          `${a} succeeded gated depth=1 "a" 6B usage: input=10 output=2 cost=0 turns=1`,
          `${b} succeeded gated depth=1 "b" 6B usage: input=10 output=2 cost=0 turns=1`,
          `${c} failed gated depth=1 "fail-c" 0B usage: input=10 output=2 cost=0 turns=1 error: fail-c broke`,
        ].join("\n"),
      },
    ]);
    expect((r.details as { done: string[]; timedOut: boolean }).timedOut).toBe(false);
  });

  it('until "any": returns when the first task ends; the full view carries whole records', async () => {
    const { host, tools } = setup();
    const [a, b] = [await spawn(tools, "a"), await spawn(tools, "b")];
    await started("a", "b");
    const waiting = call(tools.ptc_task_wait!, { task_ids: [a, b], until: "any", result_view: "full" });
    open("b");
    const r = await waiting;
    expect(r.sc).toStrictEqual({ tasks: [toSnake(host.get(a)!), toSnake(host.get(b)!)], done: [b], pending: [a], timed_out: false });
    expect((r.sc.tasks as Array<{ usage?: unknown }>)[1]!.usage).toStrictEqual(USAGE);
    expect(r.content[0]!.text.split("\n")[0]).toBe("1 of 2 tasks ended (1 succeeded); 1 pending (1 running).");
    // Asked again for what is pending, it waits for that.
    const compact = call(tools.ptc_task_wait!, { task_ids: r.sc.pending as string[], until: "any" });
    open("a");
    expect((await compact).sc).toStrictEqual({ tasks: [{ id: a, status: "succeeded", agent: "gated", depth: 1, label: "a", output_bytes: 6 }], done: [a], pending: [], timed_out: false });
  });

  it("tells a caller listening for progress of each task as it ends", async () => {
    const { tools } = setup();
    const [a, b] = [await spawn(tools, "a"), await spawn(tools, "fail-b")];
    await started("a", "fail-b");
    const heard: string[] = [];
    const waiting = call(tools.ptc_task_wait!, { task_ids: [a, b] }, ctx({ progress: (message) => heard.push(message) }));
    open("fail-b");
    while (heard.length === 0) await new Promise((r) => setTimeout(r, 2));
    open("a");
    await waiting;
    expect(heard).toStrictEqual([`task ${b} (gated, "fail-b"): failed`, `task ${a} (gated, "a"): succeeded`]);
  });

  it("returns at once when the condition already holds, and dedupes ids", async () => {
    const { host, tools } = setup();
    const a = await spawn(tools, "a");
    await started("a");
    open("a");
    await host.wait(a);
    const r = await call(tools.ptc_task_wait!, { task_ids: [a, a], timeout_ms: 0 });
    expect([r.sc.done, r.sc.pending, r.sc.timed_out]).toStrictEqual([[a], [], false]);
    expect((r.sc.tasks as unknown[]).length).toBe(1);
  });

  it("times out by its own timeout_ms: timed_out, the statuses as they are, and what to do in the text", async () => {
    const { tools } = setup({ maxRunning: 1 });
    const [a, b] = [await spawn(tools, "a"), await spawn(tools, "b")];
    const r = await call(tools.ptc_task_wait!, { task_ids: [a, b], timeout_ms: 30 });
    expect(r.sc).toStrictEqual({
      tasks: [
        { id: a, status: "running", agent: "gated", depth: 1, label: "a" },
        { id: b, status: "queued", agent: "gated", depth: 1, label: "b" },
      ],
      done: [],
      pending: [a, b],
      timed_out: true,
    });
    const [head, ...rows] = r.content[0]!.text.split("\n");
    expect(head).toMatch(/^Timed out after \d+ ms: 0 of 2 tasks ended; 2 pending \(1 running, 1 queued\)\. Wait again for the pending ids, or stop them with ptc_task_stop\.$/);
    expect(rows).toStrictEqual([`${a} running gated depth=1 "a" 0B`, `${b} queued gated depth=1 "b" 0B`]);
  });

  it("returns before the program's deadline (ctx.deadline) with timed_out, never past it", async () => {
    const { tools } = setup();
    const a = await spawn(tools, "a");
    const deadline = Date.now() + 1000;
    const r = await call(tools.ptc_task_wait!, { task_ids: [a] }, ctx({ deadline }));
    // With 1 s left it waits half of it, so the program keeps time to print.
    expect(Date.now()).toBeLessThan(deadline);
    expect([r.sc.done, r.sc.pending, r.sc.timed_out]).toStrictEqual([[], [a], true]);
    expect(r.content[0]!.text.split("\n")[0]).toMatch(/^Stopped waiting after \d+ ms, shortly before the program's deadline: 0 of 1 task ended; 1 pending \(1 running\)\. Print what you have now\.$/);
    // A timeout_ms past the deadline is capped by it too.
    const capped = await call(tools.ptc_task_wait!, { task_ids: [a], timeout_ms: 600_000 }, ctx({ deadline: Date.now() + 200 }));
    expect(capped.sc.timed_out).toBe(true);
  });

  it("rejects with tool_aborted when its caller aborts, and leaves the tasks running", async () => {
    const { host, tools } = setup();
    const a = await spawn(tools, "a");
    const controller = new AbortController();
    const waiting = refusal(tools.ptc_task_wait!, { task_ids: [a] }, ctx({ signal: controller.signal }));
    await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    const err = await waiting;
    expect(err.code).toBe("tool_aborted");
    expect(err.message).toMatch(/^ptc_task_wait was cancelled after \d+ ms, with 1 of 1 tasks pending \(the program ended or was stopped\)$/);
    expect(host.get(a)!.status).toBe("running");
  });

  it("refuses unknown ids in the ptc tools' words, and a task waiting for itself", async () => {
    const { tools } = setup();
    const a = await spawn(tools, "a");
    const one = await refusal(tools.ptc_task_wait!, { task_ids: [a, "nope"] });
    expect([one.code, one.message, one.fields]).toStrictEqual(["task_not_found", 'unknown task id "nope"; list task ids with ptc_task_list', { task_id: "nope" }]);
    const two = await refusal(tools.ptc_task_wait!, { task_ids: ["x1", a, "x2"] });
    expect([two.code, two.message]).toStrictEqual(["task_not_found", 'unknown task ids "x1", "x2"; list task ids with ptc_task_list']);
    const self = await refusal(tools.ptc_task_wait!, { task_ids: [a] }, ctx({ taskId: a, depth: 1 }));
    expect([self.code, self.message]).toStrictEqual(["invalid_argument", `task ${a} is the task this program runs in: it cannot end while its program waits for it; leave it out of "task_ids"`]);
    const empty = await refusal(tools.ptc_task_wait!, { task_ids: [] });
    expect(empty.code).toBe("tool_invalid_input");
    const until = await refusal(tools.ptc_task_wait!, { task_ids: [a], until: "some" });
    expect(until.code).toBe("tool_invalid_input");
  });

  it("defaults to the background tasks the calling run spawned; outside a run it asks for task_ids", async () => {
    const { host, tools } = setup();
    host.beginRun("run-1");
    const mine = [await spawn(tools, "a", ctx({ runId: "run-1" })), await spawn(tools, "b", ctx({ runId: "run-1" }))];
    await spawn(tools, "other", ctx({ runId: "run-2" }));
    await started("a", "b", "other");
    const waiting = call(tools.ptc_task_wait!, {}, ctx({ runId: "run-1" }));
    open("a");
    open("b");
    expect((await waiting).sc.done).toStrictEqual(mine);
    host.endRun("run-1");
    const outside = await refusal(tools.ptc_task_wait!, {}, ctx({ runId: "run-1" }));
    expect([outside.code, outside.message]).toStrictEqual([
      "invalid_argument",
      'ptc_task_wait needs "task_ids" here: it was not called from a program, so there are no tasks "this program spawned" to wait for; pass the task_id values ptc_subagent returned (ptc_task_list lists them)',
    ]);
    host.beginRun("run-3");
    const none = await refusal(tools.ptc_task_wait!, {}, ctx({ runId: "run-3" }));
    expect(none.message).toBe(
      'this program has spawned no background tasks, so ptc_task_wait has nothing to wait for; spawn with ptc_subagent({ …, background: true }) first, or pass "task_ids" (ptc_task_list lists the tasks of earlier programs)',
    );
  });

  it("inside a task without an open run (a model-driven child), defaults to the task's background children", async () => {
    const { host, tools } = setup();
    const parent = await spawn(tools, "parent");
    const child = await spawn(tools, "child", ctx({ taskId: parent, runId: `task-${parent}`, depth: 1 }));
    await started("child");
    const waiting = call(tools.ptc_task_wait!, {}, ctx({ taskId: parent, runId: `task-${parent}`, depth: 1 }));
    open("child");
    const r = await waiting;
    expect([r.sc.done, (r.sc.tasks as Array<{ depth: number }>)[0]!.depth]).toStrictEqual([[child], 2]);
    expect(host.get(parent)!.status).toBe("running");
  });

  it("the compact view is a subset of the full one for every outcome", async () => {
    const { tools } = setup();
    const a = await spawn(tools, "fail-a");
    await started("fail-a");
    const pending = await call(tools.ptc_task_wait!, { task_ids: [a], timeout_ms: 0, result_view: "full" });
    const compactPending = await call(tools.ptc_task_wait!, { task_ids: [a], timeout_ms: 0 });
    assertViewSubset(compactPending.sc, pending.sc);
    open("fail-a");
    const full = await call(tools.ptc_task_wait!, { task_ids: [a], result_view: "full" });
    const compact = await call(tools.ptc_task_wait!, { task_ids: [a] });
    assertViewSubset(compact.sc, full.sc);
  });
});

describe("tasks of another host", () => {
  it("a task whose host died while it was awaited is marked lost, and the wait returns it done", async () => {
    const store = memoryTaskStore();
    const host = new TaskHost({ store, agents: new AgentRegistry({ agents: AGENTS, dirs: [] }) });
    hosts.push(host);
    const tools = Object.fromEntries(ptcTools(host).map((t) => [t.name, t])) as Record<string, Tool>;
    // Written by a host that is gone (its pid is past any real one), after this host looked for such records.
    const id = "01ARZ3NDEKTSV4RRFFQ69G5FAZ";
    store.insert({
      id,
      agent: "gated",
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
    const r = await call(tools.ptc_task_wait!, { task_ids: [id], timeout_ms: 30_000 });
    expect([r.sc.done, r.sc.timed_out, (r.sc.tasks as Array<{ status: string }>)[0]!.status]).toStrictEqual([[id], false, "lost"]);
  });
});

describe("a waiting task holds no running slot", () => {
  it("with one slot, a task waiting for its own background children lets them run, then takes its slot back", async () => {
    const seen: number[] = [];
    let host!: TaskHost;
    const agents: AgentInput[] = [
      {
        name: "leaf",
        description: "d",
        driver: "function",
        run: async ({ task }) => {
          seen.push(host.running);
          return `leaf ${task}`;
        },
      },
      {
        name: "fanout",
        description: "d",
        driver: "function",
        run: async ({ taskId }) => {
          const ids = [];
          for (const t of ["x", "y"]) ids.push((await host.spawn({ agent: "leaf", task: t, background: true }, { parentTaskId: taskId })).id);
          const queued = ids.map((id) => host.get(id)!.status);
          const r = await host.waitFor(ids, { endAt: Date.now() + 30_000, waiterTaskId: taskId });
          const after = host.running;
          return `${queued.join(",")} → ${r.outcome}: ${r.records.map((x) => x.status).join(",")}; running after ${after}`;
        },
      },
    ];
    host = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents, dirs: [] }), maxRunning: 1 });
    hosts.push(host);
    const parent = await host.spawn({ agent: "fanout", task: "go" });
    // The children queued behind their parent's slot, ran in it one at a time while it waited (one task running each time), and the parent got it back.
    expect(host.output(parent.id).output).toBe("queued,queued → ended: succeeded,succeeded; running after 1");
    expect(seen).toStrictEqual([1, 1]);
    expect([host.running, host.queued]).toStrictEqual([0, 0]);
  });

  it("a task stopped while it waits ends at once and gives its slot back exactly once", async () => {
    let host!: TaskHost;
    const agents: AgentInput[] = [
      { name: "hang", description: "d", driver: "function", run: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("stopped")))) },
      {
        name: "waiter",
        description: "d",
        driver: "function",
        run: async ({ taskId, signal }) => {
          const child = await host.spawn({ agent: "hang", task: "h", background: true }, { parentTaskId: taskId });
          const r = await host.waitFor([child.id], { endAt: Date.now() + 60_000, waiterTaskId: taskId, signal });
          return r.outcome;
        },
      },
    ];
    host = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents, dirs: [] }), maxRunning: 2, killGraceMs: 50 });
    hosts.push(host);
    const waiter = await host.spawn({ agent: "waiter", task: "w", background: true });
    while (host.list().total < 2 || host.list().records[1]!.status !== "running") await new Promise((r) => setTimeout(r, 2));
    // The waiter gave its slot back: only the child counts.
    expect(host.running).toBe(1);
    const stopped = await host.stop(waiter.id, "enough");
    expect([stopped.record.status, stopped.fromStatus]).toStrictEqual(["canceled", "running"]);
    expect(host.list({ status: ["running", "queued", "stopping"] }).total).toBe(0);
    expect([host.running, host.queued]).toStrictEqual([0, 0]);
  });
});
