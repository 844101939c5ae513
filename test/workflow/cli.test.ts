// `codemode workflow validate|run` as a user runs it (the built CLI, real agents: a command agent
// speaking the JSON-lines protocol and a script agent), and `ptc_workflow` served by `codemode mcp`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, ROOT, runCli, tempProject } from "../mcp/helpers.js";

const AGENTS = join(ROOT, "examples", "workflow", "agents");
const EXAMPLE = readFileSync(join(ROOT, "examples", "workflow", "review.yaml"), "utf8");
const ids = (text: string) => text.replace(/\b[0-9A-HJKMNP-TV-Z]{26}\b/g, "<id>");

/** A project with the example's agents, a file to review and the example workflow (default input: notes.md). */
function project(files: Record<string, string> = {}): string {
  const cwd = tempProject({ agentsDir: AGENTS }, { "notes.md": "# Notes\n\nOne line.\n", ...files });
  writeFileSync(join(cwd, "review.yaml"), EXAMPLE.replace("default: examples/workflow/sample.md", "default: notes.md"));
  return cwd;
}

async function tasksOf(cwd: string): Promise<Array<{ id: string; agent: string; status: string; parentId?: string; usage?: Record<string, number> }>> {
  const listed = await runCli(["tasks", "--json"], { cwd });
  return JSON.parse(listed.stdout).tasks;
}

describe("codemode workflow validate", () => {
  it("a valid workflow: exit 0, one line", async () => {
    expect(await runCli(["workflow", "validate", "review.yaml"], { cwd: project() })).toEqual({ code: 0, stdout: "review.yaml: valid\n", stderr: "" });
  });

  it("an invalid one: exit 1, each problem as docs/workflows.md#validation shows it (error: <code>, then the message), its line, and nothing ran", async () => {
    const cwd = project({ "broken.yaml": EXAMPLE.replace(/^\s*result_view: full\n/m, "").replace("agent: summarizer", "agent: summariser") });
    expect(await runCli(["workflow", "validate", "broken.yaml"], { cwd })).toEqual({
      code: 1,
      stdout: [
        "error: result_view_field_requires_full",
        'node "review" reads nodes.inspect.output.bytes, which the compact result of read_file does not include; fix: add `result_view: full` to the params of node "inspect"',
        "  at broken.yaml:24",
        "",
        "error: unknown_agent",
        `node "summary" params.agent: unknown agent "summariser"; known agents: reviewer, summarizer (loaded from code, ${AGENTS}, ${join(process.env.HOME ?? "", ".codemode", "agents")}). Use one of them, or add summariser.md to one of those directories`,
        "  at broken.yaml:31",
        "",
        "broken.yaml: 2 errors; nothing ran",
        "",
      ].join("\n"),
      stderr: "",
    });
    const json = await runCli(["workflow", "validate", "broken.yaml", "--json", "--input", "file=notes.md"], { cwd });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).errors.map((e: { code: string; node: string; line: number }) => [e.code, e.node, e.line])).toEqual([
      ["result_view_field_requires_full", "review", 24],
      ["unknown_agent", "summary", 31],
    ]);
    expect(await tasksOf(cwd)).toEqual([]);
  });

  it("usage errors exit 2 and name the fix", async () => {
    const cwd = project();
    expect(await runCli(["workflow", "validate"], { cwd })).toMatchObject({ code: 2, stderr: "codemode workflow validate: expected one workflow file, got none\nRun codemode help for usage.\n" });
    expect(await runCli(["workflow", "check", "review.yaml"], { cwd })).toMatchObject({
      code: 2,
      stderr: 'codemode workflow: unknown subcommand "check"; use "validate" or "run"\nRun codemode help for usage.\n',
    });
    expect(await runCli(["workflow", "run", "review.yaml", "--input", "file"], { cwd })).toMatchObject({
      code: 2,
      stderr: 'codemode workflow run: --input must be <name>=<value>, got "file"\nRun codemode help for usage.\n',
    });
    expect(await runCli(["workflow", "run", "nope.yaml"], { cwd })).toMatchObject({
      code: 2,
      stderr: 'codemode workflow run: cannot read the workflow "nope.yaml": no such file\nRun codemode help for usage.\n',
    });
    const typed = project({ "typed.yaml": "inputs: { n: { default: 3 } }\ngraph: { nodes: [{ id: a, kind: list_files, params: { pattern: '*.yaml', limit: '{{ .inputs.n }}' } }] }\n" });
    expect(await runCli(["workflow", "run", "typed.yaml", "--input", "n=many"], { cwd: typed })).toMatchObject({
      code: 2,
      stderr: 'codemode workflow run: --input n must be a number (its default is 3), got "many"\nRun codemode help for usage.\n',
    });
    const listed = await runCli(["workflow", "run", "typed.yaml", "--input", "n=1", "--json"], { cwd: typed });
    expect(JSON.parse(listed.stdout).outputs.a).toMatchObject({ files: ["review.yaml"], truncated: true });
  });
});

describe("codemode workflow run", () => {
  it("runs it as a task: a line per node as it finishes, the final node's output, the agents' usage; progress on stderr", async () => {
    const cwd = project();
    const result = await runCli(["workflow", "run", "review.yaml"], { cwd, env: { CODEMODE_PROGRESS: "1" } });
    expect({ ...result, stdout: ids(result.stdout), stderr: "" }).toEqual({
      code: 0,
      stdout: [
        "inspect  succeeded  read_file (full view)",
        "review   succeeded  run-agent reviewer, task <id>, in 12 · out 20 · $0.0003 · 1 turn",
        "summary  succeeded  run-agent summarizer, task <id>, 1 turn",
        "",
        "--- summary ---",
        "Summary: 3 lines. notes.md (19 bytes): 2 non-empty lines, 1 headings, longest line 9 characters",
        "",
        'workflow "review-file" succeeded (nodes: 3 succeeded); usage in 12 · out 20 · $0.0003 · 2 turns',
        "",
      ].join("\n"),
      stderr: "",
    });
    // Live progress, one line per task and status (CODEMODE_PROGRESS=1 when stderr is not a terminal).
    expect(result.stderr).toMatch(/^\[task [0-9A-Z]{26}\] +succeeded {2}review-file \(workflow\)/m);
    expect(result.stderr).toMatch(/^\[task [0-9A-Z]{26}\] +succeeded {2}review \(reviewer\)/m);
    const tasks = await tasksOf(cwd);
    const workflow = tasks.find((t) => t.agent === "workflow")!;
    const children = tasks.filter((t) => t.parentId === workflow.id);
    expect(children.map((c) => c.agent)).toEqual(["reviewer", "summarizer"]);
    expect(workflow.usage).toEqual({
      input: children[0]!.usage!.input + children[1]!.usage!.input,
      output: children[0]!.usage!.output + children[1]!.usage!.output,
      cost: children[0]!.usage!.cost + children[1]!.usage!.cost,
      turns: 2,
    });
  });

  it("--json prints the outputs; a failed node exits 1 and says why; an invalid workflow runs nothing", async () => {
    const cwd = project({ "broken.yaml": EXAMPLE.replace(/^\s*result_view: full\n/m, "") });
    const json = await runCli(["workflow", "run", "review.yaml", "--json"], { cwd });
    expect(json.code).toBe(0);
    const out = JSON.parse(json.stdout);
    expect(Object.keys(out)).toEqual(["task_id", "status", "outputs", "nodes", "usage", "warnings"]);
    expect(out.outputs.inspect).toMatchObject({ path: "notes.md", bytes: 19, total_lines: 3 });
    expect(out.outputs.summary.text).toBe("Summary: 3 lines. notes.md (19 bytes): 2 non-empty lines, 1 headings, longest line 9 characters");

    const failed = await runCli(["workflow", "run", "review.yaml", "--input", "file=gone.md"], { cwd });
    expect(failed).toEqual({
      code: 1,
      stdout: [
        'inspect  failed     read_file (full view)  tool_failed (not_found): file "gone.md" does not exist; find files with list_files',
        'review   skipped    run-agent reviewer  it depends on "inspect", which failed',
        'summary  skipped    run-agent summarizer  it depends on "review", which was skipped',
        "",
        'workflow "review-file" failed (nodes: 1 failed, 2 skipped); usage 0 turns',
        "",
      ].join("\n"),
      stderr: 'codemode: node "inspect" failed (tool_failed, not_found): file "gone.md" does not exist; find files with list_files; 2 nodes were skipped\n',
    });

    const before = (await tasksOf(cwd)).length;
    const invalid = await runCli(["workflow", "run", "broken.yaml"], { cwd });
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe("");
    expect(invalid.stderr.split("\n").slice(0, 3)).toEqual([
      "error: result_view_field_requires_full",
      'node "review" reads nodes.inspect.output.bytes, which the compact result of read_file does not include; fix: add `result_view: full` to the params of node "inspect"',
      "  at broken.yaml:24",
    ]);
    expect((await tasksOf(cwd)).length).toBe(before);
  });

  it("Ctrl-C stops it mid-run, its running agent too; the usage recorded is what its agents cost", async () => {
    const sleepy = [
      "---",
      "name: sleepy",
      "description: reports usage, then works for a long time",
      "driver: command",
      "stdin: true",
      "protocol: jsonl",
      "command:",
      "  - node",
      "  - -e",
      "  - |",
      '    const emit = (e) => process.stdout.write(JSON.stringify(e) + "\\n");',
      '    emit({ type: "turn" }); emit({ type: "usage", input_tokens: 30, output_tokens: 5 });',
      '    setTimeout(() => require("node:fs").writeFileSync("started", ""), 50);',
      "    setTimeout(() => {}, 60000);",
      "---",
      "Sleeps.",
      "",
    ].join("\n");
    const cwd = tempProject({ agentsDir: "agents" }, { "notes.md": "# Notes\n" });
    mkdirSync(join(cwd, "agents"));
    writeFileSync(join(cwd, "agents", "sleepy.md"), sleepy);
    writeFileSync(
      join(cwd, "flow.yaml"),
      "graph:\n  nodes:\n    - { id: inspect, kind: read_file, params: { path: notes.md, result_view: full } }\n    - { id: work, kind: run-agent, params: { agent: sleepy, prompt: 'read {{ .nodes.inspect.output.bytes }} bytes' } }\n",
    );
    const child = spawn(process.execPath, [CLI, "workflow", "run", "flow.yaml"], { cwd, env: { ...process.env, CODEMODE_PROGRESS: "0" } });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    for (let i = 0; i < 400 && !existsSync(join(cwd, "started")); i++) await new Promise((r) => setTimeout(r, 25));
    expect(existsSync(join(cwd, "started"))).toBe(true);
    child.kill("SIGINT");
    expect(await exited).toBe(1);
    expect(ids(stdout)).toBe(
      [
        "inspect  succeeded  read_file (full view)",
        "work     canceled   run-agent sleepy, task <id>  the workflow was stopped",
        "",
        'workflow "workflow" canceled (nodes: 1 succeeded, 1 canceled); usage in 30 · out 5 · 1 turn',
        "",
      ].join("\n"),
    );
    expect(stderr).toBe("");
    const tasks = await tasksOf(cwd);
    expect(tasks.map((t) => [t.agent, t.status])).toEqual([
      ["workflow", "canceled"],
      ["sleepy", "canceled"],
    ]);
    expect(tasks[0]!.usage).toEqual(tasks[1]!.usage);
    expect(tasks[0]!.usage).toEqual({ input: 30, output: 5, cost: 0, turns: 1 });
  });
});

describe("codemode mcp serves ptc_workflow", () => {
  it("lists it with its schemas, validates and runs through the official client", async () => {
    const cwd = project();
    const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp"], cwd, stderr: "pipe" });
    const client = new Client({ name: "workflow-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      const tool = tools.find((t) => t.name === "ptc_workflow")!;
      expect(Object.keys(tool.inputSchema.properties!)).toEqual(["workflow", "inputs", "validate_only", "background", "label", "result_view"]);
      expect(tool.inputSchema.required).toEqual(["workflow"]);
      expect(tool.outputSchema).toBeDefined();
      const broken = EXAMPLE.replace(/^\s*result_view: full\n/m, "");
      const check = await client.callTool({ name: "ptc_workflow", arguments: { workflow: broken, validate_only: true } });
      expect(check.structuredContent).toEqual({
        valid: false,
        errors: [
          {
            code: "result_view_field_requires_full",
            node: "review",
            path: "graph.nodes[1].params.prompt",
            line: 24,
            message: 'node "review" reads nodes.inspect.output.bytes, which the compact result of read_file does not include; fix: add `result_view: full` to the params of node "inspect"',
          },
        ],
        warnings: [],
      });
      const run = await client.callTool({ name: "ptc_workflow", arguments: { workflow: EXAMPLE, inputs: { file: "notes.md" } } });
      expect(run.isError).toBeUndefined();
      expect((run.structuredContent as { status: string; outputs: { summary: { text: string } } }).outputs.summary.text).toBe(
        "Summary: 3 lines. notes.md (19 bytes): 2 non-empty lines, 1 headings, longest line 9 characters",
      );
      const refused = await client.callTool({ name: "ptc_workflow", arguments: { workflow: broken } });
      expect(refused.isError).toBe(true);
      expect((refused.content as Array<{ text: string }>)[0]!.text.split("\n")[0]).toBe("the workflow is invalid (1 problem); nothing ran:");
    } finally {
      await client.close();
    }
  });
});
