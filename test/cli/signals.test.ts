// SIGTERM and SIGHUP (a supervisor, `kill`, a closed terminal) end `codemode run`, `workflow run`
// and `mcp` the way Ctrl-C does: the command's agents are stopped (their processes gone, their
// records not left `running`), what the program had is printed, and the exit code is 128 + the
// signal's number. The original report: each exited at once, printing nothing, its agents running.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, runCli, tempProject } from "../mcp/helpers.js";

const ids = (text: string) => text.replace(/\b[0-9A-HJKMNP-TV-Z]{26}\b/g, "<id>");

/** A project whose agent "sleeper" writes its pid to agent.pid, then sleeps for a minute. */
function project(): string {
  const cwd = tempProject({ agentsDir: "agents" }, { "notes.md": "# Notes\n" });
  mkdirSync(join(cwd, "agents"));
  const pidFile = join(cwd, "agent.pid");
  writeFileSync(
    join(cwd, "agents", "sleeper.md"),
    `---\nname: sleeper\ndescription: sleeps\ndriver: command\ncommand: [sh, -c, ${JSON.stringify(`echo $$ > ${pidFile}.tmp && mv ${pidFile}.tmp ${pidFile} && exec sleep 60`)}]\n---\nSleeps.\n`,
  );
  return cwd;
}

/** A zombie is dead: it only waits to be reaped. */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  // Generous: the machine is shared; this bounds a wait, it does not time anything.
  for (let i = 0; i < 800; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Running {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function start(cwd: string, args: string[], stdin?: string): Running {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, CODEMODE_PROGRESS: "0" }, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  if (stdin !== undefined) child.stdin!.end(stdin);
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** The sleeper's pid, once it is running. */
async function agentPid(cwd: string): Promise<number> {
  const file = join(cwd, "agent.pid");
  await until(() => existsSync(file), "the agent to start");
  const pid = Number(readFileSync(file, "utf8").trim());
  expect(alive(pid)).toBe(true);
  return pid;
}

async function records(cwd: string): Promise<Array<[string, string]>> {
  const listed = await runCli(["tasks", "--json"], { cwd });
  return JSON.parse(listed.stdout).tasks.map((t: { agent: string; status: string }) => [t.agent, t.status]);
}

describe("codemode run stopped by a signal", () => {
  for (const [signal, code] of [
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const) {
    it(`${signal}: aborts the program, prints what it had and the stopped task, exits ${code}, and the agent is gone`, async () => {
      const cwd = project();
      const run = start(cwd, ["run", "-"], `text("started"); await tools.ptc_subagent({ agent: "sleeper", task: "x", background: true, label: "nap" }); for (;;) await sleep(100);`);
      const pid = await agentPid(cwd);
      run.child.kill(signal);
      expect(await run.exited).toBe(code);
      expect(run.stdout()).toBe("");
      expect(run.stderr()).toBe(
        "Script failed (aborted): the run was aborted by the host\n\nstarted\n\nTool calls made before the failure (not undone):\n- tools.ptc_subagent: ok\n" +
          "codemode: 1 background task was still running and is stopped now that the program ended; wait for them in the program (await tools.ptc_task_wait({})) to keep their results\n",
      );
      expect(alive(pid)).toBe(false);
      expect(await records(cwd)).toEqual([["sleeper", "canceled"]]);
    });
  }
});

describe("codemode workflow run stopped by SIGTERM", () => {
  it("stops the workflow and its node's agent, prints the node lines, exits 143", async () => {
    const cwd = project();
    writeFileSync(join(cwd, "flow.yaml"), "graph:\n  nodes:\n    - { id: work, kind: run-agent, params: { agent: sleeper, prompt: go } }\n");
    const run = start(cwd, ["workflow", "run", "flow.yaml"]);
    const pid = await agentPid(cwd);
    run.child.kill("SIGTERM");
    expect(await run.exited).toBe(143);
    expect(ids(run.stdout())).toBe(["work  canceled   run-agent sleeper, task <id>  the workflow was stopped", "", 'workflow "workflow" canceled (nodes: 1 canceled); usage 0 turns', ""].join("\n"));
    expect(run.stderr()).toBe("");
    expect(alive(pid)).toBe(false);
    expect(await records(cwd)).toEqual([
      ["workflow", "canceled"],
      ["sleeper", "canceled"],
    ]);
  });
});

describe("codemode mcp stopped by SIGTERM", () => {
  it("closes the runtime as at stdin's end: the agent a call started is stopped, exit 143", async () => {
    const cwd = project();
    const server = start(cwd, ["mcp"]);
    const send = (message: unknown) => server.child.stdin!.write(`${JSON.stringify(message)}\n`);
    send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "ptc_subagent", arguments: { agent: "sleeper", task: "go", background: true } } });
    const pid = await agentPid(cwd);
    await until(() => server.stdout().includes('"id":2'), "the call's answer");
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(143);
    expect(alive(pid)).toBe(false);
    expect(await records(cwd)).toEqual([["sleeper", "canceled"]]);
  });
});
