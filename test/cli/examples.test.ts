// Every example in examples/ is run the way its header says, through the built CLI.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli } from "../mcp/helpers.js";

describe("examples", () => {
  it("(c) mcp-upstream: a program uses an upstream MCP server's tools", async () => {
    const cwd = join(ROOT, "examples", "mcp-upstream");
    expect(await runCli(["run", "program.js"], { cwd })).toEqual({
      code: 0,
      stdout: [
        "notes server: 4 notes",
        "- Sandbox limits [runtime, limits]: 26 words",
        "- Subagents [tasks, runtime]: 15 words",
        'tool_failed: no note "n99"; ids are n1, n2, n3, n4',
        "",
      ].join("\n"),
      stderr: "",
    });
    const json = JSON.parse((await runCli(["run", "program.js", "--json"], { cwd })).stdout);
    expect(json.structuredContent).toMatchObject({ status: "ok", value: { runtime_notes: 2 }, tool_calls: 5 });
    expect(json.details.calls.map((call: { tool: string; status: string }) => `${call.tool}:${call.status}`).sort()).toEqual([
      "notes.get_note:error",
      "notes.get_note:ok",
      "notes.get_note:ok",
      "notes.search_notes:ok",
      "notes.server_info:ok",
    ]);
  });
});
