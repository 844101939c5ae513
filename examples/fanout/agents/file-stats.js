// The file-stats agent: the global `task` is a list of paths, one per line.
const paths = task
  .split("\n")
  .map((line) => line.trim())
  .filter(Boolean);
let lines = 0;
let exports = 0;
let largest = { path: "", lines: -1 };
for (const path of paths) {
  const file = await tools.read_file({ path });
  lines += file.total_lines;
  exports += file.content.split("\n").filter((line) => /^export\s/.test(line)).length;
  if (file.total_lines > largest.lines) largest = { path, lines: file.total_lines };
  text(`${path}: ${file.total_lines} lines`);
}
const report = {
  summary: `${paths.length} file${paths.length === 1 ? "" : "s"}, ${lines} lines, ${exports} exports`,
  findings: [{ what: "largest file", evidence: `${largest.path} (${largest.lines} lines)` }],
  files_touched: [],
};
text("```json\n" + JSON.stringify(report) + "\n```");
