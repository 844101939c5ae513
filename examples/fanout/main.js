// The main job: fan out background subagents over this repository's own source files, wait for
// them, aggregate their reports. Offline and deterministic: the agent is a codemode program.
//
//   node bin/codemode.js run --config examples/fanout/codemode.json examples/fanout/main.js
//
// Set AGENT below to "wc-command" for the same job done by a command-line agent (main-command.js).
const AGENT = "file-stats";
const PATTERN = "src/**/*.ts";

const { files } = await tools.list_files({ pattern: PATTERN });
if (files.length === 0) throw new Error(`no files match ${PATTERN} in this directory`);

// One subagent per directory, all in the background (8 run at once; the rest queue).
const groups = new Map();
for (const path of files) {
  const dir = path.split("/").slice(0, -1).join("/") || ".";
  if (!groups.has(dir)) groups.set(dir, []);
  groups.get(dir).push(path);
}
const spawned = [];
for (const [dir, paths] of groups) {
  const handle = await tools.ptc_subagent({ agent: AGENT, task: paths.join("\n"), background: true, label: dir });
  spawned.push({ dir, id: handle.task_id });
}

// Wait for all of them in one call, without a polling loop: ptc_task_wait returns once every task
// this program spawned has ended (or, timed_out, shortly before the program's deadline).
await tools.ptc_task_wait({});
const done = new Map();
for (const { id } of spawned) done.set(id, await tools.ptc_task_output({ task_id: id }));

// Aggregate: one line per directory from its report, then the totals.
const totals = { files: 0, lines: 0, turns: 0, input_tokens: 0, cost: 0, failed: 0 };
text(`${spawned.length} background ${AGENT} subagents over ${files.length} files (${PATTERN}):`);
for (const { dir, id } of spawned) {
  const out = done.get(id);
  if (out.status !== "succeeded") {
    totals.failed++;
    text(`  ${dir}: ${out.status}`);
    continue;
  }
  const [count, lines] = out.report.summary.match(/\d+/g).map(Number);
  totals.files += count;
  totals.lines += lines;
  // Usage is the host's own count (from the driver's events), present on every finished task.
  totals.turns += out.usage.turns;
  totals.input_tokens += out.usage.input;
  totals.cost += out.usage.cost;
  text(`  ${dir}: ${out.report.summary}; ${out.report.findings[0].what}: ${out.report.findings[0].evidence}`);
}
text(`total: ${totals.files} files, ${totals.lines} lines, ${totals.failed} failed`);
text(`usage (host-counted): ${totals.turns} turns, ${totals.input_tokens} input tokens, $${totals.cost.toFixed(4)}`);
