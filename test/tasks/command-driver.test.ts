import { describe, it, expect, afterEach } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentRegistry, ClaudeStreamAdapter, TaskHost, type TaskError, memoryTaskStore, buildArgv, type AgentInput } from "../../src/tasks/index.js";
import { CLAUDE_TRACKED_MESSAGES } from "../../src/tasks/drivers/claude-stream.js";
import { commandDriver } from "../../src/tasks/drivers/command.js";

const fixtures = join(import.meta.dirname, "..", "fixtures");
const node = process.execPath;
const hosts: TaskHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

function host(agents: AgentInput[]): TaskHost {
  const h = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents, dirs: [] }), killGraceMs: 100 });
  hosts.push(h);
  return h;
}

function cmd(name: string, script: string, extra: Partial<AgentInput> = {}, args: string[] = []): AgentInput {
  return { name, description: "d", driver: "command", command: [node, "-e", script, ...args], ...extra };
}

async function failure(p: Promise<unknown>): Promise<TaskError> {
  try {
    await p;
  } catch (err) {
    return err as TaskError;
  }
  throw new Error("expected a rejection");
}

describe("command driver", () => {
  it("puts the task on argv where {task} appears, else on stdin", async () => {
    expect(buildArgv(["a", "--t={task}", "{task}"], "x y")).toStrictEqual({ argv: ["a", "--t=x y", "x y"], viaStdin: false });
    expect(buildArgv(["a"], "x")).toStrictEqual({ argv: ["a"], viaStdin: true });
    const h = host([
      cmd("argv", "process.stdout.write('argv:' + process.argv[1])", {}, ["{task}"]),
      cmd("stdin", "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write('stdin:'+s))"),
    ]);
    const a = await h.spawn({ agent: "argv", task: "naïve task" });
    expect([a.status, a.exitCode, h.output(a.id).output]).toStrictEqual(["succeeded", 0, "argv:naïve task"]);
    const s = await h.spawn({ agent: "stdin", task: "from stdin" });
    expect(h.output(s.id).output).toBe("stdin:from stdin");
    expect(s.usage).toStrictEqual({ input: 0, output: 0, cost: 0, turns: 0 });
  });

  it("counts jsonl usage events, ignores the usage a child claims, and keeps plain lines as text", async () => {
    const lines = [
      { type: "turn" },
      { type: "usage", input_tokens: 1000, output_tokens: 100, cost_usd: 0.5 },
      { type: "text", text: "partial\n" },
      { type: "turn" },
      { type: "usage", input_tokens: 300, output_tokens: 50, cost_usd: 0.25 },
      { type: "report", summary: "done", findings: [{ what: "x", evidence: "y" }], usage: { input: 1, output: 1, cost: 0, turns: 1 } },
      { type: "claimed_usage", input_tokens: 1 },
    ].map((l) => JSON.stringify(l));
    const script = `console.log(${JSON.stringify([...lines, "plain line"].join("\n"))})`;
    const h = host([cmd("liar", script, { protocol: "jsonl" }), cmd("priced", script, { protocol: "jsonl", prices: { input: 3, output: 15 } })]);
    const r = await h.spawn({ agent: "liar", task: "t" });
    const usage = { input: 1300, output: 150, cost: 0.75, turns: 2 };
    expect(r.usage).toStrictEqual(usage);
    expect([r.reportChannel, r.report]).toStrictEqual(["tool", { summary: "done", findings: [{ what: "x", evidence: "y" }], files_touched: [], usage }]);
    expect(h.output(r.id).output).toBe(`partial\n${lines[6]}\nplain line\n`);
    const p = await h.spawn({ agent: "priced", task: "t" });
    expect(p.usage).toStrictEqual({ input: 1300, output: 150, cost: (1300 * 3 + 150 * 15) / 1e6, turns: 2 });
  });

  it("fails a child that exits 0 after an error event", async () => {
    const h = host([cmd("sloppy", `console.log(JSON.stringify({type:"error",message:"tests did not run"}));console.log("all good!")`, { protocol: "jsonl" })]);
    const err = await failure(h.spawn({ agent: "sloppy", task: "t" }));
    const rec = h.get(err.taskId!)!;
    expect([rec.status, rec.exitCode, rec.errorMessage]).toStrictEqual(["failed", 0, "exited 0 after reporting an error: tests did not run"]);
    expect(h.output(rec.id).output).toBe("all good!\n");
  });

  it("fails a non-zero exit with the stderr tail, and a command that cannot start", async () => {
    const h = host([
      cmd("crash", "process.stdout.write('some output');console.error('kaboom');process.exit(3)"),
      { name: "ghost", description: "d", driver: "command", command: ["/nonexistent/agent-cli", "{task}"] },
    ]);
    const crash = h.get((await failure(h.spawn({ agent: "crash", task: "t" }))).taskId!)!;
    expect([crash.status, crash.exitCode, crash.errorMessage]).toStrictEqual(["failed", 3, "the command exited with code 3: kaboom"]);
    const ghost = h.get((await failure(h.spawn({ agent: "ghost", task: "t" }))).taskId!)!;
    expect([ghost.status, ghost.exitCode, ghost.errorMessage]).toStrictEqual([
      "failed",
      127,
      'could not start command "/nonexistent/agent-cli" (ENOENT); check the "command" field of agent code and that the program is installed and on PATH',
    ]);
  });

  it("stops with SIGTERM, and SIGKILLs a child that ignores it after the grace period", async () => {
    const ready = "process.stdout.write('ready\\n');setInterval(()=>{},1000)";
    const h = host([cmd("polite", ready), cmd("stubborn", `process.on('SIGTERM',()=>{});${ready}`)]);
    for (const [agent, exitCode] of [
      ["polite", 143],
      ["stubborn", 137],
    ] as const) {
      const t = await h.spawn({ agent, task: "t", background: true });
      while (h.output(t.id).outputBytes === 0) await new Promise((r) => setTimeout(r, 10));
      const s = await h.stop(t.id, "test");
      expect([s.fromStatus, s.record.status, s.record.exitCode, s.record.stopReason, h.output(t.id).output]).toStrictEqual(["running", "canceled", exitCode, "test", "ready\n"]);
    }
  });

  it("tells a read-only command child (advisory tier) through its environment", async () => {
    const h = host([cmd("ro", "process.stdout.write(String(process.env.CODEMODE_READ_ONLY) + ' ' + process.env.CODEMODE_TASK_DEPTH)", { readOnly: true })]);
    const r = await h.spawn({ agent: "ro", task: "t" });
    expect([r.readOnlyTier, h.output(r.id).output]).toStrictEqual(["advisory", "1 1"]);
  });

  it("adapts a recorded Claude Code stream-json transcript", async () => {
    const replay = (file: string, code = "0"): AgentInput => ({
      name: file.replace(".jsonl", ""),
      description: "recorded claude run",
      driver: "command",
      command: [node, join(fixtures, "replay-stream.mjs"), join(fixtures, "claude-stream", file), code],
      protocol: "claude-stream-json",
    });
    const h = host([replay("success.jsonl"), replay("max-turns.jsonl", "1")]);
    const r = await h.spawn({ agent: "success", task: "survey auth" });
    // Two messages: A (usage repeated on two block lines, counted once) and B.
    const usage = { input: 4 + 1520 + 12000 + 6 + 300 + 13520, output: 85 + 120, cost: 0.0123456, turns: 2 };
    expect(r.usage).toStrictEqual(usage);
    expect(r.reportChannel).toBe("prompt-json");
    expect(r.report).toStrictEqual({
      summary: "tokens never expire",
      findings: [{ what: "no expiry check", evidence: "src/auth.ts:12" }],
      files_touched: [],
      usage,
    });
    expect(h.output(r.id).output.startsWith("I'll look at how the auth module handles tokens.\nThe auth module signs tokens")).toBe(true);

    const err = await failure(h.spawn({ agent: "max-turns", task: "run tests" }));
    const f = h.get(err.taskId!)!;
    expect([f.status, f.exitCode, f.usage]).toStrictEqual(["failed", 1, { input: 510, output: 40, cost: 0.002, turns: 1 }]);
    expect(f.errorMessage).toBe("claude reported an error: error_max_turns");
  });
});

/** Whether a pid is a live process (a zombie is dead: it only waits to be reaped). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\d+ \(.*\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  // Generous: the machine is shared; this bounds a wait, it does not time anything.
  for (let i = 0; i < 400; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("a hostile command child", () => {
  // 20 MiB without a newline, written as fast as the pipe takes it (the original report: 700 MB
  // buffered by readline until RangeError: Invalid string length, uncaught, took the host down).
  const endless = (payload: string) =>
    `const b = Buffer.from(${JSON.stringify(payload)}.repeat(65536)); let n = 0; const w = () => { while (n < 320) { n++; if (!process.stdout.write(b)) return process.stdout.once("drain", w); } }; w();`;

  it("an endless jsonl line fails that task with the line limit, keeps the line's start as text, and the next task runs", async () => {
    const h = host([cmd("flood", endless("x"), { protocol: "jsonl" }), cmd("fine", `console.log(JSON.stringify({ type: "text", text: "ok" }))`, { protocol: "jsonl" })]);
    const err = await failure(h.spawn({ agent: "flood", task: "t" }));
    const rec = h.get(err.taskId!)!;
    expect([rec.status, rec.exitCode]).toStrictEqual(["failed", 0]);
    expect(rec.errorMessage).toBe(
      'exited 0 after reporting an error: the command printed a 20.0 MiB line on stdout (line 1), over the 4.0 MiB line limit of protocol "jsonl"; print one event per line, each under the limit',
    );
    // The log holds the line's first 4 MiB and a note, not 20 MiB.
    expect(rec.outputBytes).toBe(4 * 1024 * 1024 + 1 + Buffer.byteLength("[stdout line 1 cut: it ran to 20.0 MiB without a newline; the host keeps at most 4.0 MiB of one line]\n"));
    const log = h.store.readOutput(rec.id, 0, rec.outputBytes).toString("utf8");
    expect(log).toBe(`${"x".repeat(4 * 1024 * 1024)}\n[stdout line 1 cut: it ran to 20.0 MiB without a newline; the host keeps at most 4.0 MiB of one line]\n`);
    const next = await h.spawn({ agent: "fine", task: "t" });
    expect([next.status, h.output(next.id).output]).toStrictEqual(["succeeded", "ok"]);
  });

  it("an endless Claude stream-json line fails that task; a stream-json event line is never kept as text", async () => {
    const h = host([cmd("claude-flood", endless("{"), { protocol: "claude-stream-json" })]);
    const rec = h.get((await failure(h.spawn({ agent: "claude-flood", task: "t" }))).taskId!)!;
    expect(rec.errorMessage).toBe(
      'exited 0 after reporting an error: the command printed a 20.0 MiB line on stdout (line 1), over the 4.0 MiB line limit of protocol "claude-stream-json"; print one event per line, each under the limit',
    );
    expect(h.output(rec.id).output).toBe("[stdout line 1 cut: it ran to 20.0 MiB without a newline; the host keeps at most 4.0 MiB of one line]\n");
  });

  it("a Claude stream-json child printing a new message id per line: usage counted exactly, the adapter keeps a bounded few", async () => {
    // The original report: every id (3 MiB each, or millions of small ones) was kept for the
    // task's life until V8 aborted the host. Each message here is two block lines repeating its
    // usage (counted once); every 1000th has a 1 MiB id; every 7th line has no id at all.
    const script = `
      const out = [];
      const flush = () => { if (out.length) { process.stdout.write(out.join("")); out.length = 0; } };
      for (let i = 0; i < 20000; i++) {
        const id = i % 1000 === 999 ? "msg_" + String(i).padStart(8, "0") + "x".repeat(1 << 20) : "msg_" + i;
        const usage = { input_tokens: 1, cache_read_input_tokens: 2, output_tokens: 3 };
        const line = (text) => JSON.stringify({ type: "assistant", message: { id, content: [{ type: "text", text }], usage } }) + "\\n";
        out.push(line(i === 0 ? "first" : ""), line(""));
        if (i % 7 === 0) out.push(JSON.stringify({ type: "assistant", message: { content: [], usage: { output_tokens: 10 } } }) + "\\n");
        if (out.length > 64) flush();
      }
      flush();
      process.stdout.write(JSON.stringify({ type: "result", subtype: "success", result: "done", total_cost_usd: 0.5 }) + "\\n");
    `;
    const anonymous = Math.ceil(20000 / 7);
    const usage = { input: 20000 * 3, output: 20000 * 3 + anonymous * 10, cost: 0.5, turns: 20000 + anonymous };
    const h = host([cmd("claude-ids", script, { protocol: "claude-stream-json" })]);
    const r = await h.spawn({ agent: "claude-ids", task: "t" });
    expect([r.status, r.usage, h.output(r.id).output]).toStrictEqual(["succeeded", usage, "first"]);

    // The same kind of stream through the adapter itself: what it keeps stays small.
    const adapter = new ClaudeStreamAdapter();
    const line = (id: string | undefined, input: number) =>
      JSON.stringify({ type: "assistant", message: { ...(id === undefined ? {} : { id }), content: [], usage: { input_tokens: input, output_tokens: 1 } } });
    let input = 0;
    let turns = 0;
    for (let i = 0; i < 5000; i++) {
      const id = i % 500 === 0 ? `big${i}${"y".repeat(1 << 20)}` : `m${i}`;
      for (const ev of [...adapter.line(line(id, 5)), ...adapter.line(line(id, 5)), ...adapter.line(line(undefined, 2))]) {
        if (ev.type === "usage") input += ev.input;
        if (ev.type === "turn") turns++;
      }
      expect(adapter.retained.messages).toBeLessThanOrEqual(CLAUDE_TRACKED_MESSAGES);
      expect(adapter.retained.longestKey).toBeLessThanOrEqual(128);
    }
    expect([input, turns]).toStrictEqual([5000 * 7, 10000]);
    // Lines of a few messages interleaved are still one message each, while recent.
    const mixed = new ClaudeStreamAdapter();
    const events = ["a", "b", "a", "b", "a"].flatMap((id) => mixed.line(line(id, 4)));
    expect(events.filter((e) => e.type === "turn").length).toBe(2);
    expect(events.filter((e) => e.type === "usage").length).toBe(2);
  });

  it("a task that would be read as an option is refused where the template puts it first; after -- any task goes", async () => {
    // sh prints each argument it got, as a command's option parser would receive it.
    const args = (...rest: string[]): AgentInput => ({ name: rest[0]!, description: "d", driver: "command", command: ["sh", "-c", 'printf "%s|" "$@"', "sh", ...rest.slice(1)] });
    const h = host([args("exposed", "-p", "{task}"), args("ended", "-p", "--", "{task}"), args("inline", "--task={task}")]);
    await expect(h.spawn({ agent: "exposed", task: "--dangerously-skip-permissions" })).rejects.toMatchObject({
      code: "invalid_argument",
      message: `"task" starts with "-", and agent "exposed" passes the task as argument 5 of its command with no "--" before it, where the command would read it as an option; start the task with a word instead (the agent's author can put "--" before "{task}" in the "command" of code)`,
    });
    expect(h.list().total).toBe(0);
    const ended = await h.spawn({ agent: "ended", task: "--dangerously-skip-permissions" });
    expect(h.output(ended.id).output).toBe("-p|--|--dangerously-skip-permissions|");
    const inline = await h.spawn({ agent: "inline", task: "-x" });
    expect(h.output(inline.id).output).toBe("--task=-x|");
    expect((await h.spawn({ agent: "exposed", task: "fix the -p flag" })).status).toBe("succeeded");
    expect(() => new AgentRegistry({ dirs: [], agents: [{ name: "prog", description: "d", driver: "command", command: ["{task}"] }] })).toThrow(
      'agent "prog": field "command" must not put "{task}" in its first element (the program to run); pass the task as a later argument, after "--"',
    );
  });

  it("a grandchild holding stdout does not keep the task running: the task ends with its command and the grandchild is stopped", async () => {
    // The command exits at once; the sleep it started keeps the task's stdout open.
    const h = host([{ name: "holder", description: "d", driver: "command", command: ["sh", "-c", "sleep 300 & echo $!; echo done"] }]);
    const rec = await h.spawn({ agent: "holder", task: "t" });
    expect(rec.status).toBe("succeeded");
    const [pid] = h.output(rec.id).output.split("\n").map(Number);
    await until(() => !alive(pid!), "the grandchild to be stopped");
    expect([h.running, h.queued]).toStrictEqual([0, 0]);
  });

  it("a detached grandchild does not outlive a task that succeeded; a setsid one is stopped with its task", async () => {
    const detach = `const c = require("child_process").spawn("sleep", ["300"], { detached: true, stdio: "ignore" }); c.unref(); console.log(c.pid)`;
    const setsid = `const c = require("child_process").spawn("setsid", ["sleep", "300"], { stdio: "ignore" }); c.unref(); console.log(c.pid); setInterval(() => {}, 1000)`;
    const h = host([cmd("detach", detach), cmd("setsid", setsid)]);
    const done = await h.spawn({ agent: "detach", task: "t" });
    expect(done.status).toBe("succeeded");
    const detached = Number(h.output(done.id).output);
    await until(() => !alive(detached), "the detached grandchild to be stopped");

    const running = await h.spawn({ agent: "setsid", task: "t", background: true });
    await until(() => h.output(running.id).outputBytes > 0, "the setsid grandchild to start");
    // setsid execs sleep in a new session: the pid printed is the sleep itself.
    const escaped = Number(h.output(running.id).output);
    await until(() => alive(escaped) && readFileSync(`/proc/${escaped}/cmdline`, "utf8").startsWith("sleep"), "the setsid grandchild to exec");
    expect(h.get(running.id)!.processes).toMatchObject({ pgid: expect.any(Number), startTime: expect.stringMatching(/^proc:\d+$/) });
    const stopped = await h.stop(running.id, "enough");
    expect(stopped.record.status).toBe("canceled");
    await until(() => !alive(escaped), "the setsid grandchild to be stopped");
  });
});

describe("a task's working directory", () => {
  it("is confined to the host's cwd: outside it, missing or not a directory is refused as a bad cwd", async () => {
    const root = mkdtempSync(join(tmpdir(), "cwd-root-"));
    const outside = mkdtempSync(join(tmpdir(), "cwd-outside-"));
    mkdirSync(join(root, "sub"));
    writeFileSync(join(root, "file.txt"), "x");
    symlinkSync(outside, join(root, "escape"));
    const pwd = cmd("pwd", "process.stdout.write(process.cwd())");
    const h = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents: [pwd], dirs: [] }), cwd: root, killGraceMs: 100 });
    hosts.push(h);
    try {
      const sub = await h.spawn({ agent: "pwd", task: "t", cwd: "sub" });
      expect([sub.cwd, h.output(sub.id).output]).toStrictEqual([join(root, "sub"), join(root, "sub")]);
      for (const [cwd, message] of [
        [
          "/",
          `"cwd" "/" is outside the directories tasks may run in (${root}); pass a directory inside ${root}, or leave "cwd" out to run in ${root} (an operator adds directories with tasks.cwdRoots)`,
        ],
        [
          "/root",
          `"cwd" "/root" is outside the directories tasks may run in (${root}); pass a directory inside ${root}, or leave "cwd" out to run in ${root} (an operator adds directories with tasks.cwdRoots)`,
        ],
        [
          "escape",
          `"cwd" "escape" is outside the directories tasks may run in (${root}); pass a directory inside ${root}, or leave "cwd" out to run in ${root} (an operator adds directories with tasks.cwdRoots)`,
        ],
        [
          "../",
          `"cwd" "../" is outside the directories tasks may run in (${root}); pass a directory inside ${root}, or leave "cwd" out to run in ${root} (an operator adds directories with tasks.cwdRoots)`,
        ],
        ["nope", `"cwd" "nope" does not exist (it resolves to ${join(root, "nope")}); pass an existing directory inside ${root}`],
        ["file.txt", `"cwd" "file.txt" is not a directory; pass a directory inside ${root}`],
      ] as const) {
        await expect(h.spawn({ agent: "pwd", task: "t", cwd }), cwd).rejects.toMatchObject({ code: "invalid_argument", message });
      }
      expect(h.list().total).toBe(1);
      // An operator can add roots; the host's cwd stays one.
      const wider = new TaskHost({ store: memoryTaskStore(), agents: new AgentRegistry({ agents: [pwd], dirs: [] }), cwd: root, cwdRoots: [root, outside] });
      hosts.push(wider);
      const there = await wider.spawn({ agent: "pwd", task: "t", cwd: "escape" });
      expect(wider.output(there.id).output).toBe(outside);
    } finally {
      rmSync(root, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("a working directory that vanished before the command started is reported as a bad cwd, not a bad command", async () => {
    const root = mkdtempSync(join(tmpdir(), "cwd-gone-"));
    mkdirSync(join(root, "sub"));
    // The directory is checked at spawn; here it is removed between that check and the start.
    rmSync(join(root, "sub"), { recursive: true });
    const result = await commandDriver({
      task: { id: "01ARZ3NDEKTSV4RRFFQ69G5FAV", task: "t", depth: 1 } as never,
      agent: { name: "pwd", source: "code", command: ["node", "-e", "1"] } as never,
      signal: new AbortController().signal,
      emit: () => undefined,
      killGraceMs: 100,
      cwd: join(root, "sub"),
      maxLineBytes: 1024,
    });
    expect(result).toStrictEqual({ exitCode: 127, error: `could not start command "node": its working directory "${join(root, "sub")}" does not exist; pass an existing directory as "cwd"` });
    rmSync(root, { recursive: true, force: true });
  });
});
