// Issue 10, workspace tools: a hostile checkout (dangling links, FIFOs, devices, huge files), a
// program in write mode, and a concurrent writer racing the checks. Each case is reproduced for
// real (mkfifo, mknod, a flipping process) and shows the next call still works.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, linkSync, openSync, closeSync, ftruncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, invokeTool, type ToolError, type Tool, type ToolContext } from "../../src/index.js";
import { workspaceTools } from "../../src/workspace/index.js";

const isRoot = process.getuid?.() === 0;
const ctx = (signal = new AbortController().signal): ToolContext => ({ signal, callId: "c", runId: "r", depth: 0 });
const tool = (set: Tool[], name: string) => set.find((t) => t.name === name)!;
const base = mkdtempSync(join(tmpdir(), "ws-hostile-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

let n = 0;
/** A fresh workspace root with an "outside" sibling holding a secret. */
function project(): { root: string; outside: string } {
  const dir = join(base, `p${n++}`);
  const root = join(dir, "root");
  const outside = join(dir, "outside");
  mkdirSync(root, { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "SECRET outside the root\n");
  writeFileSync(join(root, "ok.txt"), "fine\n");
  return { root, outside };
}

async function outcome(t: Tool, input: Record<string, unknown>, signal?: AbortSignal): Promise<{ ok: unknown } | { code: string; reason?: string; message: string }> {
  try {
    return { ok: (await invokeTool(t, input, { ctx: ctx(signal) })).structuredContent };
  } catch (error) {
    const e = error as ToolError;
    return e.reason === undefined ? { code: e.code, message: e.message } : { code: e.code, reason: e.reason, message: e.message };
  }
}

describe("finding 1: write_file never writes through a symbolic link", () => {
  it("a dangling link to a file outside the root is refused, nothing is created outside, and the next write works", async () => {
    const { root, outside } = project();
    symlinkSync("../outside/planted.txt", join(root, "NOTES.md"));
    const rw = workspaceTools({ root, write: true });
    expect(await outcome(tool(rw, "write_file"), { path: "NOTES.md", content: "$(id)\n" })).toStrictEqual({
      code: "tool_invalid_input",
      reason: "symbolic_link",
      message: '"NOTES.md" goes through the symbolic link "NOTES.md"; write_file does not write through links — write to the path it points at',
    });
    expect(existsSync(join(outside, "planted.txt"))).toBe(false);
    // A link to an existing file outside, and a link inside the root, are refused the same way.
    symlinkSync("../outside/secret.txt", join(root, "secret.md"));
    expect((await outcome(tool(rw, "write_file"), { path: "secret.md", content: "x" })) as { code: string }).toMatchObject({ code: "tool_invalid_input" });
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("SECRET outside the root\n");
    mkdirSync(join(root, "docs"));
    symlinkSync("docs", join(root, "docs-link"));
    expect(await outcome(tool(rw, "write_file"), { path: "docs-link/new.md", content: "x" })).toMatchObject({ reason: "symbolic_link" });
    expect(await outcome(tool(rw, "write_file"), { path: "docs/new.md", content: "written\n" })).toStrictEqual({ ok: { path: "docs/new.md", bytes: 8, created: true } });
    expect(readFileSync(join(root, "docs", "new.md"), "utf8")).toBe("written\n");
  });

  it("refuses a FIFO, a directory and a hard-linked file; overwrites a plain file in place", async () => {
    const { root, outside } = project();
    execFileSync("mkfifo", [join(root, "pipe")]);
    writeFileSync(join(outside, "victim.txt"), "victim\n");
    linkSync(join(outside, "victim.txt"), join(root, "hard.txt"));
    const rw = workspaceTools({ root, write: true });
    expect(await outcome(tool(rw, "write_file"), { path: "pipe", content: "x" })).toMatchObject({ code: "tool_failed", reason: "not_regular_file" });
    expect(await outcome(tool(rw, "write_file"), { path: "hard.txt", content: "x" })).toMatchObject({ code: "tool_failed", reason: "hard_link" });
    expect(readFileSync(join(outside, "victim.txt"), "utf8")).toBe("victim\n");
    mkdirSync(join(root, "adir"));
    expect(await outcome(tool(rw, "write_file"), { path: "adir", content: "x" })).toMatchObject({ reason: "is_directory" });
    expect(await outcome(tool(rw, "write_file"), { path: "ok.txt", content: "replaced" })).toStrictEqual({ ok: { path: "ok.txt", bytes: 8, created: false } });
    expect(readFileSync(join(root, "ok.txt"), "utf8")).toBe("replaced");
  });
});

describe("finding 2: write mode never writes what the next run or git command would execute", () => {
  it("refuses the agents dirs, the runtime's config and data dir and .git, wherever they are, and still writes elsewhere", async () => {
    const { root } = project();
    const rw = workspaceTools({ root, write: true, protect: [join(root, "conf", "my-config.json"), join(root, "agents")], hide: [join(root, "state")] });
    const refused = [
      ".codemode/agents/x.md",
      "codemode.json",
      "sub/project/codemode.json",
      ".git/config",
      ".git/hooks/pre-commit",
      "vendor/lib/.git/config",
      ".GIT/config",
      "conf/my-config.json",
      "agents/runner.md",
      "./agents/../agents/runner.md",
    ];
    for (const path of refused) {
      const result = await outcome(tool(rw, "write_file"), { path, content: "---\ndriver: command\ncommand: [id]\n---\n" });
      expect(result, path).toMatchObject({ code: "tool_denied", reason: "protected_path" });
    }
    expect(await outcome(tool(rw, "write_file"), { path: "state/sessions/default.json", content: "{}" })).toMatchObject({ code: "tool_denied", reason: "protected_path" });
    expect(existsSync(join(root, ".codemode"))).toBe(false);
    expect(existsSync(join(root, ".git"))).toBe(false);
    expect(existsSync(join(root, "agents"))).toBe(false);
    expect(await outcome(tool(rw, "write_file"), { path: "src/feature.ts", content: "export {};\n" })).toStrictEqual({ ok: { path: "src/feature.ts", bytes: 11, created: true } });
  });

  it("through the runtime: a program cannot plant a command agent for the next run to load and spawn", async () => {
    const { root } = project();
    const dataDir = join(root, ".codemode");
    const agentDirs = [join(root, "agents")];
    const cm = await createCodemode({ tools: workspaceTools({ root, write: true }), dataDir, agentDirs, workers: { min: 0 } });
    try {
      const planted = await cm.run(`
        const out = [];
        for (const path of ["agents/pwn.md", ".codemode/agents/pwn.md", ".codemode/sessions/default.json", "codemode.json", ".git/config"]) {
          try { await tools.write_file({ path, content: "---\\nname: pwn\\ndescription: x\\ndriver: command\\ncommand: [id]\\n---\\n" }); out.push("wrote " + path) }
          catch (e) { out.push(e.code + " " + path) }
        }
        return out;`);
      expect(planted.structuredContent.value).toStrictEqual([
        "tool_denied agents/pwn.md",
        "tool_denied .codemode/agents/pwn.md",
        "tool_denied .codemode/sessions/default.json",
        "tool_denied codemode.json",
        "tool_denied .git/config",
      ]);
    } finally {
      await cm.close();
    }
    const next = await createCodemode({ tools: workspaceTools({ root, write: true }), dataDir, agentDirs, workers: { min: 0 } });
    try {
      const spawned = await next.run(`try { await tools.ptc_subagent({ agent: "pwn", task: "x" }); return "spawned" } catch (e) { return e.code }`);
      expect(spawned.structuredContent.value).toBe("agent_unknown");
      expect((await next.run(`return (await tools.write_file({ path: "notes.md", content: "ok" })).created`)).structuredContent.value).toBe(true);
    } finally {
      await next.close();
    }
  });
});

describe("finding 3: special files are refused on the descriptor, without blocking the host", () => {
  it("read_file of a FIFO named README.md answers at once, the host's timers keep running, and the next read works", async () => {
    const { root } = project();
    execFileSync("mkfifo", [join(root, "README.md")]);
    const ro = workspaceTools({ root });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    try {
      expect(await outcome(tool(ro, "read_file"), { path: "README.md" })).toStrictEqual({
        code: "tool_failed",
        reason: "not_regular_file",
        message: '"README.md" is a FIFO, not a regular file; only regular files are read or written',
      });
      // search_files opens every file it scans the same way: the FIFO is skipped, not waited on.
      expect(await outcome(tool(ro, "search_files"), { pattern: "fine" })).toStrictEqual({
        ok: { matches: [{ path: "ok.txt", line: 1, text: "fine" }], count: 1, truncated: false, files_searched: 1 },
      });
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(ticks).toBeGreaterThan(0);
    } finally {
      clearInterval(ticker);
    }
    expect(await outcome(tool(ro, "read_file"), { path: "ok.txt" })).toMatchObject({ ok: { content: "fine", total_lines: 1 } });
  });

  it("a run whose program reads the FIFO ends normally within its deadline", async () => {
    const { root } = project();
    execFileSync("mkfifo", [join(root, "README.md")]);
    const cm = await createCodemode({ tools: workspaceTools({ root }), workers: { min: 0 } });
    try {
      const result = await cm.run(`try { await tools.read_file({ path: "README.md" }) } catch (e) { return e.reason }`, { timeoutMs: 2000 });
      expect(result.structuredContent).toMatchObject({ status: "ok", value: "not_regular_file" });
      expect((await cm.run(`return (await tools.read_file({ path: "ok.txt" })).content`)).structuredContent.value).toBe("fine");
    } finally {
      await cm.close();
    }
  });

  it.skipIf(!isRoot)("a character device (mknod c 1 5, like a rootfs in a repository) is refused before it is read (mknod needs root)", async () => {
    const { root } = project();
    mkdirSync(join(root, "rootfs", "dev"), { recursive: true });
    execFileSync("mknod", [join(root, "rootfs", "dev", "zero"), "c", "1", "5"]);
    symlinkSync("rootfs/dev/zero", join(root, "zero-link"));
    const ro = workspaceTools({ root });
    expect(await outcome(tool(ro, "read_file"), { path: "rootfs/dev/zero" })).toMatchObject({
      code: "tool_failed",
      reason: "not_regular_file",
      message: '"rootfs/dev/zero" is a character device, not a regular file; only regular files are read or written',
    });
    expect(await outcome(tool(ro, "read_file"), { path: "zero-link" })).toMatchObject({ reason: "not_regular_file" });
    expect(await outcome(tool(ro, "search_files"), { pattern: "x", glob: "**/*" })).toMatchObject({ ok: { files_searched: 1 } });
    expect(await outcome(tool(ro, "read_file"), { path: "ok.txt" })).toMatchObject({ ok: { content: "fine" } });
  });
});

describe("finding 4: large files are read in bounded chunks, only the range asked, off the event loop", () => {
  let root: string;
  const LINES = 200_000;
  beforeAll(() => {
    ({ root } = project());
    // ~32 MB of numbered lines: 16 reads of it whole would hold 512 MB; small enough for a test.
    const line = (i: number) => `${String(i).padStart(8, "0")} ${"x".repeat(150)}\n`;
    const fd = openSync(join(root, "big.log"), "w");
    try {
      let chunk = "";
      for (let i = 1; i <= LINES; i++) {
        chunk += line(i);
        if (chunk.length > 1 << 20) {
          writeFileSync(fd, chunk);
          chunk = "";
        }
      }
      writeFileSync(fd, chunk);
    } finally {
      closeSync(fd);
    }
  });

  it("returns the lines asked for and the exact line count, deep into the file", async () => {
    const ro = workspaceTools({ root });
    const result = await outcome(tool(ro, "read_file"), { path: "big.log", start_line: 180_000, end_line: 180_002 });
    const x = "x".repeat(150);
    expect(result).toStrictEqual({
      ok: { path: "big.log", content: `00180000 ${x}\n00180001 ${x}\n00180002 ${x}`, start_line: 180_000, end_line: 180_002, total_lines: LINES, truncated: false },
    });
    const head = (await outcome(tool(ro, "read_file"), { path: "big.log" })) as { ok: { end_line: number; truncated: boolean } };
    // 50 KB of 160-byte lines: cut at line 320, with where to read on.
    expect([head.ok.end_line, head.ok.truncated]).toStrictEqual([320, true]);
    expect(await outcome(tool(ro, "read_file"), { path: "big.log", start_line: LINES + 1 })).toMatchObject({
      code: "tool_invalid_input",
      message: `"start_line" ${LINES + 1} is past the end of "big.log" (${LINES} lines)`,
    });
  });

  it("16 parallel reads keep the host's timers running and its memory bounded", async () => {
    const ro = workspaceTools({ root });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    try {
      const results = await Promise.all(Array.from({ length: 16 }, () => outcome(tool(ro, "read_file"), { path: "big.log", start_line: LINES })));
      for (const r of results) expect(r).toMatchObject({ ok: { start_line: LINES, end_line: LINES, total_lines: LINES } });
      expect(ticks).toBeGreaterThan(3);
      // Reading the file whole once per call would hold 16 × 32 MB.
      expect(peak - before).toBeLessThan(256 * 1024 * 1024);
    } finally {
      clearInterval(ticker);
      clearInterval(sampler);
    }
  });

  it("stops reading when the program's signal aborts (its deadline), and the next read works", async () => {
    const ro = workspaceTools({ root });
    const controller = new AbortController();
    const reading = outcome(tool(ro, "read_file"), { path: "big.log", start_line: LINES }, controller.signal);
    setTimeout(() => controller.abort(), 1);
    expect(await reading).toMatchObject({ code: "tool_aborted", message: 'read_file of "big.log" was cancelled (the program ended or its deadline passed)' });
    const cm = await createCodemode({ tools: ro, workers: { min: 0 } });
    try {
      const timedOut = await cm.run(`await Promise.all(Array.from({ length: 16 }, () => tools.read_file({ path: "big.log", start_line: ${LINES} })))`, { timeoutMs: 50 });
      expect(timedOut.structuredContent).toMatchObject({ status: "error", error: { kind: "timeout" } });
      expect((await cm.run(`return (await tools.read_file({ path: "ok.txt" })).content`)).structuredContent.value).toBe("fine");
    } finally {
      await cm.close();
    }
  });

  it("a sparse file full of NULs is binary after its first chunk, not read to its end", async () => {
    const { root: sparseRoot } = project();
    const fd = openSync(join(sparseRoot, "hole.txt"), "w");
    ftruncateSync(fd, 64 * 1024 * 1024 * 1024);
    closeSync(fd);
    expect(await outcome(tool(workspaceTools({ root: sparseRoot }), "read_file"), { path: "hole.txt" })).toMatchObject({ reason: "binary_file" });
  });
});

/**
 * A separate process that swaps `dir` between a real directory and a symlink to outside, holding
 * each for a random few tens of microseconds (asleep, so the machine's other tests keep their
 * CPU), so a check by name and the open after it see different things. (A write may create a
 * stray `dir` while it is missing; the flipper clears it.)
 */
function flipper(root: string): ChildProcess {
  const script = `
    const fs = require("fs");
    process.chdir(${JSON.stringify(root)});
    const word = new Int32Array(new SharedArrayBuffer(4));
    const hold = () => Atomics.wait(word, 0, 0, Math.random() * 0.05);
    const into = (from) => { try { fs.renameSync(from, "dir") } catch { fs.rmSync("dir", { recursive: true, force: true }); fs.renameSync(from, "dir") } };
    for (;;) { fs.renameSync("dir", "dir.real"); into("lnk"); hold(); fs.renameSync("dir", "lnk"); into("dir.real"); hold(); }`;
  return spawn(process.execPath, ["-e", script], { stdio: "ignore" });
}

describe("finding 5: what was opened is verified, not the name checked before", () => {
  it("a concurrent writer flipping a directory and a symlink never gets a read or a write outside the root", async () => {
    const { root, outside } = project();
    mkdirSync(join(root, "dir"));
    writeFileSync(join(root, "dir", "secret.txt"), "inside\n");
    symlinkSync(outside, join(root, "lnk"));
    const rw = workspaceTools({ root, write: true });
    const child = flipper(root);
    try {
      let inside = 0;
      for (let i = 0; i < 999; i++) {
        const r = await outcome(tool(rw, "read_file"), { path: "dir/secret.txt" });
        expect(JSON.stringify(r)).not.toContain("SECRET");
        if ("ok" in r) inside++;
        await outcome(tool(rw, "write_file"), { path: "dir/planted.txt", content: "planted" });
        expect(existsSync(join(outside, "planted.txt"))).toBe(false);
      }
      // The race was real: reads landed inside while the name kept changing under them, and the
      // flipper kept flipping to the end.
      expect(inside).toBeGreaterThan(0);
      expect(child.exitCode).toBe(null);
    } finally {
      child.kill("SIGKILL");
    }
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("SECRET outside the root\n");
  });
});

describe("finding 6: the workspace tools never reach the runtime's data dir, wherever it is", () => {
  it("a program in session mallory cannot read, list, search or overwrite alice's session, task logs or spilled output", async () => {
    const { root } = project();
    const dataDir = join(root, ".codemode");
    const cm = await createCodemode({ tools: workspaceTools({ root, write: true }), dataDir, agentDirs: [], workers: { min: 0 }, limits: { outputBudget: 300 } });
    try {
      await cm.run(`store("card", "4111 1111 1111 1111"); text("x".repeat(1000))`, { session: "alice" });
      expect(existsSync(join(dataDir, "sessions", "alice.json"))).toBe(true);
      const probe = await cm.run(
        `const out = {};
         for (const path of [".codemode/sessions/alice.json", ".codemode/tasks.db", "./.codemode/../.codemode/sessions/alice.json"]) {
           try { await tools.read_file({ path }); out[path] = "read" } catch (e) { out[path] = e.code + "/" + e.reason }
         }
         out.list = (await tools.list_files({ pattern: "**/*", include_hidden: true })).files;
         out.search = (await tools.search_files({ pattern: "4111", glob: "**/*" })).count;
         out.searchDot = (await tools.search_files({ pattern: "4111", glob: ".codemode/**" })).count;
         try { await tools.write_file({ path: ".codemode/sessions/alice.json", content: "{}" }); out.write = "wrote" } catch (e) { out.write = e.code }
         return out;`,
        { session: "mallory" },
      );
      expect(probe.structuredContent.value).toStrictEqual({
        ".codemode/sessions/alice.json": "tool_denied/protected_path",
        ".codemode/tasks.db": "tool_denied/protected_path",
        "./.codemode/../.codemode/sessions/alice.json": "tool_denied/protected_path",
        list: ["ok.txt"],
        search: 0,
        searchDot: 0,
        write: "tool_denied",
      });
      expect((await cm.run(`return load("card")`, { session: "alice" })).structuredContent.value).toBe("4111 1111 1111 1111");
    } finally {
      await cm.close();
    }
  });

  it("a data dir under any name, reached through a symlink inside the workspace, is refused by where it really is", async () => {
    const { root } = project();
    const dataDir = join(root, "state");
    symlinkSync("state", join(root, "alias"));
    const cm = await createCodemode({ tools: workspaceTools({ root }), dataDir, agentDirs: [], workers: { min: 0 } });
    try {
      await cm.run(`store("k", "v")`, { session: "alice" });
      const r = await cm.run(`
        const out = [];
        for (const path of ["state/sessions/alice.json", "alias/sessions/alice.json"]) {
          try { await tools.read_file({ path }); out.push("read") } catch (e) { out.push(e.reason) }
        }
        out.push((await tools.list_files({ pattern: "alias/**" })).count, (await tools.read_file({ path: "ok.txt" })).content);
        return out;`);
      expect(r.structuredContent.value).toStrictEqual(["protected_path", "protected_path", 0, "fine"]);
    } finally {
      await cm.close();
    }
  });
});
