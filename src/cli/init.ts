// `codemode init`: a starter codemode.json and a sample script agent, never overwriting a file
// unless --force says so, and never writing through a symbolic link (a checkout may carry one
// named like a starter file, pointing at a file outside it).
import { closeSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { createExclusive, makeDirsNoFollow, replaceFileAtomic, UnsafeFileError, writeAll } from "../safe-fs.js";
import { commandHelp, HELP_FLAG, parseArgs, usageFlags, UsageError, type FlagTable } from "./args.js";
import { CONFIG_FILE } from "./config.js";
import { CONFIG_SCHEMA_URL } from "./config-schema.js";
import { EXIT_FAILED, EXIT_OK, write, type Io } from "./io.js";

const INIT_FLAGS = {
  force: { type: "boolean", short: "f", description: "overwrite the starter files that exist (never through a symbolic link)" },
  help: HELP_FLAG,
} satisfies FlagTable;

export const INIT_HELP = commandHelp({
  usage: `codemode init ${usageFlags(INIT_FLAGS)}`,
  about: `Writes a starter ./codemode.json, a sample script agent in .codemode/agents/, a sample program
(hello.js) and .codemode/.gitignore. The configuration and the agents are meant to be committed;
the state the runtime keeps (task records and logs, sessions) goes to .codemode/state/, which the
.gitignore leaves out. Existing files are left alone unless --force is given.`,
  flags: INIT_FLAGS,
});

export const STARTER_CONFIG = {
  $schema: CONFIG_SCHEMA_URL,
  limits: { timeoutMs: 30000 },
  dataDir: ".codemode/state",
  agentsDir: ".codemode/agents",
  workspace: { write: false },
  mcpServers: {},
};

const SAMPLE_AGENT = `---
name: line-counter
description: Counts the lines of the files matching a glob pattern (the task text) and reports the longest.
driver: script
script: line-counter.js
tools: [list_files, read_file]
read_only: true
---
A deterministic, offline agent: a codemode program that gets the task text as the global \`task\`.
`;

const SAMPLE_SCRIPT = `// The script of the line-counter agent: the task text is a glob pattern.
const { files } = await tools.list_files({ pattern: task.trim() || "**/*.md" });
const counts = [];
for (const path of files.slice(0, 50)) {
  const file = await tools.read_file({ path });
  counts.push({ path, lines: file.total_lines });
}
counts.sort((a, b) => b.lines - a.lines);
const total = counts.reduce((sum, c) => sum + c.lines, 0);
text(\`\${counts.length} file\${counts.length === 1 ? "" : "s"}, \${total} lines\`);
for (const c of counts.slice(0, 5)) text(\`\${c.lines}\\t\${c.path}\`);
`;

/** What git keeps out of .codemode/: the runtime's state; the agents beside it are the project's. */
const GITIGNORE = `# codemode's state: task records and logs, sessions (see dataDir in codemode.json)
state/
`;

const SAMPLE_PROGRAM = `// Run with: codemode run hello.js
const { files } = await tools.list_files({ pattern: "*" });
text(\`This directory has \${files.length} files at its top level.\`);
`;

export async function initCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode init", argv, INIT_FLAGS);
  if (flags.help) {
    await write(io.stdout, INIT_HELP);
    return EXIT_OK;
  }
  if (positionals.length > 0) throw new UsageError(`codemode init: takes no arguments, got ${positionals.join(" ")}; it writes into the current directory`);
  const files: Array<[string[], string]> = [
    [[CONFIG_FILE], JSON.stringify(STARTER_CONFIG, null, 2) + "\n"],
    [[".codemode", "agents", "line-counter.md"], SAMPLE_AGENT],
    [[".codemode", "agents", "line-counter.js"], SAMPLE_SCRIPT],
    [[".codemode", ".gitignore"], GITIGNORE],
    [["hello.js"], SAMPLE_PROGRAM],
  ];
  const report: string[] = [];
  let refused = 0;
  for (const [parts, text] of files) {
    const shown = parts.join("/");
    let dir: string;
    try {
      dir = makeDirsNoFollow(io.cwd, parts.slice(0, -1));
    } catch (error) {
      if (!(error instanceof UnsafeFileError)) throw error;
      refused++;
      report.push(`refused ${shown} (${error.message})`);
      continue;
    }
    const abs = join(dir, parts[parts.length - 1]!);
    const existing = lstatSync(abs, { throwIfNoEntry: false });
    if (existing?.isSymbolicLink()) {
      refused++;
      report.push(`refused ${shown} (a symbolic link; init does not write through links — remove it and run init again)`);
      continue;
    }
    if (existing && !flags.force) {
      report.push(`kept    ${shown} (exists; --force overwrites it)`);
      continue;
    }
    if (existing) replaceFileAtomic(abs, text, 0o666);
    else {
      const fd = createExclusive(abs, 0o666);
      try {
        writeAll(fd, Buffer.from(text));
      } finally {
        closeSync(fd);
      }
    }
    report.push(`wrote   ${shown}`);
  }
  report.push("", refused > 0 ? `${refused} file${refused === 1 ? " was" : "s were"} not written; remove what is in the way and run codemode init again` : "Next: codemode run hello.js");
  await write(io.stdout, report.join("\n") + "\n");
  return refused > 0 ? EXIT_FAILED : EXIT_OK;
}
