// examples/workflow/, run the way its header says (from the repository root, through the built CLI).
import { describe, expect, it } from "vitest";
import { ROOT, runCli } from "../mcp/helpers.js";

const CONFIG = ["--config", "examples/workflow/codemode.json"];
const ids = (text: string) => text.replace(/\b[0-9A-HJKMNP-TV-Z]{26}\b/g, "<id>");
const SUMMARY = "Summary: 11 lines. examples/workflow/sample.md (251 bytes): 6 non-empty lines, 3 headings, longest line 70 characters";

describe("examples/workflow", () => {
  it("review.yaml validates and runs from the CLI", async () => {
    expect(await runCli(["workflow", "validate", ...CONFIG, "examples/workflow/review.yaml"], { cwd: ROOT })).toEqual({ code: 0, stdout: "examples/workflow/review.yaml: valid\n", stderr: "" });
    const run = await runCli(["workflow", "run", ...CONFIG, "examples/workflow/review.yaml"], { cwd: ROOT });
    expect({ ...run, stdout: ids(run.stdout) }).toEqual({
      code: 0,
      stdout: [
        "inspect  succeeded  read_file (full view)",
        "review   succeeded  run-agent reviewer, task <id>, in 75 · out 20 · $0.0005 · 1 turn",
        "summary  succeeded  run-agent summarizer, task <id>, 1 turn",
        "",
        "--- summary ---",
        SUMMARY,
        "",
        'workflow "review-file" succeeded (nodes: 3 succeeded); usage in 75 · out 20 · $0.0005 · 2 turns',
        "",
      ].join("\n"),
      stderr: "",
    });
  });

  it("program.js validates it (and a broken copy) and runs it from a program", async () => {
    expect(await runCli(["run", ...CONFIG, "examples/workflow/program.js"], { cwd: ROOT })).toEqual({
      code: 0,
      stdout: [
        "error: result_view_field_requires_full (line 24)",
        'node "review" reads nodes.inspect.output.bytes, which the compact result of read_file does not include; fix: add `result_view: full` to the params of node "inspect"',
        "valid: true, 0 errors, 0 warnings",
        "succeeded: inspect → review → summary",
        SUMMARY,
        // The reviewer counts a token per 4 characters of its prompt; priced at $3 / $15 per million: 75 × 3e-6 + 20 × 15e-6.
        "usage (host-counted): 2 turns, 75 input tokens, $0.000525 = review (1 turn, 75 tokens, $0.000525) + summary (1 turn, 0 tokens)",
        "",
      ].join("\n"),
      stderr: "",
    });
  });
});
