import { describe, it, expect, afterEach } from "vitest";
import { join } from "node:path";
import { AgentRegistry, TaskHost, TaskError, memoryTaskStore, buildArgv, type AgentInput } from "../../src/tasks/index.js";

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
    for (const [agent, exitCode] of [["polite", 143], ["stubborn", 137]] as const) {
      const t = await h.spawn({ agent, task: "t", background: true });
      while (h.output(t.id).outputBytes === 0) await new Promise((r) => setTimeout(r, 10));
      const s = await h.stop(t.id, "test");
      expect([s.fromStatus, s.record.status, s.record.exitCode, s.record.stopReason, h.output(t.id).output]).toStrictEqual([
        "running", "canceled", exitCode, "test", "ready\n",
      ]);
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
