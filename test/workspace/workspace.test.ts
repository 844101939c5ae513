import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertViewSubset, invokeTool, ToolError, type Tool, type ToolContext } from "../../src/tools/index.js";
import { workspaceTools, WORKSPACE_READ_ONLY_TOOLS } from "../../src/workspace/index.js";

const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "c1", runId: "r1", depth: 0 });
let base: string;
let root: string;
let outside: string;
let ro: Tool[];
let rw: Tool[];
const tool = (set: Tool[], name: string) => set.find((t) => t.name === name)!;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "ws-"));
  root = join(base, "root");
  outside = join(base, "outside");
  mkdirSync(join(root, "src", "lib"), { recursive: true });
  mkdirSync(join(root, "node_modules", "dep"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, "src", "a.ts"), "const a = 1;\n// TODO: fix a\nexport { a };\n");
  writeFileSync(join(root, "src", "lib", "b.ts"), "// todo lower\nexport const b = 'é';\n");
  writeFileSync(join(root, "README.md"), "# Title\nTODO docs\n");
  writeFileSync(join(root, ".hidden"), "TODO hidden\n");
  writeFileSync(join(root, "node_modules", "dep", "index.js"), "TODO skipped\n");
  writeFileSync(join(root, "bin.dat"), Buffer.from([0x54, 0x4f, 0x44, 0x4f, 0, 1, 2]));
  writeFileSync(join(outside, "secret.txt"), "TODO secret\n");
  symlinkSync("/", join(root, "rootlink"));
  symlinkSync(join(outside, "secret.txt"), join(root, "secret-link.txt"));
  ro = workspaceTools({ root });
  rw = workspaceTools({ root, write: true });
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

async function call(t: Tool, input: Record<string, unknown>) {
  const r = await invokeTool(t, input, { ctx: ctx() });
  expect(JSON.parse(JSON.stringify(r.structuredContent))).toStrictEqual(r.structuredContent);
  return r;
}

async function refusal(t: Tool, input: Record<string, unknown>): Promise<ToolError> {
  try {
    await invokeTool(t, input, { ctx: ctx() });
  } catch (err) {
    return err as ToolError;
  }
  throw new Error("expected a refusal");
}

describe("workspaceTools", () => {
  it("is read-only unless write is enabled", () => {
    expect(ro.map((t) => t.name)).toStrictEqual(["read_file", "list_files", "search_files"]);
    expect(rw.map((t) => t.name)).toStrictEqual(["read_file", "list_files", "search_files", "write_file"]);
    expect(WORKSPACE_READ_ONLY_TOOLS).toStrictEqual(["read_file", "list_files", "search_files"]);
    expect(() => workspaceTools({ root: join(base, "missing") })).toThrow(`workspaceTools: "root" must be an existing directory, "${join(base, "missing")}" is not`);
  });

  it("reads a file and a line range; compact ⊆ full", async () => {
    const whole = await call(tool(ro, "read_file"), { path: "src/a.ts" });
    expect(whole.structuredContent).toStrictEqual({
      path: "src/a.ts",
      content: "const a = 1;\n// TODO: fix a\nexport { a };",
      start_line: 1,
      end_line: 3,
      total_lines: 3,
      truncated: false,
    });
    const full = await call(tool(ro, "read_file"), { path: "./src/../src/a.ts", start_line: 2, end_line: 2, result_view: "full" });
    const sc = full.structuredContent as Record<string, unknown>;
    expect([sc.content, sc.start_line, sc.end_line, sc.bytes, typeof sc.modified_at]).toStrictEqual(["// TODO: fix a", 2, 2, 42, "string"]);
    const compact = await call(tool(ro, "read_file"), { path: "src/a.ts", start_line: 2, end_line: 2 });
    assertViewSubset(compact.structuredContent, full.structuredContent);
    expect(compact.content).toStrictEqual([{ type: "text", text: "src/a.ts lines 2-2 of 3\n// TODO: fix a" }]);
  });

  it("refuses path escapes: .., absolute paths, symlinks out, NUL bytes", async () => {
    const cases: Array<[string, string]> = [
      ["../outside/secret.txt", '"path" "../outside/secret.txt" leads outside the workspace root; pass a path inside it'],
      ["/etc/passwd", '"path" must be relative to the workspace root, got the absolute path "/etc/passwd"; pass a path such as "src/index.ts"'],
      ["rootlink/etc/passwd", '"path" "rootlink/etc/passwd" goes through a symbolic link that leads outside the workspace root'],
      ["secret-link.txt", '"path" "secret-link.txt" goes through a symbolic link that leads outside the workspace root'],
      ["src/a.ts\0.png", '"path" must not contain NUL bytes'],
    ];
    for (const [path, message] of cases) {
      const err = await refusal(tool(ro, "read_file"), { path });
      expect([err.code, err.reason, err.message]).toStrictEqual(["tool_invalid_input", "path_outside_root", message]);
    }
    const w = await refusal(tool(rw, "write_file"), { path: "rootlink/tmp/x", content: "x" });
    expect(w.message).toBe('"path" "rootlink/tmp/x" goes through a symbolic link that leads outside the workspace root');
    expect((await refusal(tool(ro, "list_files"), { pattern: "../**" })).message).toBe('"pattern" "../**" must not contain ".." segments; globs match inside the workspace root only');
  });

  it("explains directories, binaries and missing files", async () => {
    expect((await refusal(tool(ro, "read_file"), { path: "src" })).message).toBe('"src" is a directory; list it with list_files({ pattern: "src/*" })');
    expect((await refusal(tool(ro, "read_file"), { path: "bin.dat" })).message).toBe('"bin.dat" is a binary file; only text files can be read');
    expect((await refusal(tool(ro, "read_file"), { path: "nope.ts" })).message).toBe('file "nope.ts" does not exist; find files with list_files');
    // A loop of links leads nowhere, and is said so (not "does not exist"), without the host's path.
    symlinkSync("loop-b", join(root, "loop-a"));
    symlinkSync("loop-a", join(root, "loop-b"));
    const loop = await refusal(tool(ro, "read_file"), { path: "loop-a" });
    expect([loop.message, loop.reason]).toStrictEqual(['"loop-a" goes through a loop of symbolic links, so it leads to no file', "symbolic_link_loop"]);
    expect((await refusal(tool(ro, "read_file"), { path: "src/a.ts", start_line: 3, end_line: 2 })).message).toBe('"end_line" (2) must be ≥ "start_line" (3)');
  });

  it("lists files by glob without following symlinks, node_modules or hidden files", async () => {
    const all = await call(tool(ro, "list_files"), {});
    expect(all.structuredContent).toStrictEqual({
      files: ["README.md", "bin.dat", "src/a.ts", "src/lib/b.ts"],
      count: 4,
      truncated: false,
    });
    const ts = await call(tool(ro, "list_files"), { pattern: "src/**/*.ts", limit: 1, result_view: "full" });
    const sc = ts.structuredContent as { files: string[]; entries: Array<{ path: string; bytes: number }> };
    expect([sc.files, sc.entries.map((e) => [e.path, e.bytes])]).toStrictEqual([["src/a.ts"], [["src/a.ts", 42]]]);
    const hidden = await call(tool(ro, "list_files"), { pattern: "*", include_hidden: true });
    expect((hidden.structuredContent as { files: string[] }).files).toContain(".hidden");
    // A pattern through a symlinked directory names nothing outside the root.
    const through = await call(tool(ro, "list_files"), { pattern: "rootlink/*" });
    expect(through.structuredContent).toStrictEqual({ files: [], count: 0, truncated: false });
  });

  it("searches with a regex and returns structured rows, never reading outside the root", async () => {
    const r = await call(tool(ro, "search_files"), { pattern: "todo", case_sensitive: false });
    expect(r.structuredContent).toStrictEqual({
      matches: [
        { path: "README.md", line: 2, text: "TODO docs" },
        { path: "src/a.ts", line: 2, text: "// TODO: fix a" },
        { path: "src/lib/b.ts", line: 1, text: "// todo lower" },
      ],
      count: 3,
      truncated: false,
      files_searched: 3,
    });
    const full = await call(tool(ro, "search_files"), { pattern: "TODO", glob: "src/**", result_view: "full" });
    expect(full.structuredContent).toStrictEqual({
      matches: [{ path: "src/a.ts", line: 2, text: "// TODO: fix a", column: 4, match: "TODO" }],
      count: 1,
      truncated: false,
      files_searched: 2,
    });
    const capped = await call(tool(ro, "search_files"), { pattern: "TODO", max_results: 1 });
    expect((capped.structuredContent as { truncated: boolean }).truncated).toBe(true);
    expect((await refusal(tool(ro, "search_files"), { pattern: "(" })).message).toBe('"pattern" is not a valid regular expression: Invalid regular expression: /(/: Unterminated group');
  });

  it("writes files only when enabled, creating directories", async () => {
    const r = await call(tool(rw, "write_file"), { path: "out/new.txt", content: "one\ntwo\n", result_view: "full" });
    expect(r.structuredContent).toStrictEqual({ path: "out/new.txt", bytes: 8, created: true, lines: 2 });
    expect(readFileSync(join(root, "out", "new.txt"), "utf8")).toBe("one\ntwo\n");
    const again = await call(tool(rw, "write_file"), { path: "out/new.txt", content: "x" });
    expect(again.structuredContent).toStrictEqual({ path: "out/new.txt", bytes: 1, created: false });
  });
});

describe("scans run off the host's event loop", () => {
  it("gives up on a catastrophically backtracking regex within its budget while the host stays responsive", async () => {
    writeFileSync(join(root, "evil.txt"), "a".repeat(40) + "!\n");
    const tools = workspaceTools({ root, scanBudgetMs: 300 });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    try {
      const started = Date.now();
      const error = await invokeTool(tool(tools, "search_files"), { pattern: "^(a+)+$", glob: "evil.txt" }, { ctx: ctx() }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect([(error as ToolError).code, (error as ToolError).reason]).toStrictEqual(["tool_failed", "scan_timeout"]);
      expect((error as ToolError).message).toBe(
        "search_files gave up after 300 ms: the pattern may backtrack catastrophically or the glob match too much; use a simpler regular expression or a narrower glob",
      );
      expect(Date.now() - started).toBeLessThan(5_000);
      // The host's own timers kept firing while the regex ran elsewhere.
      expect(ticks).toBeGreaterThan(3);
    } finally {
      clearInterval(ticker);
    }
  });

  it("stops a scan when the calling program's signal aborts", async () => {
    const controller = new AbortController();
    const tools = workspaceTools({ root, scanBudgetMs: 60_000 });
    writeFileSync(join(root, "evil2.txt"), "a".repeat(40) + "!\n");
    setTimeout(() => controller.abort(), 100);
    const error = await invokeTool(tool(tools, "search_files"), { pattern: "^(a+)+$", glob: "evil2.txt" }, { ctx: { ...ctx(), signal: controller.signal } }).catch((e: unknown) => e);
    expect((error as ToolError).code).toBe("tool_aborted");
  });

  it("rejects a bad scan budget naming the field", () => {
    expect(() => workspaceTools({ root, scanBudgetMs: 0 })).toThrow('workspaceTools: "scanBudgetMs" must be a positive integer of milliseconds, received 0');
  });
});
