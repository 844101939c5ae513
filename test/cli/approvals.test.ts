// Approvals on the command line: without a terminal, `codemode run` prints the continuation and
// `codemode resume` continues it; in a real terminal (tmux) it asks y/n/always; `codemode
// approvals` lists and revokes what was remembered.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approvalDigest } from "../../src/index.js";
import { CLI, runCli, tempProject } from "../mcp/helpers.js";

const CONFIG = { workspace: { write: true }, approvals: { required: ["write_file"] } };
const PROGRAM = `const before = await tools.list_files({ pattern: "*.md" });
try {
  await tools.write_file({ path: "out.txt", content: "hello" });
  text("wrote out.txt after listing " + before.files.length + " file(s)");
} catch (e) { text("refused: " + e.code + "/" + e.reason); }`;

function project(): string {
  return tempProject(CONFIG, { "prog.js": PROGRAM, "notes.md": "# notes\n" });
}

describe("codemode run and resume without a terminal", () => {
  it("prints the continuation and exits 3; resume --allow runs the call once; the continuation is then used", async () => {
    const cwd = project();
    const first = await runCli(["run", "prog.js"], { cwd });
    expect(first.code).toBe(3);
    const token = /codemode resume (cmc1\.k\.[0-9a-f]{32}) --allow call_2/.exec(first.stdout)?.[1];
    expect(token).toBeDefined();
    expect(first.stdout).toContain(`- call_2: tools.write_file({"path":"out.txt","content":"hello"})`);
    expect(existsSync(join(cwd, "out.txt"))).toBe(false);
    const done = await runCli(["resume", token!, "--allow", "call_2"], { cwd });
    expect({ code: done.code, stdout: done.stdout }).toStrictEqual({ code: 0, stdout: "wrote out.txt after listing 1 file(s)\n" });
    expect(readFileSync(join(cwd, "out.txt"), "utf8")).toBe("hello");
    const again = await runCli(["resume", token!, "--allow", "call_2"], { cwd });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("codemode resume: this continuation was already used");
  });

  it("resume --deny: the program's catch sees approval_denied; --always is remembered, listed and revoked", async () => {
    const cwd = project();
    const first = await runCli(["run", "prog.js", "--session", "s"], { cwd });
    const token = /codemode resume (\S+)/.exec(first.stdout)![1]!;
    const denied = await runCli(["resume", token, "--deny", "call_2"], { cwd });
    expect({ code: denied.code, stdout: denied.stdout }).toStrictEqual({ code: 0, stdout: "refused: tool_denied/approval_denied\n" });
    const second = await runCli(["run", "prog.js", "--session", "s"], { cwd });
    const next = /codemode resume (\S+)/.exec(second.stdout)![1]!;
    expect((await runCli(["resume", next, "--always", "call_2"], { cwd })).code).toBe(0);
    // Remembered: the same call in the same session runs without asking.
    expect(await runCli(["run", "prog.js", "--session", "s"], { cwd })).toMatchObject({ code: 0, stdout: "wrote out.txt after listing 1 file(s)\n" });
    const digest = approvalDigest("write_file", { path: "out.txt", content: "hello" });
    const listed = await runCli(["approvals", "--json"], { cwd });
    const entries = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    expect(entries).toStrictEqual([{ session: "s", tool: "write_file", digest, decision: "allow", input: { path: "out.txt", content: "hello" }, created_at: entries[0]!.created_at }]);
    expect(await runCli(["approvals", "revoke", digest, "--session", "s"], { cwd })).toMatchObject({ code: 0, stdout: "revoked 1 remembered approval\n" });
    expect((await runCli(["approvals"], { cwd })).stdout).toBe("no remembered approvals\n");
    expect((await runCli(["run", "prog.js", "--session", "s"], { cwd })).code).toBe(3);
  });

  it("refuses a tampered continuation and a configuration that names approvals wrongly, as usage errors", async () => {
    const cwd = project();
    const bad = await runCli(["resume", "cmc1.k.nothex"], { cwd });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`codemode resume: this is not a continuation`);
    const wrong = tempProject({ approvals: { required: "write_file" } }, { "prog.js": "1" });
    const refused = await runCli(["run", "prog.js"], { cwd: wrong });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`approvals.required must be an array of tool ids (such as "write_file" or "github.create_issue"), got the string "write_file"`);
  });
});

describe("codemode run in a real terminal (tmux)", () => {
  const socket = `codemode-approvals-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync("tmux", ["-L", socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
  beforeAll(() => {
    tmux("new-session", "-d", "-s", "t", "-x", "200", "-y", "50", "sh");
  });
  afterAll(() => {
    try {
      tmux("kill-server");
    } catch {
      // already gone
    }
  });
  async function waitFor(pattern: RegExp): Promise<string> {
    for (let i = 0; i < 300; i++) {
      const screen = tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t");
      if (pattern.test(screen)) return screen;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the terminal never showed ${pattern}`);
  }

  it("asks y/n/always on the terminal and the program goes on without a continuation", async () => {
    const cwd = project();
    tmux("send-keys", "-t", "t", `cd ${cwd} && ${process.execPath} ${CLI} run prog.js; echo "exit=$?"`, "Enter");
    const asked = await waitFor(/allow it\? \[y\]es \/ \[n\]o \/ \[a\]lways for this session: $/m);
    expect(asked).toContain(`codemode: the program wants to call tools.write_file({"path":"out.txt","content":"hello"})`);
    tmux("send-keys", "-t", "t", "y", "Enter");
    const screen = await waitFor(/^exit=\d+$/m);
    expect(screen).toContain("wrote out.txt after listing 1 file(s)");
    expect(screen).toMatch(/^exit=0$/m);
    expect(screen).not.toContain("codemode resume");
    expect(readFileSync(join(cwd, "out.txt"), "utf8")).toBe("hello");
  });
});
