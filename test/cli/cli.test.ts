// The built `codemode` CLI, spawned as a user runs it: outputs, channels and exit codes.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { CONFIG_SCHEMA_URL } from "../../src/cli/config-schema.js";
import { inventoryConfig, runCli, tempProject } from "../mcp/helpers.js";

describe("codemode run", () => {
  it("prints the program's text() output and exits 0", async () => {
    const cwd = tempProject(undefined, { "prog.js": `text("hello "); text({ n: 1 }); console.log("not for the model");` });
    expect(await runCli(["run", "prog.js"], { cwd })).toEqual({ code: 0, stdout: 'hello \n{"n":1}\n', stderr: "" });
  });

  it("reads the program from stdin with -, and renders a return value when nothing was printed", async () => {
    const cwd = tempProject();
    expect(await runCli(["run", "-"], { cwd, stdin: "return [1, 2].map((x) => x * 2);" })).toEqual({ code: 0, stdout: "[\n  2,\n  4\n]\n", stderr: "" });
  });

  it("--json prints all three channels", async () => {
    const cwd = tempProject(undefined, { "a.txt": "alpha\n", "prog.js": `const f = await tools.read_file({ path: "a.txt" }); console.warn("read", f.path); text(f.content); return f.total_lines;` });
    const result = await runCli(["run", "prog.js", "--json"], { cwd });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    const out = JSON.parse(result.stdout);
    expect(Object.keys(out)).toEqual(["content", "structuredContent", "details"]);
    // The return value is not shown because the program printed; the model is told so.
    expect(out.content).toEqual([{ type: "text", text: "alpha\n\nWarnings:\n- the return value (1 byte of JSON) is not shown because the program printed with text(); text() it to see it here" }]);
    expect(out.structuredContent).toMatchObject({ status: "ok", value: 1, tool_calls: 1 });
    expect(out.details.console).toEqual([{ level: "warn", text: "read a.txt" }]);
    expect(out.details.calls).toMatchObject([{ id: 1, tool: "read_file", args: '{"path":"a.txt"}', status: "ok" }]);
    expect(out.details.warnings).toEqual(["the return value (1 byte of JSON) is not shown because the program printed with text(); text() it to see it here"]);
  });

  it("a failed program exits 1 with the failure and the receipt on stderr", async () => {
    const cwd = tempProject(undefined, { "bad.js": `text("partial");\nawait tools.list_files({ pattern: "*.js" });\nnull.x;` });
    expect(await runCli(["run", "bad.js"], { cwd })).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "Script failed (exception): TypeError: cannot read property 'x' of null (line 3, column 5)\n3 | null.x;\n  |     ^\n\npartial\n\nTool calls made before the failure (not undone):\n- tools.list_files: ok\n",
    });
  });

  it("--json of a failed program still exits 1, with isError and the error in structuredContent", async () => {
    const cwd = tempProject();
    const result = await runCli(["run", "-", "--json", "--timeout", "300ms"], { cwd, stdin: "for (;;) {}" });
    expect(result.code).toBe(1);
    const out = JSON.parse(result.stdout);
    expect(out.isError).toBe(true);
    expect(out.structuredContent.status).toBe("error");
    expect(out.structuredContent.error.kind).toBe("timeout");
  });

  it("--session keeps store()/load() values between runs in the data dir", async () => {
    const cwd = tempProject({ dataDir: "state" });
    const first = await runCli(["run", "-", "--session", "s1"], { cwd, stdin: `store("count", (load("count") ?? 0) + 1); return load("count");` });
    const second = await runCli(["run", "-", "--session", "s1"], { cwd, stdin: `store("count", (load("count") ?? 0) + 1); return load("count");` });
    const other = await runCli(["run", "-", "--session", "s2"], { cwd, stdin: `return load("count") ?? "empty";` });
    expect([first.stdout, second.stdout, other.stdout]).toEqual(["1\n", "2\n", '"empty"\n']);
    expect(JSON.parse(readFileSync(join(cwd, "state", "sessions", "s1.json"), "utf8"))).toEqual({ count: 2 });
    expect(existsSync(join(cwd, "state", "sessions", "s2.json"))).toBe(false);
  });

  it("binds upstream MCP servers from codemode.json and reports one that does not start, without failing", async () => {
    const cwd = tempProject(inventoryConfig({ gone: { command: "/nonexistent/codemode-cli-server" } }), {
      "prog.js": `const item = await tools.inventory.get_item({ sku: "A-1" }); text(\`\${item.name} x\${item.stock}\`);`,
    });
    const warnings = [
      'MCP server "inventory": tool "list_skus" is skipped: programs would reach it as tools.inventory.list_skus, like "list-skus"',
      'MCP server "inventory": tool "bad name" cannot be bound: defineTool: "name" must be 1–128 characters of letters, digits, "_", "-" or ".", not starting with "-" or ".", received "bad name"',
      'MCP server "gone" (/nonexistent/codemode-cli-server) failed to start: spawn /nonexistent/codemode-cli-server ENOENT; its tools are not available (tools.gone.*)',
    ];
    expect(await runCli(["run", "prog.js"], { cwd })).toEqual({ code: 0, stdout: "anvil x3\n", stderr: warnings.map((w) => `codemode: warning: ${w}\n`).join("") });
    const json = JSON.parse((await runCli(["run", "prog.js", "--json"], { cwd })).stdout);
    expect(json.details.warnings).toEqual(warnings);
  });
});

describe("usage and configuration errors exit 2 and say what to fix", () => {
  const cases: Array<[string, string[], string | undefined, string]> = [
    ["no program", ["run"], undefined, "codemode run: missing the program: give a file path, or - to read it from stdin\nRun codemode help for usage.\n"],
    ["missing file", ["run", "nope.js"], undefined, 'codemode run: cannot read the program "nope.js": no such file\nRun codemode help for usage.\n'],
    [
      "unknown flag",
      ["run", "x.js", "--jsn"],
      undefined,
      'codemode run: unknown flag "--jsn"; did you mean --json? (known: --json, --timeout, --session, --config, --help)\nRun codemode help for usage.\n',
    ],
    [
      "bad timeout",
      ["run", "x.js", "--timeout", "soon"],
      undefined,
      'codemode run: --timeout must be a duration from 1ms to 600s, like 5000, 5000ms, 30s or 2m; got "soon"\nRun codemode help for usage.\n',
    ],
    ["timeout without value", ["run", "x.js", "--timeout"], undefined, "codemode run: --timeout needs a value <duration>\nRun codemode help for usage.\n"],
    ["bad session", ["run", "x.js", "--session", "a b"], undefined, 'codemode run: --session must be 1–200 letters, digits, "_", ".", ":", "@" or "-", got "a b"\nRun codemode help for usage.\n'],
    [
      "unknown command",
      ["rn"],
      undefined,
      'codemode: unknown command "rn"; did you mean "run"? Commands: run, mcp, tasks, task, tools, workflow, init, worker, resume, approvals, help\nRun codemode help for usage.\n',
    ],
    ["--config names no file", ["run", "x.js", "--config", "nope.json"], undefined, "--config: no configuration file at nope.json\n"],
    ["mcp takes no arguments", ["mcp", "github"], undefined, "codemode mcp: takes no arguments, got github; configure upstream servers in codemode.json\nRun codemode help for usage.\n"],
    ["config: not JSON", ["run", "x.js"], "{ limits: 1", 'codemode.json:1:3: not valid JSON: "limits" is not a JSON value (names and strings go in double quotes)\n'],
    [
      "config: unknown field",
      ["run", "x.js"],
      JSON.stringify({ limit: {} }),
      'codemode.json:1:2: unknown field "limit"; did you mean "limits"? (known here: "$schema", "limits", "dataDir", "agentsDir", "workspace", "mcpServers", "tasks", "declarations", "approvals")\n',
    ],
    ["config: bad limit", ["run", "x.js"], JSON.stringify({ limits: { timeoutMs: -1 } }), "codemode.json:1:24: limits.timeoutMs must be an integer from 1 to 600000, got the number -1\n"],
    [
      "config: server without command",
      ["run", "x.js"],
      JSON.stringify({ mcpServers: { gh: { args: [] } } }),
      "codemode.json:1:21: mcpServers.gh.command is missing: it must be a non-empty string (the program to start)\n",
    ],
    [
      "config: server args",
      ["run", "x.js"],
      JSON.stringify({ mcpServers: { gh: { command: "x", args: "--stdio" } } }),
      'codemode.json:1:43: mcpServers.gh.args must be an array of strings, got the string "--stdio"\n',
    ],
    [
      "config: server env",
      ["run", "x.js"],
      JSON.stringify({ mcpServers: { gh: { command: "x", env: { TOKEN: 1 } } } }),
      "codemode.json:1:51: mcpServers.gh.env.TOKEN must be a string, got the number 1\n",
    ],
    [
      "config: url server",
      ["run", "x.js"],
      JSON.stringify({ mcpServers: { gh: { url: "ftp://x" } } }),
      'codemode.json:1:28: mcpServers.gh.url must be an http:// or https:// URL, got the string "ftp://x"\n',
    ],
    [
      "config: server name",
      ["run", "x.js"],
      JSON.stringify({ mcpServers: { "my server": { command: "x" } } }),
      'codemode.json:1:16: mcpServers has the name "my server"; a name of 1–64 letters, digits, "_" or "-" is expected (programs reach its tools as tools.<name>.<tool>)\n',
    ],
    ["config: workspace", ["run", "x.js"], JSON.stringify({ workspace: { write: "yes" } }), 'codemode.json:1:23: workspace.write must be true or false, got the string "yes"\n'],
  ];
  it("a program file past 16 MiB (a data file run by mistake) is refused before it is read; the next run works", async () => {
    const cwd = tempProject(undefined, { "x.js": "text(1)" });
    // Sparse: 3 GiB on the file system, no disk used. It used to be read whole (4 GB of memory, then a crash).
    execFileSync("truncate", ["-s", "3G", join(cwd, "huge.js")]);
    expect(await runCli(["run", "huge.js"], { cwd })).toEqual({
      code: 2,
      stdout: "",
      stderr: 'codemode run: the program "huge.js" is over 16.0 MiB; a program is code, not data — read data with tools\nRun codemode help for usage.\n',
    });
    expect(await runCli(["run", "x.js"], { cwd })).toMatchObject({ code: 0, stdout: "1\n" });
  });

  for (const [name, args, config, stderr] of cases) {
    it(name, async () => {
      const cwd = tempProject(config, { "x.js": "text(1)" });
      const result = await runCli(args, { cwd });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      if (stderr.endsWith("\n")) expect(result.stderr.replace(cwd + "/", "")).toBe(stderr);
      else expect(result.stderr).toContain(stderr);
    });
  }
});

describe("codemode tools", () => {
  it("lists what a program can call: workspace, upstream (namespaced) and the runtime's own tools; never ptc_run_code", async () => {
    const cwd = tempProject(inventoryConfig());
    const result = await runCli(["tools"], { cwd });
    expect(result.code).toBe(0);
    const rows = result.stdout
      .trimEnd()
      .split("\n")
      .map((line) => line.replace(/ {2,}/g, " | "));
    expect(rows.filter((row) => row.startsWith("tools.inventory.") || row.startsWith("tools.read_file"))).toEqual([
      "tools.read_file | structured | Read a text file in the workspace, optionally a range of lines (1-based, inclusive).",
      "tools.inventory.get_item | structured | Look up one item by SKU.",
      "tools.inventory.list_skus | text | All SKUs, one per line.",
      "tools.inventory.explode | text | Always fails.",
      "tools.inventory.greet | text | Greets with the GREETING environment variable.",
    ]);
    expect(rows.some((row) => row.startsWith("tools.ptc_task_list |"))).toBe(true);
    expect(rows.some((row) => row.startsWith("tools.ptc_run_code"))).toBe(false);
    const declarations = await runCli(["tools", "--declarations"], { cwd });
    expect(declarations.stdout).toMatch(/^declare namespace tools \{/);
    expect(declarations.stdout).toContain("namespace inventory {");
    const json = JSON.parse((await runCli(["tools", "--json"], { cwd })).stdout);
    expect(json.find((d: { id: string }) => d.id === "inventory.get_item").output_schema.required).toEqual(["name", "sku", "stock"]);
  });
});

describe("agent files are configuration too", () => {
  it("a malformed agent file is reported and skipped: commands that do not use it work; using it names the file, the line and each bad field", async () => {
    const cwd = tempProject({ agentsDir: "agents" });
    mkdirSync(join(cwd, "agents"));
    writeFileSync(join(cwd, "agents", "x.md"), "---\nname: x\ndriver: scrpt\n---\nhi\n");
    const problem = `agent file "${join(cwd, "agents", "x.md")}": field "description" expected string, received undefined; line 3: field "driver" expected one of "script"|"command"|"openai"`;
    const warning = `codemode: warning: ${problem}; the agent "x" is not available until it is fixed\n`;
    expect(await runCli(["run", "-"], { cwd, stdin: "text(1)" })).toEqual({ code: 0, stdout: "1\n", stderr: warning });
    expect(await runCli(["tasks"], { cwd })).toMatchObject({ code: 0, stderr: "" });
    const used = await runCli(["run", "-"], { cwd, stdin: `await tools.ptc_subagent({ agent: "x", task: "go" })` });
    expect(used.code).toBe(1);
    expect(used.stderr).toContain(`Script failed (exception): ToolError: agent "x" cannot be used: its file does not load. ${problem}`);
  });
});

describe("an agents directory holding a FIFO, a device or a huge file", () => {
  it("every command finishes with one warning per such file, and the other agents run", async () => {
    const cwd = tempProject(undefined, { "hi.js": `text("hi")` });
    const agents = join(cwd, ".codemode", "agents");
    mkdirSync(agents, { recursive: true });
    execFileSync("mkfifo", [join(agents, "pipe.md")]);
    writeFileSync(join(agents, "huge.md"), "---\ndescription: big\ndriver: script\nscript: h.js\n---\n");
    truncateSync(join(agents, "huge.md"), 2 * 1024 * 1024 * 1024);
    writeFileSync(join(agents, "good.md"), "---\ndescription: works\ndriver: script\nscript: good.js\n---\n");
    writeFileSync(join(agents, "good.js"), `text("good: " + task)`);
    // ~/.codemode/agents is read by every command too.
    const home = mkdtempSync(join(tmpdir(), "codemode-home-"));
    mkdirSync(join(home, ".codemode", "agents"), { recursive: true });
    symlinkSync("/dev/zero", join(home, ".codemode", "agents", "zero.md"));
    const env = { HOME: home };
    const warnings = [
      `agent file "${join(agents, "huge.md")}": is 2048.0 MiB, larger than the 1.0 MiB an agent file may be; the agent "huge" is not available until it is fixed`,
      `agent file "${join(agents, "pipe.md")}": is a FIFO, not a regular file; an agent file must be a regular file; the agent "pipe" is not available until it is fixed`,
      `agent file "${join(home, ".codemode", "agents", "zero.md")}": is a character device, not a regular file; an agent file must be a regular file; the agent "zero" is not available until it is fixed`,
    ];
    const stderr = warnings.map((w) => `codemode: warning: ${w}\n`).join("");
    // Generous bounds: before, each of these hung until killed (or read /dev/zero into GBs of memory).
    expect(await runCli(["run", "hi.js"], { cwd, env, timeoutMs: 30_000 })).toEqual({ code: 0, stdout: "hi\n", stderr });
    const tools = await runCli(["tools"], { cwd, env, timeoutMs: 30_000 });
    expect([tools.code, tools.stderr]).toEqual([0, stderr]);
    const used = await runCli(["run", "-"], { cwd, env, timeoutMs: 30_000, stdin: `const r = await tools.ptc_subagent({ agent: "good", task: "x" }); text(r.status);` });
    expect(used).toEqual({ code: 0, stdout: "succeeded\n", stderr });
    const refused = await runCli(["run", "-"], { cwd, env, timeoutMs: 30_000, stdin: `await tools.ptc_subagent({ agent: "pipe", task: "x" })` });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`ToolError: agent "pipe" cannot be used: its file does not load. agent file "${join(agents, "pipe.md")}": is a FIFO, not a regular file`);
  });
});

describe("a script agent whose program file is a FIFO or a device", () => {
  it("its task fails at once saying so, the run exits, and a script agent with a real program still runs", async () => {
    const cwd = tempProject();
    const agents = join(cwd, ".codemode", "agents");
    mkdirSync(agents, { recursive: true });
    execFileSync("mkfifo", [join(agents, "pipe.js")]);
    symlinkSync("/dev/zero", join(agents, "zero.js"));
    writeFileSync(join(agents, "ok.js"), `text("ok: " + task)`);
    for (const name of ["pipe", "zero", "ok"]) writeFileSync(join(agents, `${name}.md`), `---\ndescription: d\ndriver: script\nscript: ${name}.js\n---\n`);
    // Before, the FIFO's read blocked a libuv thread and the CLI never exited; /dev/zero read 670 MB and failed with "Invalid string length".
    for (const [name, what] of [
      ["pipe", "a FIFO"],
      ["zero", "a character device"],
    ]) {
      const run = await runCli(["run", "-"], { cwd, timeoutMs: 30_000, stdin: `await tools.ptc_subagent({ agent: "${name}", task: "x" })` });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        `failed: cannot read the program of agent "${name}" (${join(agents, `${name}.js`)}): it is ${what}, not a regular file; fix the "script" field of ${join(agents, `${name}.md`)}`,
      );
    }
    const ok = await runCli(["run", "-"], {
      cwd,
      timeoutMs: 30_000,
      stdin: `await tools.ptc_subagent({ agent: "ok", task: "x" }); text((await tools.ptc_task_output({ task_id: (await tools.ptc_task_list({})).tasks.find((t) => t.status === "succeeded").id })).output);`,
    });
    expect(ok).toEqual({ code: 0, stdout: "ok: x\n", stderr: "" });
  });
});

describe("a FIFO planted as the task database", () => {
  it("every command stops at once naming the file and the fix; moved aside, the next run works", async () => {
    const cwd = tempProject(undefined, { "hi.js": `text("hi")` });
    const db = join(cwd, ".codemode", "state", "tasks.db");
    mkdirSync(join(cwd, ".codemode", "state"), { recursive: true, mode: 0o700 });
    execFileSync("mkfifo", [db]);
    const stderr = `codemode: ${db} is a FIFO, not a regular file; the task database and its -wal, -shm and -journal files must be regular files: move it aside (mv "${db}" "${db}.bad")\n`;
    // Before, SQLite's open of the FIFO hung each of these until killed.
    expect(await runCli(["run", "hi.js"], { cwd, timeoutMs: 30_000 })).toEqual({ code: 1, stdout: "", stderr });
    expect(await runCli(["tasks"], { cwd, timeoutMs: 30_000 })).toEqual({ code: 1, stdout: "", stderr });
    execFileSync("mv", [db, `${db}.bad`]);
    expect(await runCli(["run", "hi.js"], { cwd, timeoutMs: 30_000 })).toEqual({ code: 0, stdout: "hi\n", stderr: "" });
  });
});

describe("codemode init and help", () => {
  it("init writes a starter project whose sample program runs; a second init keeps the files", async () => {
    const cwd = tempProject();
    const first = await runCli(["init"], { cwd });
    expect(first).toEqual({
      code: 0,
      stdout:
        "wrote   codemode.json\nwrote   .codemode/agents/line-counter.md\nwrote   .codemode/agents/line-counter.js\nwrote   .codemode/.gitignore\nwrote   hello.js\n\nNext: codemode run hello.js\n",
      stderr: "",
    });
    expect(JSON.parse(readFileSync(join(cwd, "codemode.json"), "utf8"))).toEqual({
      $schema: CONFIG_SCHEMA_URL,
      limits: { timeoutMs: 30000 },
      dataDir: ".codemode/state",
      agentsDir: ".codemode/agents",
      workspace: { write: false },
      mcpServers: {},
    });
    expect(await runCli(["run", "hello.js"], { cwd })).toEqual({ code: 0, stdout: "This directory has 2 files at its top level.\n", stderr: "" });
    // The sample agent runs: a read-only script agent over the workspace.
    writeFileSync(join(cwd, "README.md"), "# hello\n\nworld\n");
    const spawned = await runCli(["run", "-"], {
      cwd,
      stdin: `const r = await tools.ptc_subagent({ agent: "line-counter", task: "**/*.md" }); const { tasks } = await tools.ptc_task_list({}); text((await tools.ptc_task_output({ task_id: tasks[0].id })).output); text(r.read_only_tier);`,
    });
    expect(spawned).toEqual({ code: 0, stdout: "1 file, 3 lines\n3\tREADME.md\nenforced\n", stderr: "" });
    // What git would commit: the configuration, the agents and the program; not the state the runs left.
    expect(existsSync(join(cwd, ".codemode", "state", "tasks.db"))).toBe(true);
    execFileSync("git", ["init", "-q"], { cwd });
    execFileSync("git", ["add", "-A"], { cwd });
    expect(execFileSync("git", ["ls-files"], { cwd, encoding: "utf8" }).trim().split("\n").sort()).toEqual([
      ".codemode/.gitignore",
      ".codemode/agents/line-counter.js",
      ".codemode/agents/line-counter.md",
      "README.md",
      "codemode.json",
      "hello.js",
    ]);
    const second = await runCli(["init"], { cwd });
    expect(second.stdout.split("\n")[0]).toBe("kept    codemode.json (exists; --force overwrites it)");
  });

  it("help: bare codemode prints usage on stderr with exit 2; help and --help exit 0", async () => {
    const cwd = tempProject();
    const bare = await runCli([], { cwd });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/^codemode — run model-written JavaScript/);
    const help = await runCli(["--help"], { cwd });
    expect(help.code).toBe(0);
    expect(help.stdout).toBe(bare.stderr);
    const run = await runCli(["help", "run"], { cwd });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: codemode run <file\|->/);
    const flagHelp = await runCli(["run", "--help"], { cwd });
    expect(flagHelp.stdout).toBe(run.stdout);
    const version = await runCli(["--version"], { cwd });
    expect(version).toEqual({ code: 0, stdout: `${JSON.parse(readFileSync(join(__dirname, "../../package.json"), "utf8")).version}\n`, stderr: "" });
  });
});
