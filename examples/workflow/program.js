// The review workflow run from a program: validated first (a broken copy shows what validation
// says), then run in the foreground, which returns every node's output and the agents' usage.
//
//   node bin/codemode.js run --config examples/workflow/codemode.json examples/workflow/program.js
const { content: workflow } = await tools.read_file({ path: "examples/workflow/review.yaml" });

// Without `result_view: full` on inspect, the reference to its bytes cannot be satisfied.
const broken = workflow.replace(/^\s*result_view: full\n/m, "");
const check = await tools.ptc_workflow({ workflow: broken, validate_only: true });
for (const error of check.errors) text(`error: ${error.code} (line ${error.line})\n${error.message}`);

const valid = await tools.ptc_workflow({ workflow, validate_only: true });
text(`valid: ${valid.valid}, ${valid.errors.length} errors, ${valid.warnings.length} warnings`);

const run = await tools.ptc_workflow({ workflow, inputs: { file: "examples/workflow/sample.md" } });
text(`${run.status}: ${Object.keys(run.outputs).join(" → ")}`);
text(run.outputs.summary.text);
const [review, summary] = [run.outputs.review.usage, run.outputs.summary.usage];
text(
  `usage (host-counted): ${run.usage.turns} turns, ${run.usage.input} input tokens, $${run.usage.cost.toFixed(6)} = review (${review.turns} turn, ${review.input} tokens, $${review.cost.toFixed(6)}) + summary (${summary.turns} turn, ${summary.input} tokens)`,
);
