// The work behind list_files and search_files: globbing the tree and matching a model's regular
// expression line by line. Both can take unbounded time on hostile input (a backtracking regex, a
// pathological glob), so they never run on the host's event loop: see scan-runner.ts.
import { closeSync, statSync } from "node:fs";
import { join } from "node:path";
import { readAt } from "../safe-fs.js";
import { openForRead, reachable, type Confinement } from "./paths.js";
import { BINARY_SNIFF_BYTES } from "./read.js";

export const SEARCH_MAX_FILE_BYTES = 1024 * 1024;
const SEARCH_LINE_CHARS = 300;
const IGNORED = ["**/node_modules/**", "**/.git/**"];

export interface ListRequest {
  op: "list";
  root: string;
  /** The runtime's own state, resolved: never listed. */
  hidden: readonly string[];
  pattern: string;
  limit: number;
  includeHidden: boolean;
}

export interface SearchRequest {
  op: "search";
  root: string;
  /** The runtime's own state, resolved: never searched. */
  hidden: readonly string[];
  pattern: string;
  flags: string;
  glob: string;
  maxResults: number;
}

export type ScanRequest = ListRequest | SearchRequest;

// Type aliases, not interfaces: tool records must be assignable to Record<string, unknown>.
export type ListResult = {
  files: string[];
  count: number;
  truncated: boolean;
  entries: Array<{ path: string; bytes: number; modified_at: string }>;
};

export type SearchResult = {
  matches: Array<{ path: string; line: number; text: string; column: number; match: string }>;
  count: number;
  truncated: boolean;
  files_searched: number;
};

export function isBinary(buf: Buffer): boolean {
  return buf.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

const confinementOf = (request: ScanRequest): Confinement => ({ root: request.root, hidden: request.hidden, protected: [] });

function cutLine(text: string): string {
  return text.length > SEARCH_LINE_CHARS ? text.slice(0, SEARCH_LINE_CHARS) + "…" : text;
}

// Scans run in their own worker; importing this module for isBinary must not load the globber.
const loadGlob = async () => (await import("tinyglobby")).glob;

export async function listFiles(request: ListRequest): Promise<ListResult> {
  const { root, pattern, limit, includeHidden } = request;
  const confinement = confinementOf(request);
  const glob = await loadGlob();
  // A pattern can name a path through a symlinked directory; what lies outside the root, or in the
  // runtime's own data dir, is not listed.
  const found = (await glob(pattern, { cwd: root, dot: includeHidden, onlyFiles: true, followSymbolicLinks: false, ignore: IGNORED }))
    .filter((file) => reachable(confinement, join(root, file)))
    .sort();
  const files = found.slice(0, limit);
  return {
    files,
    count: files.length,
    truncated: found.length > limit,
    entries: files.map((f) => {
      const st = statSync(join(root, f), { throwIfNoEntry: false });
      return { path: f, bytes: st?.size ?? 0, modified_at: st ? st.mtime.toISOString() : new Date(0).toISOString() };
    }),
  };
}

export async function searchFiles(request: SearchRequest): Promise<SearchResult> {
  const { root, maxResults } = request;
  const confinement = confinementOf(request);
  const re = new RegExp(request.pattern, request.flags);
  const glob = await loadGlob();
  const files = (await glob(request.glob, { cwd: root, onlyFiles: true, followSymbolicLinks: false, ignore: IGNORED })).sort();
  const matches: SearchResult["matches"] = [];
  let searched = 0;
  let truncated = false;
  outer: for (const rel of files) {
    // The same open as read_file's: inside the root (checked on the descriptor), never the data
    // dir, never a FIFO or device (a blocked read would outlive this worker's termination).
    let opened: ReturnType<typeof openForRead>;
    try {
      opened = openForRead(confinement, rel);
    } catch {
      continue;
    }
    let buf: Buffer;
    try {
      if (opened.stat.size > SEARCH_MAX_FILE_BYTES) continue;
      buf = readAt(opened.fd, 0, SEARCH_MAX_FILE_BYTES);
    } finally {
      closeSync(opened.fd);
    }
    if (isBinary(buf)) continue;
    searched++;
    const lines = buf.toString("utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      const m = re.exec(lines[i]!);
      if (!m) continue;
      if (matches.length >= maxResults) {
        truncated = true;
        break outer;
      }
      matches.push({ path: rel, line: i + 1, text: cutLine(lines[i]!.replace(/\r$/, "")), column: m.index + 1, match: cutLine(m[0]) });
    }
  }
  return { matches, count: matches.length, truncated, files_searched: searched };
}

export function scan(request: ScanRequest): Promise<ListResult | SearchResult> {
  return request.op === "list" ? listFiles(request) : searchFiles(request);
}
