import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync, type Stats } from "node:fs";
import { dirname } from "node:path";
import { z } from "zod";
import { defineTool, ToolError, type Tool } from "../tools/index.js";
import { checkGlob, confine, realRoot } from "./paths.js";
import { isBinary } from "./scan.js";
import { runScan } from "./scan-runner.js";

export interface WorkspaceOptions {
  /** The directory the tools are confined to. */
  root: string;
  /** Adds `write_file`. Off by default: the toolset is read-only. */
  write?: boolean;
  /** Longest a list_files or search_files scan may run (default 10 s); it runs off the host's event loop. */
  scanBudgetMs?: number;
}

/** Names of the tools that never change anything (what a read-only agent may reach). */
export const WORKSPACE_READ_ONLY_TOOLS: readonly string[] = ["read_file", "list_files", "search_files"];

const READ_MAX_BYTES = 50 * 1024;
const READ_MAX_LINES = 2000;
const DEFAULT_SCAN_BUDGET_MS = 10_000;

function statOrThrow(abs: string, rel: string): Stats {
  try {
    return statSync(abs);
  } catch {
    throw new ToolError("tool_failed", `file "${rel}" does not exist; find files with list_files`, { reason: "not_found" });
  }
}

function readText(abs: string, rel: string): string {
  const st = statOrThrow(abs, rel);
  if (st.isDirectory()) throw new ToolError("tool_failed", `"${rel}" is a directory; list it with list_files({ pattern: "${rel}/*" })`, { reason: "is_directory" });
  const buf = readFileSync(abs);
  if (isBinary(buf)) throw new ToolError("tool_failed", `"${rel}" is a binary file; only text files can be read`, { reason: "binary_file" });
  return buf.toString("utf8");
}

export function workspaceTools(options: WorkspaceOptions): Tool[] {
  if (options === null || typeof options !== "object") throw new TypeError(`workspaceTools: options must be an object { root, write? }`);
  if (options.write !== undefined && typeof options.write !== "boolean") throw new TypeError(`workspaceTools: "write" must be a boolean, received ${typeof options.write}`);
  const root = realRoot(options.root);
  const scanBudgetMs = options.scanBudgetMs ?? DEFAULT_SCAN_BUDGET_MS;
  if (!Number.isInteger(scanBudgetMs) || scanBudgetMs < 1) throw new TypeError(`workspaceTools: "scanBudgetMs" must be a positive integer of milliseconds, received ${String(options.scanBudgetMs)}`);

  const readCompact = z.object({
    path: z.string(),
    content: z.string().describe("The lines start_line..end_line, joined with \\n"),
    start_line: z.number().int(),
    end_line: z.number().int(),
    total_lines: z.number().int(),
    truncated: z.boolean().describe("true when the range was cut at 2,000 lines / 50 KB; read on from end_line + 1"),
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
    execute: ({ path, start_line, end_line }) => {
      const { abs, rel } = confine(root, path);
      const text = readText(abs, rel);
      const lines = text.length === 0 ? [] : text.replace(/\n$/, "").split("\n");
      const start = start_line ?? 1;
      if (end_line !== undefined && end_line < start) {
        throw new ToolError("tool_invalid_input", `"end_line" (${end_line}) must be ≥ "start_line" (${start})`, { reason: "schema_invalid" });
      }
      if (start > Math.max(lines.length, 1)) {
        throw new ToolError("tool_invalid_input", `"start_line" ${start} is past the end of "${rel}" (${lines.length} lines)`, { reason: "schema_invalid" });
      }
      const want = Math.min(end_line ?? lines.length, lines.length);
      const picked: string[] = [];
      let bytes = 0;
      let truncated = false;
      for (let i = start - 1; i < want; i++) {
        const line = lines[i]!;
        bytes += Buffer.byteLength(line) + 1;
        if (picked.length >= READ_MAX_LINES || bytes > READ_MAX_BYTES) {
          truncated = true;
          break;
        }
        picked.push(line);
      }
      const st = statSync(abs);
      return {
        path: rel,
        content: picked.join("\n"),
        start_line: start,
        end_line: start + picked.length - 1,
        total_lines: lines.length,
        truncated,
        bytes: st.size,
        modified_at: st.mtime.toISOString(),
      };
    },
    toModelOutput: (r) =>
      `${r.path} lines ${r.start_line}-${r.end_line} of ${r.total_lines}${r.truncated ? ` (cut; read on with start_line ${r.end_line + 1})` : ""}\n${r.content}`,
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
      return runScan({ op: "list", root, pattern, limit, includeHidden: include_hidden }, scanBudgetMs, ctx.signal);
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
      pattern: z.string().min(1).describe("JavaScript regular expression source, e.g. \"TODO|FIXME\""),
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
      return runScan({ op: "search", root, pattern, flags, glob: fileGlob, maxResults: max_results }, scanBudgetMs, ctx.signal);
    },
    toModelOutput: (r) =>
      `${r.count} match${r.count === 1 ? "" : "es"} in ${r.files_searched} files searched${r.truncated ? " (max_results reached)" : ""}\n` +
      r.matches.map((m) => `${m.path}:${m.line}: ${m.text}`).join("\n"),
  });

  const tools = [readFile, listFiles, searchFiles];
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
          const { abs, rel } = confine(root, path);
          if (existsSync(abs) && statSync(abs).isDirectory()) {
            throw new ToolError("tool_failed", `"${rel}" is a directory; give a file path`, { reason: "is_directory" });
          }
          const created = !existsSync(abs);
          mkdirSync(dirname(abs), { recursive: true });
          writeFileSync(abs, content);
          return { path: rel, bytes: Buffer.byteLength(content), created, lines: content.length === 0 ? 0 : content.replace(/\n$/, "").split("\n").length };
        },
        toModelOutput: (r) => `${r.created ? "created" : "wrote"} ${r.path} (${r.bytes} bytes)`,
      }),
    );
  }
  return tools;
}
