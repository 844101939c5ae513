// createCodemode hosts background subagents: agents from code and from files, the ptc_* tools
// bound in programs, and task records that outlive the runtime on a data dir.
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCodemode, type Codemode } from "../../src/index.js";

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function open(options: Parameters<typeof createCodemode>[0]): Promise<Codemode> {
  const cm = await createCodemode(options);
  cleanup.push(() => cm.close());
  return cm;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cm-tasks-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("createCodemode with subagents", () => {
  it("binds the ptc_* tools and runs a code-registered script agent in the background", async () => {
    const cm = await open({ agents: [{ name: "doubler", description: "doubles its task", driver: "script", scriptCode: "text(String(2 * Number(task)))" }] });
    expect(cm.tools.map((tool) => tool.id).sort()).toStrictEqual([
      "ptc_run_code",
      "ptc_subagent",
      "ptc_task_list",
      "ptc_task_output",
      "ptc_task_stop",
      "ptc_task_wait",
      "ptc_workflow",
      "tool_info",
      "tool_search",
    ]);
    const result = await cm.run(`
      const spawned = await Promise.all([1, 2, 3].map((n) => tools.ptc_subagent({ agent: "doubler", task: String(n), background: true, label: "d" + n })));
      while ((await tools.ptc_task_list({ status: ["running", "queued"] })).count > 0) await sleep(10);
      const outputs = [];
      for (const s of spawned) outputs.push((await tools.ptc_task_output({ task_id: s.task_id })).output);
      return { statuses: spawned.map((s) => s.status), outputs };
    `);
    expect(result.structuredContent.status).toBe("ok");
    expect(result.structuredContent.value).toStrictEqual({ statuses: ["running", "running", "running"], outputs: ["2", "4", "6"] });
  });

  it("runs a foreground agent loaded from an agent file in the working directory", async () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, ".codemode", "agents"), { recursive: true });
    writeFileSync(join(cwd, ".codemode", "agents", "greeter.md"), "---\nname: greeter\ndescription: greets\ndriver: script\nscript: greeter.js\n---\nGreets whoever the task names.\n");
    writeFileSync(join(cwd, ".codemode", "agents", "greeter.js"), "text(`hello, ${task}`)");
    const cm = await open({ cwd });
    const result = await cm.run(`const r = await tools.ptc_subagent({ agent: "greeter", task: "world" }); return r`);
    expect(result.structuredContent.value).toMatchObject({ status: "succeeded", exit_code: 0, report_channel: "none" });
    expect(Object.hasOwn(result.structuredContent.value as object, "task_id")).toBe(false);
  });

  it("rejects a failed foreground child with its task id as a field, and its usage stays readable", async () => {
    const cm = await open({ agentDirs: [], agents: [{ name: "crasher", description: "fails", driver: "script", scriptCode: "text('partial'); throw new Error('disk full')" }] });
    const result = await cm.run(`
      try { await tools.ptc_subagent({ agent: "crasher", task: "go" }) } catch (e) {
        const out = await tools.ptc_task_output({ task_id: e.task_id });
        return { code: e.code, named: e.message.includes(e.task_id), status: out.status, failure: out.output.includes("Script failed (exception): Error: disk full"), partial: out.output.startsWith("partial"), turns: out.usage.turns };
      }`);
    expect(result.structuredContent.value).toStrictEqual({ code: "task_failed", named: true, status: "failed", failure: true, partial: true, turns: 1 });
  });

  it("a script agent's text() output reaches its log while it runs, so polling sees progress", async () => {
    const cm = await open({
      agentDirs: [],
      agents: [{ name: "ticker", description: "ticks", driver: "script", scriptCode: "text('one'); await sleep(500); text('two'); await sleep(500); text('three')" }],
    });
    const result = await cm.run(`
      const { task_id } = await tools.ptc_subagent({ agent: "ticker", task: "go", background: true });
      const seen = [];
      for (;;) {
        const out = await tools.ptc_task_output({ task_id });
        if (out.status !== "running") { seen.push(["ended", out.output, out.output_bytes]); break; }
        if (seen.at(-1)?.[1] !== out.output) seen.push(["running", out.output, out.output_bytes]);
        await sleep(20);
      }
      return seen;`);
    const seen = result.structuredContent.value as Array<[string, string, number]>;
    expect(seen.at(-1)).toStrictEqual(["ended", "one\ntwo\nthree", 13]);
    // While it ran, the first lines were already readable (before, a script task showed 0 bytes until it ended).
    const whileRunning = seen.filter(([status, output]) => status === "running" && output !== "").map(([, output]) => output);
    expect(whileRunning).toStrictEqual(["one", "one\ntwo"]);
  });

  it("a failed foreground child called as a model would (cm.callTool) carries its task id in structuredContent.error", async () => {
    const cm = await open({
      agentDirs: [],
      agents: [
        {
          name: "crasher",
          description: "fails",
          driver: "function",
          run: async () => {
            throw new Error("disk full");
          },
        },
      ],
    });
    const result = await cm.callTool("ptc_subagent", { agent: "crasher", task: "go" });
    const id = cm.tasks.list().records[0]!.id;
    const message = `subagent task ${id} (agent "crasher") failed: disk full; its output and usage stay readable with ptc_task_output({ task_id: "${id}" })`;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toStrictEqual({ error: { code: "task_failed", message, task_id: id } });
    expect(result.content).toStrictEqual([{ type: "text", text: message }]);
  });

  it("refuses a blank task as invalid input", async () => {
    const cm = await open({ agentDirs: [], agents: [{ name: "a", description: "x", driver: "script", scriptCode: "text(1)" }] });
    const result = await cm.run(`try { await tools.ptc_subagent({ agent: "a", task: "   " }) } catch (e) { return [e.code, e.reason, e.message] }`);
    expect(result.structuredContent.value).toStrictEqual(["tool_invalid_input", "schema_invalid", expect.stringContaining("must contain text, not only whitespace")]);
  });

  it("refuses an unknown agent with the known ones and where they load from", async () => {
    const cm = await open({ agents: [{ name: "only", description: "x", driver: "script", scriptCode: "text(1)" }], agentDirs: [] });
    const result = await cm.run(`try { await tools.ptc_subagent({ agent: "nobody", task: "x" }) } catch (e) { return e.message }`);
    expect(result.structuredContent.value).toMatch(/nobody/);
    expect(result.structuredContent.value).toMatch(/only/);
  });

  it("keeps task records and outputs on a data dir for the next runtime", async () => {
    const dataDir = tempDir();
    const agents = [{ name: "echoer", description: "echoes", driver: "script" as const, scriptCode: "text(task)" }];
    const first = await createCodemode({ dataDir, agents, agentDirs: [] });
    const spawned = await first.run(`const r = await tools.ptc_subagent({ agent: "echoer", task: "persisted text" }); return r.status`);
    expect(spawned.structuredContent.value).toBe("succeeded");
    await first.close();
    const second = await open({ dataDir, agents, agentDirs: [] });
    const listed = await second.run(
      `const list = await tools.ptc_task_list({}); const o = await tools.ptc_task_output({ task_id: list.tasks[0].id }); return [list.count, list.tasks[0].status, o.output]`,
    );
    expect(listed.structuredContent.value).toStrictEqual([1, "succeeded", "persisted text"]);
  });

  it("keeps a session's stored values on the data dir for the next runtime", async () => {
    const dataDir = tempDir();
    const first = await createCodemode({ dataDir, agentDirs: [] });
    await first.run(`store("notes", { n: 1 }); store("gone", true); store("gone", undefined)`, { session: "s1" });
    await first.close();
    const second = await open({ dataDir, agentDirs: [] });
    const read = await second.run(`return [load("notes"), load("gone")]`, { session: "s1" });
    expect(read.structuredContent.value).toStrictEqual([{ n: 1 }, null]);
    writeFileSync(join(dataDir, "sessions", "broken.json"), "{ not json");
    await expect(second.run(`return load("x")`, { session: "broken" })).rejects.toThrow(/session file .*broken\.json is not valid JSON .*; delete it to start the session afresh/);
  });

  it("leaves no open task database behind, after close and after a create that failed", async () => {
    const dataDir = tempDir();
    const openDatabases = () =>
      readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(join(dataDir, "tasks.db"));
        } catch {
          return false;
        }
      }).length;
    const clash = [{ name: "tool_info", description: "clashes with the runtime's own", execute: async () => "x" }];
    await expect(createCodemode({ dataDir, agentDirs: [], tools: clash })).rejects.toThrow(/two tools are reached as tools\.tool_info/);
    expect(openDatabases()).toBe(0);
    const cm = await createCodemode({ dataDir, agentDirs: [] });
    expect(openDatabases()).toBeGreaterThan(0);
    await cm.close();
    expect(openDatabases()).toBe(0);
  });

  it("gives a script task a store of its own that ends with it (no session file per task)", async () => {
    const dataDir = tempDir();
    const cm = await open({ dataDir, agentDirs: [], agents: [{ name: "keeper", description: "stores", driver: "script", scriptCode: "store('seen', task); text(String(load('seen')))" }] });
    const result = await cm.run(
      `const a = await tools.ptc_subagent({ agent: "keeper", task: "one" }); const b = await tools.ptc_subagent({ agent: "keeper", task: "two" }); return [a.status, b.status]`,
    );
    expect(result.structuredContent.value).toStrictEqual(["succeeded", "succeeded"]);
    expect(existsSync(join(dataDir, "sessions"))).toBe(false);
  });

  it("reports a session that could not be saved as a warning; the run's result stands", async () => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, "sessions"), "a file where the sessions directory should be");
    const cm = await open({ dataDir, agentDirs: [] });
    const result = await cm.run(`store("k", 1); return 7`, { session: "s" });
    expect(result.structuredContent.value).toBe(7);
    expect(result.details.warnings).toStrictEqual([expect.stringMatching(/^the session "s" could not be saved, so what this run stored is not kept for the next run: /)]);
    // The model reads it too: its stored values are gone.
    expect(result.content[0]!.text).toMatch(/^7\n\nWarning: the session "s" could not be saved, so what this run stored is not kept for the next run: /);
  });

  it("rejects malformed agent options naming the field", async () => {
    await expect(createCodemode({ agentDirs: "dir" as never })).rejects.toThrow("options.agentDirs must be an array of directory paths");
    await expect(createCodemode({ agents: {} as never })).rejects.toThrow("options.agents must be an array of agent definitions");
  });
});

describe("agents are discoverable by the model", () => {
  it("ptc_subagent's description lists each agent with its driver and what it does, and the ones whose files do not load", async () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, "agents"));
    writeFileSync(join(cwd, "agents", "broken.md"), "---\ndescription: [\n---\n");
    const cm = await open({
      cwd,
      agentDirs: [join(cwd, "agents")],
      agents: [
        { name: "reviewer", description: "Reviews a diff for bugs and missing tests.\nLonger notes that stay out of the listing.", driver: "script", scriptCode: "text(1)", readOnly: true },
        { name: "shell", description: "Runs a shell command.", driver: "command", command: ["sh", "-c", "echo"] },
      ],
    });
    const description = cm.tools.find((tool) => tool.id === "ptc_subagent")!.description;
    expect(description.slice(description.indexOf("\n\nAgents:"))).toBe(
      "\n\nAgents:\n- reviewer (script, read-only): Reviews a diff for bugs and missing tests.\n- shell (command): Runs a shell command.\nNot loaded (their files have errors): broken",
    );
  });
});
