// Every example in examples/ is run the way its header says, through the built CLI.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readdirSync } from "node:fs";
import { spawn } from "node:child_process";
import { ROOT, runCli, sourceTree } from "../mcp/helpers.js";

const FANOUT_CONFIG = join(ROOT, "examples", "fanout", "codemode.json");

describe("examples", () => {
  it("approvals: the run stops before the production deploy, resumes with the decision, and the calls before it ran once", async () => {
    const host = join(ROOT, "examples", "approvals", "host.mjs");
    const run = (answer: string) =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = spawn(process.execPath, [host, answer], { cwd: ROOT });
        let stdout = "";
        child.stdout.on("data", (chunk: Buffer) => (stdout += chunk));
        child.on("close", (code) => resolve({ code, stdout }));
      });
    const waiting = `first run: interrupted; waiting: call_3 tools.deploy({"version":"web-1.4.2","env":"production"})`;
    expect(await run("allow")).toStrictEqual({
      code: 0,
      stdout: [
        waiting,
        "resumed (allow): ok",
        "staging: https://staging.example/web-1.4.2",
        "production: https://production.example/web-1.4.2",
        "the host ran: release web; deploy web-1.4.2 to staging (2); deploy web-1.4.2 to production (3)",
        "",
      ].join("\n"),
    });
    expect(await run("deny")).toStrictEqual({
      code: 0,
      stdout: [
        waiting,
        "resumed (deny): ok",
        "staging: https://staging.example/web-1.4.2",
        "production not deployed: approval_denied",
        "the host ran: release web; deploy web-1.4.2 to staging (2)",
        "",
      ].join("\n"),
    });
  });

  it("(c) mcp-upstream: a program uses an upstream MCP server's tools", async () => {
    const cwd = join(ROOT, "examples", "mcp-upstream");
    expect(await runCli(["run", "program.js"], { cwd })).toEqual({
      code: 0,
      stdout: ["notes server: 4 notes", "- Sandbox limits [runtime, limits]: 26 words", "- Subagents [tasks, runtime]: 15 words", 'tool_failed: no note "n99"; ids are n1, n2, n3, n4', ""].join("\n"),
      stderr: "",
    });
    const json = JSON.parse((await runCli(["run", "program.js", "--json"], { cwd })).stdout);
    expect(json.structuredContent).toMatchObject({ status: "ok", tool_calls: 5 });
    expect(Object.hasOwn(json.structuredContent, "value")).toBe(false);
    expect(json.details.calls.map((call: { tool: string; status: string }) => `${call.tool}:${call.status}`).sort()).toEqual([
      "notes.get_note:error",
      "notes.get_note:ok",
      "notes.get_note:ok",
      "notes.search_notes:ok",
      "notes.server_info:ok",
    ]);
  });

  it("(a) fanout/main.js: background script subagents over a source tree, waited for in one call and aggregated", async () => {
    const cwd = sourceTree();
    const result = await runCli(["run", "--config", FANOUT_CONFIG, join(ROOT, "examples", "fanout", "main.js")], { cwd });
    expect(result).toEqual({
      code: 0,
      stdout: [
        "2 background file-stats subagents over 3 files (src/**/*.ts):",
        "  src/a: 2 files, 3 lines, 2 exports; largest file: src/a/x.ts (2 lines)",
        "  src/b: 1 file, 3 lines, 0 exports; largest file: src/b/z.ts (3 lines)",
        "total: 3 files, 6 lines, 0 failed",
        "usage (host-counted): 2 turns, 0 input tokens, $0.0000",
        "",
      ].join("\n"),
      stderr: "",
    });
    // No polling: the receipt holds one list, two spawns, one wait and one read per task.
    const json = JSON.parse((await runCli(["run", "--config", FANOUT_CONFIG, join(ROOT, "examples", "fanout", "main.js"), "--json"], { cwd })).stdout);
    expect(json.details.calls.map((call: { tool: string; status: string }) => `${call.tool}:${call.status}`)).toStrictEqual([
      "list_files:ok",
      "ptc_subagent:ok",
      "ptc_subagent:ok",
      "ptc_task_wait:ok",
      "ptc_task_output:ok",
      "ptc_task_output:ok",
    ]);
  });

  it("(b) fanout/main-command.js: the same with a command-line agent; the host counts and prices its usage events", async () => {
    const result = await runCli(["run", "--config", FANOUT_CONFIG, join(ROOT, "examples", "fanout", "main-command.js")], { cwd: sourceTree() });
    expect(result).toEqual({
      code: 0,
      stdout: [
        "2 background wc-command subagents over 3 files (src/**/*.ts):",
        "  src/a: 2 files, 3 lines; largest file: src/a/x.ts (2 lines)",
        "  src/b: 1 file, 3 lines; largest file: src/b/z.ts (3 lines)",
        "total: 3 files, 6 lines, 0 failed",
        // input tokens: ceil(bytes / 4) per file (33, 23 and 15 bytes) = 9 + 6 + 4; 10 output tokens per file;
        // priced by the agent's prices ($3 / $15 per million): 19 × 3e-6 + 30 × 15e-6 ≈ $0.0005.
        "usage (host-counted): 2 turns, 19 input tokens, $0.0005",
        "",
      ].join("\n"),
      stderr: "",
    });
  });

  it("(a) on this repository itself (the README's main job): every directory of src/ succeeds", async () => {
    const result = await runCli(["run", "--config", "examples/fanout/codemode.json", "examples/fanout/main.js", "--json"], { cwd: ROOT });
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout);
    const dirs = readdirSync(join(ROOT, "src"), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile() && entry.name.endsWith(".ts"));
    expect(out.content[0].text).toContain(`total: ${dirs.length} files, `);
    expect(out.content[0].text).toMatch(/ lines, 0 failed\n/);
  });
});
