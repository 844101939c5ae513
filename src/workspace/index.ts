import { closeSync } from "node:fs";
import { z } from "zod";
import { defineTool, ToolError, type Tool } from "../tools/index.js";
import { checkGlob, openForRead, realRoot, resolveConfinement, writeConfined, type Confinement } from "./paths.js";
import { readLineRange, readLineRangeNow, readsAtOnce, type LineRange } from "./read.js";
import { runScan } from "./scan-runner.js";

export interface WorkspaceOptions {
  /** The directory the tools are confined to. */
  root: string;
  /** Adds `write_file`. Off by default: the toolset is read-only. */
  write?: boolean;
  /** Longest a list_files or search_files scan may run (default 10 s); it runs off the host's event loop. */
  scanBudgetMs?: number;
  /**
   * The runtime's own state, wherever it is (data dirs: sessions, task logs, spilled output): never
   * read, listed, searched or written. createCodemode adds its data dir to the workspace tools it is given.
   */
  hide?: readonly string[];
  /**
   * The runtime's own configuration (config files, agent dirs): never written. `.git`, `.codemode`
   * and `codemode.json` are never written wherever they are, listed here or not.
   */
  protect?: readonly string[];
}

/** Names of the tools that never change anything (what a read-only agent may reach). */
export const WORKSPACE_READ_ONLY_TOOLS: readonly string[] = ["read_file", "list_files", "search_files"];

const READ_MAX_BYTES = 50 * 1024;
const READ_MAX_LINES = 2000;
const DEFAULT_SCAN_BUDGET_MS = 10_000;

/** The confinement each workspace tool was made with, so the runtime can add its own files to it later. */
const confinements = new WeakMap<Tool, { hidden: string[]; protected: string[] }>();

/**
 * Tells workspace tools (others are left alone) about more of the runtime's own files: `hide` is
 * never reached by any of them, `protect` never written. createCodemode calls it with its data dir
 * and agent dirs for the workspace tools it is given.
 */
export function keepRuntimeFilesOut(tools: readonly Tool[], files: { hide?: readonly string[]; protect?: readonly string[] }): void {
  for (const tool of tools) {
    const confinement = confinements.get(tool);
    if (!confinement) continue;
    confinement.hidden.push(...(files.hide ?? []));
    confinement.protected.push(...(files.protect ?? []));
  }
}

function pathList(field: "hide" | "protect", value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((p) => typeof p !== "string" || p === "")) {
    throw new TypeError(`workspaceTools: "${field}" must be an array of path strings`);
  }
  return [...value];
}

export function workspaceTools(options: WorkspaceOptions): Tool[] {
  if (options === null || typeof options !== "object") throw new TypeError(`workspaceTools: options must be an object { root, write? }`);
  if (options.write !== undefined && typeof options.write !== "boolean") throw new TypeError(`workspaceTools: "write" must be a boolean, received ${typeof options.write}`);
  const root = realRoot(options.root);
  const scanBudgetMs = options.scanBudgetMs ?? DEFAULT_SCAN_BUDGET_MS;
  if (!Number.isInteger(scanBudgetMs) || scanBudgetMs < 1) throw new TypeError(`workspaceTools: "scanBudgetMs" must be a positive integer of milliseconds, received ${String(options.scanBudgetMs)}`);
  const own = { hidden: pathList("hide", options.hide), protected: pathList("protect", options.protect) };
  // Resolved on every call: the runtime's dirs may be created (or added) after the tools are.
  const confinement = (forWrite = false): Confinement => resolveConfinement({ root, hidden: own.hidden, protected: own.protected }, forWrite);

  const readCompact = z.object({
    path: z.string(),
    content: z.string().describe("The lines start_line..end_line, joined with \\n"),
    start_line: z.number().int(),
    end_line: z.number().int(),
    total_lines: z.number().int(),
    truncated: z.boolean().describe("true when the range was cut at 2,000 lines / 50 KB (a single line longer than 50 KB comes back cut to its first 50 KB); read on from end_line + 1"),
  });
  const readFile = defineTool({
    name: "read_file",
    title: "Read a file",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    description: "Read a text file in the workspace, optionally a range of lines (1-based, inclusive).",
    input: z.object({
      path: z.string().describe("Path relative to the workspace root"),
      start_line: z.number().int().min(1).optional(),
      end_line: z.number().int().min(1).optional(),
    }),
    views: { compact: readCompact, full: readCompact.extend({ bytes: z.number().int(), modified_at: z.string() }) },
    execute: ({ path, start_line, end_line }, ctx) => {
      const start = start_line ?? 1;
      if (end_line !== undefined && end_line < start) {
        throw new ToolError("tool_invalid_input", `"end_line" (${end_line}) must be ≥ "start_line" (${start})`, { reason: "schema_invalid" });
      }
      const { fd, stat, rel } = openForRead(confinement(), path);
      const range = { size: stat.size, start, ...(end_line === undefined ? {} : { end: end_line }), maxLines: READ_MAX_LINES, maxBytes: READ_MAX_BYTES };
      const answer = (read: LineRange) => {
        if (read.binary) throw new ToolError("tool_failed", `"${rel}" is a binary file; only text files can be read`, { reason: "binary_file" });
        if (start > Math.max(read.totalLines, 1)) {
          throw new ToolError("tool_invalid_input", `"start_line" ${start} is past the end of "${rel}" (${read.totalLines} lines)`, { reason: "schema_invalid" });
        }
        return {
          path: rel,
          content: read.lines.join("\n"),
          start_line: start,
          end_line: start + read.lines.length - 1,
          total_lines: read.totalLines,
          truncated: read.truncated,
          bytes: stat.size,
          modified_at: stat.mtime.toISOString(),
        };
      };
      if (readsAtOnce(stat.size)) {
        try {
          return answer(readLineRangeNow(fd, range));
        } finally {
          closeSync(fd);
        }
      }
      const onAbort = (): never => {
        throw new ToolError("tool_aborted", `read_file of "${rel}" was cancelled (the program ended or its deadline passed)`);
      };
      return readLineRange(fd, { ...range, signal: ctx.signal, onAbort }).then(
        (read) => {
          closeSync(fd);
          return answer(read);
        },
        (error: unknown) => {
          closeSync(fd);
          throw error;
        },
      );
    },
    toModelOutput: (r) => `${r.path} lines ${r.start_line}-${r.end_line} of ${r.total_lines}${r.truncated ? ` (cut; read on with start_line ${r.end_line + 1})` : ""}\n${r.content}`,
  });

  const listCompact = z.object({
    files: z.array(z.string()).describe("Paths relative to the root, sorted"),
    count: z.number().int(),
    truncated: z.boolean().describe("true when more files matched than limit"),
  });
  const listFiles = defineTool({
    name: "list_files",
    title: "List files",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    description: "List files in the workspace matching a glob (default all files; node_modules and .git are skipped).",
    input: z.object({
      pattern: z.string().min(1).optional().describe('Glob relative to the root, e.g. "src/**/*.ts" (default "**/*")'),
      limit: z.number().int().min(1).max(10_000).optional().describe("Most files returned (default 1000)"),
      include_hidden: z.boolean().optional().describe("Match dot files and directories too"),
    }),
    views: {
      compact: listCompact,
      full: listCompact.extend({ entries: z.array(z.object({ path: z.string(), bytes: z.number().int(), modified_at: z.string() })) }),
    },
    execute: async ({ pattern = "**/*", limit = 1000, include_hidden = false }, ctx) => {
      checkGlob(pattern, "pattern");
      return runScan({ op: "list", root, hidden: confinement().hidden, pattern, limit, includeHidden: include_hidden }, scanBudgetMs, ctx.signal);
    },
    toModelOutput: (r) => `${r.count} file${r.count === 1 ? "" : "s"}${r.truncated ? " (more matched; narrow the pattern or raise limit)" : ""}\n${r.files.join("\n")}`,
  });

  const matchRow = z.object({ path: z.string(), line: z.number().int(), text: z.string() });
  const searchCompact = z.object({
    matches: z.array(matchRow).describe("One row per matching line (text cut at 300 characters)"),
    count: z.number().int(),
    truncated: z.boolean().describe("true when max_results was reached"),
    files_searched: z.number().int(),
  });
  const searchFiles = defineTool({
    name: "search_files",
    title: "Search files",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    description: "Search text files in the workspace for a regular expression; returns matching lines as rows.",
    input: z.object({
      pattern: z.string().min(1).describe('JavaScript regular expression source, e.g. "TODO|FIXME"'),
      glob: z.string().min(1).optional().describe('Which files to search (default "**/*")'),
      case_sensitive: z.boolean().optional().describe("Default true"),
      max_results: z.number().int().min(1).max(5000).optional().describe("Default 200"),
    }),
    views: {
      compact: searchCompact,
      full: searchCompact.extend({ matches: z.array(matchRow.extend({ column: z.number().int(), match: z.string() })) }),
    },
    execute: async ({ pattern, glob: fileGlob = "**/*", case_sensitive = true, max_results = 200 }, ctx) => {
      const flags = case_sensitive ? "" : "i";
      try {
        new RegExp(pattern, flags);
      } catch (err) {
        throw new ToolError("tool_invalid_input", `"pattern" is not a valid regular expression: ${(err as Error).message}`, { reason: "schema_invalid" });
      }
      checkGlob(fileGlob, "glob");
      return runScan({ op: "search", root, hidden: confinement().hidden, pattern, flags, glob: fileGlob, maxResults: max_results }, scanBudgetMs, ctx.signal);
    },
    toModelOutput: (r) =>
      `${r.count} match${r.count === 1 ? "" : "es"} in ${r.files_searched} files searched${r.truncated ? " (max_results reached)" : ""}\n` +
      r.matches.map((m) => `${m.path}:${m.line}: ${m.text}`).join("\n"),
  });

  const tools: Tool[] = [readFile, listFiles, searchFiles];
  if (options.write) {
    const writeCompact = z.object({ path: z.string(), bytes: z.number().int(), created: z.boolean() });
    tools.push(
      defineTool({
        name: "write_file",
        title: "Write a file",
        // Replaces the file's content; writing the same content again changes nothing more.
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
        description: "Write a text file in the workspace (creating parent directories), replacing its content.",
        input: z.object({ path: z.string().describe("Path relative to the workspace root"), content: z.string() }),
        views: { compact: writeCompact, full: writeCompact.extend({ lines: z.number().int() }) },
        execute: ({ path, content }) => {
          const { rel, created } = writeConfined(confinement(true), path, Buffer.from(content));
          return { path: rel, bytes: Buffer.byteLength(content), created, lines: content.length === 0 ? 0 : content.replace(/\n$/, "").split("\n").length };
        },
        toModelOutput: (r) => `${r.created ? "created" : "wrote"} ${r.path} (${r.bytes} bytes)`,
      }),
    );
  }
  for (const tool of tools) confinements.set(tool, own);
  return tools;
}
