import { describe, it, expect, afterEach } from "vitest";
import { AgentRegistry, MemoryTaskStore, TaskHost, type TaskError, memoryTaskStore, type AgentInput, type TaskRecord } from "../../src/tasks/index.js";

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const hosts: TaskHost[] = [];
function makeHost(agents: AgentInput[], opts: { maxRunning?: number; maxDepth?: number; killGraceMs?: number } = {}) {
  const host = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents, dirs: [] }), killGraceMs: 50, ...opts });
  hosts.push(host);
  return host;
}
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

const echo: AgentInput = { name: "echo", description: "echoes", driver: "function", run: async ({ task }) => `done: ${task}` };

async function rejection(p: Promise<unknown>): Promise<TaskError> {
  try {
    await p;
  } catch (err) {
    return err as TaskError;
  }
  throw new Error("expected a rejection");
}

describe("TaskHost with the function driver", () => {
  it("runs a foreground task to succeeded with host-measured usage", async () => {
    const host = makeHost([echo]);
    const rec = await host.spawn({ agent: "echo", task: "hello" });
    expect(rec.status).toBe("succeeded");
    expect(rec.exitCode).toBe(0);
    expect(rec.usage).toStrictEqual({ input: 0, output: 0, cost: 0, turns: 0 });
    expect(rec.reportChannel).toBe("none");
    expect(Object.hasOwn(rec, "report")).toBe(false);
    expect(rec.depth).toBe(1);
    expect(rec.label).toBe("hello");
    expect(rec.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(host.output(rec.id).output).toBe("done: hello");
  });

  it("counts usage from events and ignores what the child claims in its report", async () => {
    const host = makeHost([
      {
        name: "liar",
        description: "claims zero usage",
        driver: "function",
        prices: { input: 2, output: 10 },
        run: async ({ emit }) => {
          emit({ type: "turn" });
          emit({ type: "usage", input: 1000, output: 200, cost: 999 });
          emit({ type: "turn" });
          emit({ type: "usage", input: 500, output: 100 });
          emit({ type: "report", report: { summary: "ok", findings: [], files_touched: [], usage: { input: 0, output: 0, cost: 0, turns: 0 } } });
          return "I used no tokens at all";
        },
      },
    ]);
    const rec = await host.spawn({ agent: "liar", task: "t" });
    const usage = { input: 1500, output: 300, cost: (1500 * 2 + 300 * 10) / 1e6, turns: 2 };
    expect(rec.usage).toStrictEqual(usage);
    expect(rec.reportChannel).toBe("tool");
    expect(rec.report).toStrictEqual({ summary: "ok", findings: [], files_touched: [], usage });
  });

  it("marks a child that exits 0 after an error as failed", async () => {
    const host = makeHost([
      {
        name: "sloppy",
        description: "d",
        driver: "function",
        run: async ({ emit }) => {
          emit({ type: "error", message: "could not open file" });
          return "finished anyway";
        },
      },
    ]);
    const err = await rejection(host.spawn({ agent: "sloppy", task: "t" }));
    expect(err.code).toBe("task_failed");
    const rec = host.get(err.taskId!)!;
    expect(rec.status).toBe("failed");
    expect(rec.exitCode).toBe(0);
    expect(rec.errorMessage).toBe("exited 0 after reporting an error: could not open file");
    expect(rec.usage).toStrictEqual({ input: 0, output: 0, cost: 0, turns: 0 });
    expect(err.message).toBe(
      `subagent task ${rec.id} (agent "sloppy") failed: exited 0 after reporting an error: could not open file; its output and usage stay readable with ptc_task_output({ task_id: "${rec.id}" })`,
    );
  });

  it("marks a child that exits 0 with no output as failed", async () => {
    const host = makeHost([{ name: "mute", description: "d", driver: "function", run: async () => "  \n" }]);
    const err = await rejection(host.spawn({ agent: "mute", task: "t" }));
    expect(host.get(err.taskId!)!.errorMessage).toBe("exited 0 without any final output");
  });

  it("stores a report only on success, from a trailing json fence (prompt-json); a failed child's channel says nothing was stored", async () => {
    const text = 'All good.\n```json\n{"summary":"s","findings":[{"what":"w","evidence":"e"}]}\n```\n';
    const host = makeHost([
      { name: "pj", description: "d", driver: "function", run: async () => text },
      {
        name: "pjfail",
        description: "d",
        driver: "function",
        run: async ({ emit }) => {
          emit({ type: "text", text });
          throw new Error("boom");
        },
      },
      { name: "quiet", description: "d", driver: "function", report: false, run: async () => text },
    ]);
    const ok = await host.spawn({ agent: "pj", task: "t" });
    expect(ok.reportChannel).toBe("prompt-json");
    expect(ok.report).toStrictEqual({ summary: "s", findings: [{ what: "w", evidence: "e" }], files_touched: [], usage: { input: 0, output: 0, cost: 0, turns: 0 } });
    const err = await rejection(host.spawn({ agent: "pjfail", task: "t" }));
    const failed = host.get(err.taskId!)!;
    // Its final text ends with the same fenced report, but a failed task stores no report: "none".
    expect([failed.status, failed.reportChannel, Object.hasOwn(failed, "report"), failed.errorMessage]).toStrictEqual(["failed", "none", false, "boom"]);
    const opted = await host.spawn({ agent: "quiet", task: "t" });
    expect([opted.reportChannel, Object.hasOwn(opted, "report")]).toStrictEqual(["opted-out", false]);
  });

  it("a failed child's report channel says what was stored: a report event or fence on failure stores none", async () => {
    const host = makeHost([
      {
        name: "eventful",
        description: "d",
        driver: "function",
        run: async ({ emit }) => {
          emit({ type: "report", report: { summary: "s" } });
          emit({ type: "text", text: "x" });
          throw new Error("crash");
        },
      },
      {
        name: "quietfail",
        description: "d",
        driver: "function",
        report: false,
        run: async () => {
          throw new Error("crash");
        },
      },
    ]);
    for (const [agent, channel] of [
      ["eventful", "none"],
      ["quietfail", "opted-out"],
    ] as const) {
      const failed = host.get((await rejection(host.spawn({ agent, task: "t" }))).taskId!)!;
      expect([failed.status, failed.reportChannel, Object.hasOwn(failed, "report")]).toStrictEqual(["failed", channel, false]);
    }
  });

  it("tags read-only agents enforced only where the host is their one way to act (script, openai)", async () => {
    const host = makeHost([
      { name: "fn", description: "d", driver: "function", readOnly: true, run: async () => "ok" },
      { name: "cmd", description: "d", driver: "command", readOnly: true, command: [process.execPath, "-e", ""] },
      { name: "scr", description: "d", driver: "script", readOnly: true, scriptCode: "text('x')" },
      { name: "oai", description: "d", driver: "openai", readOnly: true, model: "m", baseUrl: "http://127.0.0.1:9" },
      { name: "rw", description: "d", driver: "function", run: async () => "ok" },
    ]);
    const tiers: Record<string, string | undefined> = {};
    for (const agent of ["fn", "cmd", "scr", "oai", "rw"]) {
      const rec = await host.spawn({ agent, task: "t", background: true });
      tiers[agent] = rec.readOnlyTier;
      await host.wait(rec.id);
    }
    // A function is host code and a command its own process: nothing confines either, so "advisory".
    expect(tiers).toStrictEqual({ fn: "advisory", cmd: "advisory", scr: "enforced", oai: "enforced", rw: undefined });
  });

  it("refuses depth 4 and allows depth 3", async () => {
    const host = makeHost([echo]);
    expect((await host.spawn({ agent: "echo", task: "t" }, { depth: 2 })).depth).toBe(3);
    const err = await rejection(host.spawn({ agent: "echo", task: "t" }, { depth: 3 }));
    expect(err.code).toBe("task_depth_exceeded");
    expect(err.message).toBe('cannot spawn agent "echo" at depth 4: subagents nest at most 3 deep and this program already runs at depth 3; do this work here instead of spawning another subagent');
    expect(host.list().total).toBe(1);
  });

  it("takes the depth from the parent task when one is named", async () => {
    const gate = deferred();
    const host = makeHost([
      echo,
      {
        name: "wait",
        description: "d",
        driver: "function",
        run: async () => {
          await gate.promise;
          return "x";
        },
      },
    ]);
    const parent = await host.spawn({ agent: "wait", task: "p", background: true }, { depth: 2 });
    expect(parent.depth).toBe(3);
    const err = await rejection(host.spawn({ agent: "echo", task: "t" }, { parentTaskId: parent.id, depth: 0 }));
    expect(err.code).toBe("task_depth_exceeded");
    gate.resolve();
    await host.wait(parent.id);
  });

  it("runs 8 of 30 background spawns and queues 22 in FIFO order; all finish", async () => {
    const gates = new Map<string, ReturnType<typeof deferred<void>>>();
    const started: string[] = [];
    const host = makeHost([
      {
        name: "gated",
        description: "d",
        driver: "function",
        run: async ({ task }) => {
          started.push(task);
          const g = deferred();
          gates.set(task, g);
          await g.promise;
          return `ok ${task}`;
        },
      },
    ]);
    const recs: TaskRecord[] = [];
    for (let i = 0; i < 30; i++) recs.push(await host.spawn({ agent: "gated", task: `t${i}`, background: true }));
    expect(recs.map((r) => r.status)).toStrictEqual([...Array(8).fill("running"), ...Array(22).fill("queued")]);
    expect(host.list({ status: ["running"] }).total).toBe(8);
    expect(host.list({ status: ["queued"] }).total).toBe(22);
    expect([host.running, host.queued]).toStrictEqual([8, 22]);
    // Release in order; each release lets exactly the next queued task in.
    for (let i = 0; i < 30; i++) {
      await new Promise((r) => setImmediate(r));
      gates.get(`t${i}`)!.resolve();
      await host.wait(recs[i]!.id);
    }
    expect(started).toStrictEqual(recs.map((_, i) => `t${i}`));
    expect(host.list({ status: ["succeeded"] }).total).toBe(30);
    expect([host.running, host.queued]).toStrictEqual([0, 0]);
  });

  it("refuses spawns past the waiting limit with what to do, and takes them again once the queue drains", async () => {
    const gates: Array<() => void> = [];
    const host = new TaskHost({
      store: memoryTaskStore(),
      agents: new AgentRegistry({ dirs: [], agents: [{ name: "gated", description: "d", driver: "function", run: () => new Promise<string>((resolve) => gates.push(() => resolve("ok"))) }] }),
      maxRunning: 1,
      maxQueued: 2,
    });
    const spawned = [];
    for (let i = 0; i < 3; i++) spawned.push(await host.spawn({ agent: "gated", task: `t${i}`, background: true }));
    expect(spawned.map((r) => r.status)).toStrictEqual(["running", "queued", "queued"]);
    await expect(host.spawn({ agent: "gated", task: "t3", background: true })).rejects.toMatchObject({
      code: "task_queue_full",
      message:
        'cannot spawn agent "gated": 2 tasks are already waiting for one of 1 slots (the host\'s limit is 2 waiting); wait for some to finish (ptc_task_wait) or stop ones you no longer need (ptc_task_stop), then spawn again',
    });
    gates.shift()!();
    await host.wait(spawned[0]!.id);
    expect((await host.spawn({ agent: "gated", task: "t4", background: true })).status).toBe("queued");
    expect(() => new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ dirs: [] }), maxQueued: 0 })).toThrow('"maxQueued" must be a positive integer');
    while (gates.length || host.running || host.queued) {
      await new Promise((r) => setImmediate(r));
      gates.shift()?.();
    }
    await host.close();
  });

  it("answers the caller with the true outcome and frees the slot when the store refuses a task's final write, and writes it once the store takes it", async () => {
    let refusals = 1;
    class FlakyStore extends MemoryTaskStore {
      override replace(record: TaskRecord, expect: Parameters<MemoryTaskStore["replace"]>[1]): boolean {
        // Simulates SQLITE_BUSY past busy_timeout, or a full disk, on the terminal write.
        if (record.status === "succeeded" && record.task === "a" && refusals-- > 0) throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
        return super.replace(record, expect);
      }
    }
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const store = new FlakyStore();
      const host = new TaskHost({
        store,
        agents: new AgentRegistry({ dirs: [], agents: [{ name: "fn", description: "d", driver: "function", run: async () => "done" }] }),
        maxRunning: 1,
      });
      hosts.push(host);
      const foreground = host.spawn({ agent: "fn", task: "a" });
      const queued = await host.spawn({ agent: "fn", task: "b", background: true });
      const a = await foreground;
      expect(a.status).toBe("succeeded");
      expect((await host.wait(queued.id)).status).toBe("succeeded");
      expect([host.running, host.queued]).toStrictEqual([0, 0]);
      // The host serves what it knows; the store has the last record it took until the retry lands.
      expect(host.get(a.id)!.status).toBe("succeeded");
      expect(store.get(a.id)!.status).toBe("running");
      expect(host.warnings[0]).toBe(`could not record task ${a.id} as succeeded (database is locked); this host keeps it and writes it again every 1 s`);
      for (let i = 0; i < 200 && store.get(a.id)!.status !== "succeeded"; i++) await new Promise((r) => setTimeout(r, 50));
      expect(store.get(a.id)).toStrictEqual(host.get(a.id));
      await new Promise((r) => setImmediate(r));
      expect(rejections).toStrictEqual([]);
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });

  it("holds top-level foreground spawns to the cap too; a task's own foreground child starts at once", async () => {
    const gates: Array<() => void> = [];
    const host = makeHost(
      [
        { name: "gated", description: "d", driver: "function", run: () => new Promise<string>((resolve) => gates.push(() => resolve("ok"))) },
        { name: "quick", description: "d", driver: "function", run: async () => "quick" },
      ],
      { maxRunning: 2 },
    );
    const foreground = [0, 1, 2].map((i) => host.spawn({ agent: "gated", task: `f${i}` }));
    await new Promise((r) => setImmediate(r));
    expect([host.running, host.queued]).toStrictEqual([2, 1]);
    // A running task's foreground child is not queued behind its own parent.
    const parentId = host.list({ status: ["running"] }).records[0]!.id;
    const child = await host.spawn({ agent: "quick", task: "c" }, { parentTaskId: parentId });
    expect(child.status).toBe("succeeded");
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setImmediate(r));
      gates.shift()!();
    }
    expect((await Promise.all(foreground)).map((r) => r.status)).toStrictEqual(["succeeded", "succeeded", "succeeded"]);
  });

  it("stops a queued task (canceled at once) and a running one, cascading to its children", async () => {
    const host = makeHost(
      [
        {
          name: "sleeper",
          description: "d",
          driver: "function",
          run: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
        },
      ],
      { maxRunning: 2 },
    );
    const parent = await host.spawn({ agent: "sleeper", task: "parent", background: true });
    const child = await host.spawn({ agent: "sleeper", task: "child", background: true }, { parentTaskId: parent.id });
    const queued = await host.spawn({ agent: "sleeper", task: "queued", background: true });
    expect([parent.status, child.status, queued.status, child.depth, child.parentId]).toStrictEqual(["running", "running", "queued", 2, parent.id]);

    const q = await host.stop(queued.id, "not needed");
    expect([q.fromStatus, q.record.status, q.record.stopReason, Object.hasOwn(q.record, "exitCode")]).toStrictEqual(["queued", "canceled", "not needed", false]);
    expect(q.record.usage).toStrictEqual({ input: 0, output: 0, cost: 0, turns: 0 });

    const p = await host.stop(parent.id, "enough");
    expect([p.fromStatus, p.record.status, p.record.stopReason]).toStrictEqual(["running", "canceled", "enough"]);
    const c = host.get(child.id)!;
    expect([c.status, c.stopReason]).toStrictEqual(["canceled", `parent task ${parent.id} was stopped`]);

    const again = await rejection(host.stop(parent.id));
    expect(again.code).toBe("task_illegal_transition");
    expect(again.message).toBe(`task ${parent.id} cannot go from "canceled" to "canceled": it has already ended (canceled); read its output with ptc_task_output or spawn a new task`);
  });

  it("abandons a function that ignores its signal once the kill grace has passed", async () => {
    const never = deferred<string>();
    const host = makeHost([{ name: "deaf", description: "d", driver: "function", run: () => never.promise }], { killGraceMs: 10 });
    const t = await host.spawn({ agent: "deaf", task: "t", background: true });
    const s = await host.stop(t.id);
    expect([s.record.status, s.record.exitCode]).toStrictEqual(["canceled", 137]);
    never.resolve("late");
    await new Promise((r) => setImmediate(r));
    expect(host.get(t.id)!.status).toBe("canceled");
    expect(host.output(t.id).output).toBe("");
  });

  it("stops a foreground child when the caller's signal aborts", async () => {
    const host = makeHost([{ name: "sleeper", description: "d", driver: "function", run: ({ signal }) => new Promise((_, rej) => signal.addEventListener("abort", () => rej(new Error("x")))) }]);
    const ac = new AbortController();
    const p = rejection(host.spawn({ agent: "sleeper", task: "t" }, { signal: ac.signal }));
    await new Promise((r) => setImmediate(r));
    ac.abort();
    const err = await p;
    expect(host.get(err.taskId!)!.status).toBe("canceled");
    expect(host.get(err.taskId!)!.stopReason).toBe("the calling program was cancelled");
  });

  it("rejects bad input naming the field", async () => {
    const host = makeHost([echo]);
    await expect(host.spawn({ agent: "echo", task: "" })).rejects.toThrow('"task" must be a non-empty task description, got the string ""');
    await expect(host.spawn({ agent: "echo", task: "x", background: "yes" as unknown as boolean })).rejects.toThrow('"background" must be a boolean, got the string "yes"');
    expect(() => host.list({ status: ["done"] })).toThrow('"status" entries must be one of "queued", "running", "stopping", "succeeded", "failed", "canceled", "lost", got "done"');
    expect(() => host.list({ limit: 0 })).toThrow('"limit" must be an integer from 1 to 10000, got the number 0');
    expect(() => host.output("nope")).toThrow('unknown task id "nope"; list task ids with ptc_task_list');
    expect(() => new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ dirs: [] }), maxRunning: 0 })).toThrow('"maxRunning" must be a positive integer, got the number 0');
    await expect(host.spawn({ agent: "ghost", task: "x" })).rejects.toThrow(
      'unknown agent "ghost"; known agents: echo (loaded from code). Use one of them, or add ghost.md to one of those directories',
    );
  });

  it("refuses spawns after close", async () => {
    const host = makeHost([echo]);
    await host.close();
    await expect(host.spawn({ agent: "echo", task: "x" })).rejects.toThrow("the task host is closed; create a new one to spawn tasks");
  });

  it("reads only the tail of a large log, and cuts it exactly where a cut of the whole page would", async () => {
    const { tailTruncate } = await import("../../src/tasks/output.js");
    const fc = (await import("fast-check")).default;
    const unit = fc.constantFrom("a", "é", "😀", "\n", "line of text\n", "ж".repeat(40));
    await fc.assert(
      fc.asyncProperty(fc.array(unit, { minLength: 1, maxLength: 6000 }), fc.nat(), async (parts, sinceSeed) => {
        const log = parts.join("");
        const host = makeHost([{ name: "w", description: "d", driver: "function", run: async () => log }]);
        // In the background: a log of only whitespace is a failed task, and its output still pages.
        const rec = await host.spawn({ agent: "w", task: "t", background: true });
        await host.wait(rec.id);
        const bytes = Buffer.from(log);
        // A since_bytes on a character boundary (continuation bytes are 10xxxxxx).
        let since = sinceSeed % (bytes.length + 1);
        while (since < bytes.length && (bytes[since]! & 0xc0) === 0x80) since++;
        const expected = tailTruncate(bytes.subarray(since));
        const page = host.output(rec.id, { sinceBytes: since });
        expect([page.output, page.truncated]).toStrictEqual([expected.text, expected.truncated]);
      }),
      { numRuns: 25 },
    );
  });

  it("keeps a growing in-memory log's spill file whole across reads", async () => {
    const release = deferred();
    const first = "a".repeat(60 * 1024) + "\n";
    const second = "b".repeat(60 * 1024) + "\n";
    const host = makeHost([
      {
        name: "grower",
        description: "d",
        driver: "function",
        run: async ({ emit }) => {
          emit({ type: "text", text: first });
          await release.promise;
          emit({ type: "text", text: second });
          return "end\n";
        },
      },
    ]);
    const rec = await host.spawn({ agent: "grower", task: "t", background: true });
    const { readFileSync } = await import("node:fs");
    const early = host.output(rec.id);
    expect(readFileSync(early.fullPath!, "utf8")).toBe(first);
    release.resolve();
    await host.wait(rec.id);
    const late = host.output(rec.id);
    expect(late.fullPath).toBe(early.fullPath);
    expect(readFileSync(late.fullPath!, "utf8")).toBe(first + second + "end\n");
  });

  it("pages output by bytes and spills a truncated in-memory log to a file", async () => {
    const big = Array.from({ length: 3000 }, (_, i) => `line ${i} é`).join("\n") + "\n";
    const host = makeHost([{ name: "big", description: "d", driver: "function", run: async () => big }]);
    const rec = await host.spawn({ agent: "big", task: "t" });
    const total = Buffer.byteLength(big);
    const page = host.output(rec.id);
    expect([page.outputBytes, page.truncated, Object.hasOwn(page, "preview")]).toStrictEqual([total, true, false]);
    expect(page.output.split("\n").filter(Boolean).length).toBe(2000);
    const { readFileSync } = await import("node:fs");
    expect(readFileSync(page.fullPath!, "utf8")).toBe(big);
    const tail = host.output(rec.id, { sinceBytes: total - Buffer.byteLength("line 2999 é\n") });
    expect([tail.output, tail.truncated, Object.hasOwn(tail, "fullPath")]).toStrictEqual(["line 2999 é\n", false, false]);
    // "é" is 2 bytes; total - 2 is its second byte, so the boundary to suggest is total - 3.
    expect(() => host.output(rec.id, { sinceBytes: total - 2 })).toThrow(
      `"since_bytes" ${total - 2} falls inside a multi-byte UTF-8 character of task ${rec.id}'s output; pass a character boundary such as ${total - 3}, or the output_bytes of the previous read`,
    );
  });
});

describe("a hostile child against the host's limits", () => {
  it("caps a task's stored output, says what was cut, keeps its end for the report, and the next task runs", async () => {
    const chunk = "y".repeat(64 * 1024);
    const report = '\n```json\n{"summary":"made it through the flood"}\n```\n';
    const host = new TaskHost({
      store: memoryTaskStore(),
      agents: new AgentRegistry({
        dirs: [],
        agents: [
          {
            name: "flood",
            description: "d",
            driver: "function",
            // 64 MiB in 1,024 events: far past a 1 MiB cap.
            run: async ({ emit }) => {
              for (let i = 0; i < 1024; i++) emit({ type: "text", text: chunk });
              return report;
            },
          },
          echo,
        ],
      }),
      maxOutputBytes: 1024 * 1024,
    });
    hosts.push(host);
    const rec = await host.spawn({ agent: "flood", task: "t" });
    const printed = 1024 * chunk.length + report.length;
    expect(rec.outputBytes).toBeLessThanOrEqual(1024 * 1024);
    expect(rec.outputBytes + rec.outputCutBytes!).toBe(
      printed +
        Buffer.byteLength(
          host.store
            .readOutput(rec.id, 0, rec.outputBytes)
            .toString("utf8")
            .match(/\n\[output cut:[^\]]*\]\n|\[… \d+ bytes \([^)]*\) of output not kept …\]\n/g)!
            .join(""),
        ),
    );
    const log = host.store.readOutput(rec.id, 0, rec.outputBytes).toString("utf8");
    expect(log).toContain(
      "\n[output cut: this task printed more than 1.0 MiB, the host's limit for one task (tasks.maxOutputBytes); later output is dropped, and its last 64.0 KiB is added here when the task ends]\n",
    );
    expect(log).toContain(`[… ${rec.outputCutBytes} bytes (${(rec.outputCutBytes! / 1048576).toFixed(1)} MiB) of output not kept …]\n`);
    expect(log.endsWith(report)).toBe(true);
    expect([rec.status, rec.reportChannel, rec.report?.summary]).toStrictEqual(["succeeded", "prompt-json", "made it through the flood"]);
    expect((await host.spawn({ agent: "echo", task: "next" })).status).toBe("succeeded");
    expect(() => new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ dirs: [] }), maxOutputBytes: 100 })).toThrow(
      '"maxOutputBytes" must be an integer of at least 4096 bytes, got the number 100',
    );
  });

  it("reads an in-memory log by range without joining it: every range equals the same range of the whole", async () => {
    const fc = (await import("fast-check")).default;
    await fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 70_000 }), { maxLength: 12 }), fc.nat(), fc.nat(), (chunks, a, b) => {
        const store = new MemoryTaskStore();
        for (const c of chunks) store.appendOutput("T", Buffer.from(c));
        const whole = Buffer.concat(chunks.map((c) => Buffer.from(c)));
        const start = whole.length ? a % (whole.length + 1) : 0;
        const end = start + (whole.length ? b % (whole.length - start + 2) : 1);
        expect(store.outputSize("T")).toBe(whole.length);
        expect(store.readOutput("T", start, end).equals(whole.subarray(start, end))).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it("accepts only finite non-negative numbers from a child: 1e308 twice, NaN, -5, Infinity and strings never reach the record", async () => {
    const host = makeHost([
      {
        name: "liar",
        description: "d",
        driver: "function",
        run: async ({ emit }) => {
          emit({ type: "usage", input: 1e308, output: 1e308, cost: 1e308 });
          emit({ type: "usage", input: 1e308, output: 1e308, cost: 1e308 });
          emit({ type: "usage", input: Number.NaN, output: -5, cost: Number.POSITIVE_INFINITY });
          emit({ type: "usage", input: "12" as unknown as number, output: 7.9, cost: 0.25 });
          emit({ type: "usage", input: 2 ** 52, output: 2 ** 52 });
          emit({ type: "usage", input: 2 ** 52, output: 2 ** 52 });
          emit({ type: "turn" });
          emit({ type: "text", text: 42 as unknown as string });
          emit({ type: "nonsense" } as never);
          emit(null as never);
          return "done";
        },
      },
      {
        name: "priced",
        description: "d",
        driver: "function",
        prices: { input: 1e300, output: 1e300 },
        run: async ({ emit }) => {
          emit({ type: "usage", input: 2 ** 52, output: 1 });
          return "done";
        },
      },
    ]);
    const rec = await host.spawn({ agent: "liar", task: "t" });
    // Readings past 2^53 tokens or 1e9 USD are refused; sums stop at 2^53 - 1.
    expect(rec.usage).toStrictEqual({ input: Number.MAX_SAFE_INTEGER, output: Number.MAX_SAFE_INTEGER, cost: 0.25, turns: 1 });
    expect(JSON.parse(JSON.stringify(rec))).toStrictEqual(rec);
    const priced = await host.spawn({ agent: "priced", task: "t" });
    expect(Number.isFinite(priced.usage!.cost)).toBe(true);
    expect(host.output(rec.id).output).toBe("done");
  });

  it("refuses a task text over 64 KiB and cuts a long label; a report over 64 KiB is ignored with a note; messages are bounded", async () => {
    const host = makeHost([
      echo,
      {
        name: "loud",
        description: "d",
        driver: "function",
        run: async ({ emit }) => {
          emit({ type: "error", message: "e".repeat(1_000_000) });
          return "x";
        },
      },
      {
        name: "bigreport",
        description: "d",
        driver: "function",
        run: async ({ emit }) => {
          emit({ type: "report", report: { summary: "s".repeat(100 * 1024) } });
          return "text";
        },
      },
    ]);
    await expect(host.spawn({ agent: "echo", task: "t".repeat(64 * 1024 + 1) })).rejects.toMatchObject({
      code: "invalid_argument",
      message: '"task" is 64.0 KiB; a task is at most 64.0 KiB — write large inputs to a file and name the file in the task',
    });
    expect((await host.spawn({ agent: "echo", task: "t".repeat(64 * 1024) })).status).toBe("succeeded");
    const labelled = await host.spawn({ agent: "echo", task: "t", label: "L".repeat(10_000) });
    expect(labelled.label).toBe(`${"L".repeat(199)}…`);
    const loud = host.get((await rejection(host.spawn({ agent: "loud", task: "t" }))).taskId!)!;
    expect(loud.errorMessage!.length).toBeLessThan(4200);
    expect(loud.errorMessage).toMatch(/^exited 0 after reporting an error: e+… \(\d+ more characters cut\)$/);
    const big = await host.spawn({ agent: "bigreport", task: "t" });
    expect([big.reportChannel, Object.hasOwn(big, "report")]).toStrictEqual(["none", false]);
    expect(host.output(big.id).output).toBe("\n[a report of 100.0 KiB was ignored: a report is at most 64.0 KiB]\ntext");
  });

  it("lets a program choose only a model the agent lists", async () => {
    const host = makeHost([
      { name: "fixed", description: "d", driver: "function", model: "m-default", run: async () => "x" },
      { name: "menu", description: "d", driver: "function", model: "m-default", models: ["m-small", "m-large"], run: async () => "x" },
    ]);
    expect((await host.spawn({ agent: "fixed", task: "t" })).model).toBe("m-default");
    expect((await host.spawn({ agent: "fixed", task: "t", model: "m-default" })).model).toBe("m-default");
    await expect(host.spawn({ agent: "fixed", task: "t", model: "gpt-5-expensive" })).rejects.toMatchObject({
      code: "invalid_argument",
      message: '"model" cannot be chosen for agent "fixed": it runs "m-default" and lists no other models; leave "model" out (its author can list choices in a "models" field of code)',
    });
    expect((await host.spawn({ agent: "menu", task: "t", model: "m-large" })).model).toBe("m-large");
    await expect(host.spawn({ agent: "menu", task: "t", model: "m-huge" })).rejects.toMatchObject({
      message: '"model" "m-huge" is not one agent "menu" may use; choose one of "m-default", "m-small", "m-large", or leave "model" out',
    });
  });

  it("fails only the task whose output the store refuses to write (an injected EIO), with the reason; the host serves the next task", async () => {
    class BrokenDisk extends MemoryTaskStore {
      override appendOutput(id: string, chunk: Buffer): void {
        if (chunk.includes("doomed")) throw Object.assign(new Error("EIO: i/o error, write"), { code: "EIO" });
        super.appendOutput(id, chunk);
      }
    }
    const host = new TaskHost({
      store: new BrokenDisk(),
      agents: new AgentRegistry({
        dirs: [],
        agents: [
          {
            name: "writer",
            description: "d",
            driver: "function",
            run: async ({ emit, signal }) => {
              emit({ type: "text", text: "kept\n" });
              emit({ type: "text", text: "doomed" });
              await new Promise((r) => signal.addEventListener("abort", r));
              return "late";
            },
          },
          echo,
        ],
      }),
      killGraceMs: 50,
    });
    hosts.push(host);
    const err = await rejection(host.spawn({ agent: "writer", task: "t" }));
    const rec = host.get(err.taskId!)!;
    expect([rec.status, rec.errorMessage, host.output(rec.id).output]).toStrictEqual([
      "failed",
      "the host could not write this task's output (EIO: i/o error, write); the task was stopped. Its output up to that point is kept",
      "kept\n",
    ]);
    expect((await host.spawn({ agent: "echo", task: "next" })).status).toBe("succeeded");
  });
});

describe("the running cap with nested foreground spawns", () => {
  /** Agents that count how many of them are doing work at once (not waiting on a child). */
  function nesting(host: () => TaskHost, fanout: number) {
    const state = { active: 0, peak: 0, runs: 0 };
    const work = async <T>(fn: () => Promise<T>): Promise<T> => {
      state.active++;
      state.peak = Math.max(state.peak, state.active);
      state.runs++;
      await new Promise((r) => setTimeout(r, 5));
      state.active--;
      try {
        return await fn();
      } finally {
        state.active++;
        await new Promise((r) => setImmediate(r));
        state.active--;
      }
    };
    const agents: AgentInput[] = [
      {
        name: "node",
        description: "spawns its children in the foreground, all at once",
        driver: "function",
        run: async ({ task, taskId }) => {
          const depth = Number(task);
          if (depth === 0) return work(async () => "leaf");
          return work(async () => {
            const kids = await Promise.all(Array.from({ length: fanout }, () => host().spawn({ agent: "node", task: String(depth - 1) }, { parentTaskId: taskId })));
            return `${kids.length} children`;
          });
        },
      },
    ];
    return { state, agents };
  }

  it("never runs more tasks at once than the cap, however they nest (16 × 16 foreground fan-out under a cap of 4)", async () => {
    let h!: TaskHost;
    const { state, agents } = nesting(() => h, 16);
    h = makeHost(agents, { maxRunning: 4 });
    // Two top-level trees of depth 2: 2 + 32 + 512 tasks, all foreground.
    const roots = await Promise.all([h.spawn({ agent: "node", task: "2" }), h.spawn({ agent: "node", task: "2" })]);
    expect(roots.map((r) => r.status)).toStrictEqual(["succeeded", "succeeded"]);
    expect(state.runs).toBe(2 + 32 + 512);
    expect(state.peak).toBeLessThanOrEqual(4);
    expect([h.running, h.queued]).toStrictEqual([0, 0]);
    expect(h.list({ status: ["succeeded"], limit: 10_000 }).total).toBe(546);
  });

  it("does not deadlock when every slot is held by a parent waiting for its foreground child (cap 1, depth 3)", async () => {
    let h!: TaskHost;
    const { state, agents } = nesting(() => h, 2);
    h = makeHost(agents, { maxRunning: 1 });
    // Each parent waits on children while holding the only slot: the children run in it.
    const root = await h.spawn({ agent: "node", task: "2" });
    expect(root.status).toBe("succeeded");
    expect(state.runs).toBe(1 + 2 + 4);
    expect(state.peak).toBe(1);
    // A queued top-level task still gets the slot afterwards.
    expect((await h.spawn({ agent: "node", task: "0" })).status).toBe("succeeded");
  });
});
