import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentRegistry, defineAgent, parseAgentFile, type TaskError } from "../../src/tasks/index.js";
import { AGENT_FILE_MAX_BYTES } from "../../src/tasks/agents.js";

let root: string;
let dirA: string;
let dirB: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "agents-"));
  dirA = join(root, "project", ".codemode", "agents");
  dirB = join(root, "home", ".codemode", "agents");
  mkdirSync(dirA, { recursive: true });
  mkdirSync(dirB, { recursive: true });
  writeFileSync(
    join(dirA, "reviewer.md"),
    "---\ndescription: Reviews code\ndriver: script\nscript: ./reviewer.js\nread_only: true\ntools: [read_file, search_files]\nmax_turns: 4\n---\n\nReview carefully.\n",
  );
  writeFileSync(join(dirA, "notes.txt"), "not an agent");
  writeFileSync(
    join(dirB, "claude.md"),
    '---\nname: claude\ndescription: Claude Code\ndriver: command\ncommand: ["claude", "-p", "{task}", "--output-format", "stream-json", "--verbose"]\nprotocol: claude-stream-json\nreport: false\n---\n',
  );
  // Same name in the home dir: the project dir wins.
  writeFileSync(join(dirB, "reviewer.md"), "---\ndescription: home reviewer\ndriver: script\nscript: /x.js\n---\n");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function errorOf(fn: () => unknown): TaskError {
  try {
    fn();
  } catch (err) {
    return err as TaskError;
  }
  throw new Error("expected an error");
}

describe("agents", () => {
  it("loads Markdown agents with YAML front matter, project dir first", () => {
    const reg = new AgentRegistry({ dirs: [dirA, dirB] });
    expect(reg.list().map((a) => a.name)).toStrictEqual(["claude", "reviewer"]);
    expect(reg.get("reviewer")).toStrictEqual({
      name: "reviewer",
      description: "Reviews code",
      driver: "script",
      readOnly: true,
      report: true,
      prompt: "Review carefully.",
      source: join(dirA, "reviewer.md"),
      tools: ["read_file", "search_files"],
      maxTurns: 4,
      script: join(dirA, "reviewer.js"),
    });
    // retries (the Redis queue's opt-in to running a lost task again) is read like any field.
    expect(parseAgentFile(join(root, "again.md"), '---\ndescription: d\ndriver: command\ncommand: ["true"]\nretries: 2\n---\n').retries).toBe(2);
    expect(reg.get("claude")).toStrictEqual({
      name: "claude",
      description: "Claude Code",
      driver: "command",
      readOnly: false,
      report: false,
      prompt: "",
      source: join(dirB, "claude.md"),
      command: ["claude", "-p", "{task}", "--output-format", "stream-json", "--verbose"],
      protocol: "claude-stream-json",
    });
  });

  it("defaults to <cwd>/.codemode/agents and ~/.codemode/agents", () => {
    const reg = new AgentRegistry({ cwd: join(root, "project") });
    expect(reg.searched[0]).toBe(dirA);
    expect(reg.searched[1]!.endsWith(join(".codemode", "agents"))).toBe(true);
    expect(reg.get("reviewer").source).toBe(join(dirA, "reviewer.md"));
  });

  it("refuses an unknown agent listing known agents and where they load from", () => {
    const reg = new AgentRegistry({ dirs: [dirA, dirB], agents: [{ name: "fn", description: "d", driver: "function", run: async () => "x" }] });
    const err = errorOf(() => reg.get("nope"));
    expect(err.code).toBe("agent_unknown");
    expect(err.message).toBe(`unknown agent "nope"; known agents: claude, fn, reviewer (loaded from code, ${dirA}, ${dirB}). Use one of them, or add nope.md to one of those directories`);
    const empty = new AgentRegistry({ dirs: [join(root, "none")] });
    expect(errorOf(() => empty.get("x")).message).toBe(
      `unknown agent "x": no agents are defined (searched code, ${join(root, "none")}). Add x.md with YAML front matter to one of those directories, or register the agent in code`,
    );
  });

  it("names the file and the field of an invalid definition", () => {
    const f = join(root, "bad.md");
    const cases: Array<[string, string]> = [
      ["---\ndescription: d\ndriver: script\nscript: a.js\nread_only: yes please\n---\n", `agent file "${f}": line 5: field "read_only" expected boolean, received string`],
      ["---\ndescription: d\ndriver: telepathy\n---\n", `agent file "${f}": line 3: field "driver" expected one of "script"|"command"|"openai"`],
      ["---\ndescription: d\ndriver: command\n---\n", `agent file "${f}": field "command" is required for driver "command" (an argv list; "{task}" is replaced by the task)`],
      [
        "---\ndescription: d\ndriver: openai\nmodel: m\ncolour: red\n---\n",
        `agent file "${f}": line 5: unknown field "colour" (driver fields: script (script), command (command, stdin, protocol, env), openai (base_url, api_key_env, prices, temperature))`,
      ],
      ["no front matter", `agent file "${f}": must start with YAML front matter between "---" lines (name, description, driver, …)`],
      ["---\n- a\n- b\n---\n", `agent file "${f}": front matter must be a YAML mapping of fields (name, description, driver, …)`],
      ["---\ndescription: d\ndriver: openai\nmodel: m\nprices: { input: -1, output: 2 }\n---\n", `agent file "${f}": line 5: field "prices.input" Too small: expected number to be >=0`],
      ['---\ndescription: d\ndriver: command\ncommand: ["true"]\nretries: 11\n---\n', `agent file "${f}": line 5: field "retries" Too big: expected number to be <=10`],
      ['---\ndescription: d\ndriver: command\ncommand: ["true"]\nretries: 1.5\n---\n', `agent file "${f}": line 5: field "retries" expected int, received number`],
    ];
    for (const [text, message] of cases) {
      const err = errorOf(() => parseAgentFile(f, text));
      expect(err.code).toBe("agent_invalid");
      expect(err.message).toBe(message);
    }
    // YAML errors and misspelt fields: the file's own line (the front matter starts on line 2).
    expect(errorOf(() => parseAgentFile(f, "---\nname: x\ndescription: [unclosed\ndriver: script\n---\n")).message).toBe(
      `agent file "${f}": line 4: front matter is not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]`,
    );
    expect(errorOf(() => parseAgentFile(f, "---\ndescription: d\ndriver: script\nscript: a.js\nread_onyl: true\n---\n")).message).toBe(
      `agent file "${f}": line 5: unknown field "read_onyl"; did you mean "read_only"? (driver fields: script (script), command (command, stdin, protocol, env), openai (base_url, api_key_env, prices, temperature))`,
    );
  });

  it("validates agents registered in code", () => {
    expect(errorOf(() => defineAgent({ name: "x", description: "d", driver: "function" })).message).toBe('agent "x": field "run" is required for driver "function" (an async function)');
    expect(errorOf(() => defineAgent({ name: "bad name", description: "d", driver: "function", run: async () => "" })).message).toBe(
      `agent "bad name": field "name" must be letters, digits, '_', '.' or '-', starting with a letter or digit`,
    );
    const reg = new AgentRegistry({ dirs: [], agents: [{ name: "a", description: "d", driver: "function", run: async () => "" }] });
    expect(errorOf(() => reg.register({ name: "a", description: "d", driver: "function", run: async () => "" })).message).toBe('agent "a" is registered twice; give each agent a unique name');
  });
});

describe("a broken agent file is reported and skipped", () => {
  it("the other agents load; the broken one fails when asked for, naming its file and line; a repeated name is skipped", () => {
    const dir = mkdtempSync(join(tmpdir(), "agents-broken-"));
    const home = mkdtempSync(join(tmpdir(), "agents-home-"));
    writeFileSync(join(dir, "good.md"), "---\ndescription: works\ndriver: script\nscript: g.js\n---\n");
    writeFileSync(join(dir, "broken.md"), "---\nname: fixer\ndescription: [oops\ndriver: script\n---\n");
    writeFileSync(join(dir, "twin.md"), "---\nname: good\ndescription: same name\ndriver: script\nscript: t.js\n---\n");
    // A later directory's agent of the broken name is not used in its place.
    writeFileSync(join(home, "fixer.md"), "---\ndescription: someone else's fixer\ndriver: script\nscript: f.js\n---\n");
    const registry = new AgentRegistry({ dirs: [dir, home] });
    expect(registry.list().map((agent) => agent.name)).toEqual(["good"]);
    expect(registry.problems.map((problem) => [problem.name, problem.file])).toEqual([
      ["fixer", join(dir, "broken.md")],
      ["good", join(dir, "twin.md")],
    ]);
    const error = errorOf(() => registry.get("fixer"));
    expect(error.code).toBe("agent_invalid");
    expect(error.message).toBe(
      `agent "fixer" cannot be used: its file does not load. agent file "${join(dir, "broken.md")}": line 4: front matter is not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]`,
    );
    expect(registry.problems[1]!.message).toBe(`agent file "${join(dir, "twin.md")}": field "name" "good" is already used by "${join(dir, "good.md")}"; rename one of them (this one is skipped)`);
    rmSync(dir, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });
});

describe("an agent file that is not a small regular file is refused at once", () => {
  it("a FIFO, a link to /dev/zero and a sparse 3 GiB file are each one problem naming the file and why; the other agents load", () => {
    const dir = mkdtempSync(join(tmpdir(), "agents-hostile-"));
    writeFileSync(join(dir, "good.md"), "---\ndescription: works\ndriver: script\nscript: g.js\n---\n");
    execFileSync("mkfifo", [join(dir, "fifo.md")]);
    symlinkSync("/dev/zero", join(dir, "zero.md"));
    // Its head declares a name: that name is hidden in later directories, as for any broken file.
    writeFileSync(join(dir, "huge.md"), "---\nname: fixer\ndescription: big\ndriver: script\nscript: h.js\n---\n");
    truncateSync(join(dir, "huge.md"), 3 * 1024 * 1024 * 1024);
    writeFileSync(join(dir, "edge.md"), `---\ndescription: one byte too many\ndriver: script\nscript: e.js\n---\n`.padEnd(AGENT_FILE_MAX_BYTES + 1, " "));
    const registry = new AgentRegistry({ dirs: [dir] });
    expect(registry.list().map((agent) => agent.name)).toEqual(["good"]);
    expect(registry.problems.map((problem) => [problem.name, problem.message])).toEqual([
      ["edge", `agent file "${join(dir, "edge.md")}": is 1048577 bytes, larger than the 1048576 bytes an agent file may be`],
      ["fifo", `agent file "${join(dir, "fifo.md")}": is a FIFO, not a regular file; an agent file must be a regular file`],
      ["fixer", `agent file "${join(dir, "huge.md")}": is 3072.0 MiB, larger than the 1.0 MiB an agent file may be`],
      ["zero", `agent file "${join(dir, "zero.md")}": is a character device, not a regular file; an agent file must be a regular file`],
    ]);
    expect(errorOf(() => registry.get("fifo")).message).toBe(`agent "fifo" cannot be used: its file does not load. ${registry.problems[1]!.message}`);
    // A file of exactly the cap loads.
    writeFileSync(join(dir, "edge.md"), `---\ndescription: just fits\ndriver: script\nscript: e.js\n---\n`.padEnd(AGENT_FILE_MAX_BYTES, " "));
    expect(new AgentRegistry({ dirs: [dir] }).list().map((agent) => agent.name)).toEqual(["edge", "good"]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("parseAgentFile refuses the same way, and says when the file is missing", () => {
    const dir = mkdtempSync(join(tmpdir(), "agents-hostile-"));
    execFileSync("mkfifo", [join(dir, "fifo.md")]);
    expect(errorOf(() => parseAgentFile(join(dir, "fifo.md"))).message).toBe(`agent file "${join(dir, "fifo.md")}": is a FIFO, not a regular file; an agent file must be a regular file`);
    expect(errorOf(() => parseAgentFile(join(dir, "none.md"))).message).toBe(`agent file "${join(dir, "none.md")}": no such file`);
    rmSync(dir, { recursive: true, force: true });
  });
});
