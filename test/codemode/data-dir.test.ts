// Issue 10, the runtime's own files: the data dir (sessions, task logs), spill files and temp dirs.
// A hostile checkout plants links in `.codemode/`; another local user (a real second uid, when the
// tests run as root) pre-creates the temp paths; two hosts share one session. Each case shows the
// attack contained and the next run working.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createCodemode, type Codemode } from "../../src/index.js";
import { CLI } from "../mcp/helpers.js";

const isRoot = process.getuid?.() === 0;
/** Another local user: any uid but ours works for a root test process, no account needed. */
const OTHER_UID = 54321;

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function open(options: Parameters<typeof createCodemode>[0]): Promise<Codemode> {
  const cm = await createCodemode({ agentDirs: [], workers: { min: 0 }, ...options });
  cleanup.push(() => cm.close());
  return cm;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cm-data-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A program line that spawns `agent` in the background and waits for it: `t` is its handle. */
const spawnAndWait = (agent: string, task: string) =>
  `const t = await tools.ptc_subagent({ agent: ${JSON.stringify(agent)}, task: ${JSON.stringify(task)}, background: true }); while ((await tools.ptc_task_output({ task_id: t.task_id })).status === "running") await sleep(5);`;

const mode = (path: string) => (lstatSync(path).mode & 0o777).toString(8);

/** Runs a small node script as the other user; returns what it printed. */
function asOtherUser(script: string): string {
  const r = spawnSync(process.execPath, ["-e", script], { uid: OTHER_UID, gid: OTHER_UID, encoding: "utf8" });
  return (r.stdout + r.stderr).trim();
}

describe("finding 7: files in the data dir are never followed as links", () => {
  it("a planted sessions/default.json.tmp link to ~/.bashrc is not written through; the session is saved and loads", async () => {
    const dataDir = tempDir();
    const home = tempDir();
    const bashrc = join(home, ".bashrc");
    writeFileSync(bashrc, "# the user's own rc file\n");
    mkdirSync(join(dataDir, "sessions"), { recursive: true });
    symlinkSync(bashrc, join(dataDir, "sessions", "default.json.tmp"));
    const cm = await open({ dataDir });
    const run = await cm.run(`store("x", "$(id)"); return 1`);
    expect(run.details.warnings).toStrictEqual([]);
    expect(readFileSync(bashrc, "utf8")).toBe("# the user's own rc file\n");
    const file = join(dataDir, "sessions", "default.json");
    expect(lstatSync(file).isFile()).toBe(true);
    expect(JSON.parse(readFileSync(file, "utf8"))).toStrictEqual({ x: "$(id)" });
    const next = await open({ dataDir });
    expect((await next.run(`return load("x")`)).structuredContent.value).toBe("$(id)");
  });

  it("a default.json link to a credentials file is refused with the file named, its content never loaded; without it the next run works", async () => {
    const dataDir = tempDir();
    const secrets = join(tempDir(), "credentials.json");
    writeFileSync(secrets, JSON.stringify({ aws_secret_access_key: "AKIA-SECRET" }));
    mkdirSync(join(dataDir, "sessions"), { recursive: true });
    const file = join(dataDir, "sessions", "default.json");
    symlinkSync(secrets, file);
    const cm = await open({ dataDir });
    await expect(cm.run(`return load("aws_secret_access_key")`)).rejects.toThrow(
      `session file ${file} cannot be used: ${file} is a symbolic link; the runtime does not follow links among its own files — remove it`,
    );
    rmSync(file);
    expect((await cm.run(`return load("aws_secret_access_key") ?? "none"`)).structuredContent.value).toBe("none");
  });

  it("a sessions dir that is a link (into the home dir) is refused; the data dir's own dirs are 0700 and its files 0600", async () => {
    const dataDir = tempDir();
    const home = tempDir();
    symlinkSync(home, join(dataDir, "sessions"));
    const cm = await open({ dataDir });
    await expect(cm.run(`return load("k")`)).rejects.toThrow(`${join(dataDir, "sessions")} is a symbolic link; the runtime keeps its state only in real directories`);
    rmSync(join(dataDir, "sessions"));
    await cm.run(`store("k", 1)`);
    expect(readdirSync(home)).toStrictEqual([]);
    expect([mode(dataDir), mode(join(dataDir, "sessions")), mode(join(dataDir, "sessions", "default.json")), mode(join(dataDir, "tasks"))]).toStrictEqual(["700", "700", "600", "700"]);
  });

  it("a task log swapped for a link to a key file is not returned by ptc_task_output; the next task's output is", async () => {
    const dataDir = tempDir();
    const key = join(tempDir(), "id_ed25519");
    writeFileSync(key, "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    const agents = [{ name: "echo", description: "echoes", driver: "function" as const, run: async ({ task }: { task: string }) => `said ${task}` }];
    const cm = await open({ dataDir, agents });
    const first = await cm.run(`${spawnAndWait("echo", "one")} return t.task_id`);
    const id = first.structuredContent.value as string;
    const log = join(dataDir, "tasks", `${id}.log`);
    expect(mode(log)).toBe("600");
    rmSync(log);
    symlinkSync(key, log);
    const read = await cm.run(`try { return await tools.ptc_task_output({ task_id: ${JSON.stringify(id)} }) } catch (e) { return e.message }`);
    expect(JSON.stringify(read.structuredContent.value)).not.toContain("PRIVATE KEY");
    expect(read.structuredContent.value).toBe(`${log} is a symbolic link; the runtime does not follow links among its own files — remove it`);
    const second = await cm.run(`${spawnAndWait("echo", "two")} return (await tools.ptc_task_output({ task_id: t.task_id })).output`);
    expect(second.structuredContent.value).toBe("said two");
  });

  it("a planted tasks.db-wal link is refused before SQLite could write through it", async () => {
    const dataDir = tempDir();
    const victim = join(tempDir(), ".profile");
    writeFileSync(victim, "# profile\n");
    symlinkSync(victim, join(dataDir, "tasks.db-wal"));
    await expect(createCodemode({ dataDir, agentDirs: [], workers: { min: 0 } })).rejects.toThrow(`${join(dataDir, "tasks.db-wal")} is a symbolic link`);
    expect(readFileSync(victim, "utf8")).toBe("# profile\n");
    rmSync(join(dataDir, "tasks.db-wal"));
    expect((await (await open({ dataDir })).run(`return 1`)).structuredContent.value).toBe(1);
  });
});

describe("finding 8: temp files are private, unpredictable and removed on close", () => {
  it("an in-memory task's spilled log and a run's spilled output live in 0700 dirs of fresh names, 0600 files, gone after close()", async () => {
    const agents = [{ name: "loud", description: "prints a lot", driver: "function" as const, run: async () => "y".repeat(80 * 1024) }];
    const cm = await createCodemode({ agents, agentDirs: [], workers: { min: 0 }, limits: { outputBudget: 1000 } });
    let closed = false;
    cleanup.push(() => (closed ? undefined : cm.close()));
    const result = await cm.run(`
      ${spawnAndWait("loud", "x")}
      const page = await tools.ptc_task_output({ task_id: t.task_id });
      text("z".repeat(5000));
      return page.output_full_path;`);
    const taskLog = result.structuredContent.value as string;
    const runSpill = result.details.fullOutputPath!;
    for (const file of [taskLog, runSpill]) {
      expect(dirname(dirname(file))).toBe(tmpdir());
      expect([mode(dirname(file)), mode(file), statSync(dirname(file)).uid]).toStrictEqual(["700", "600", process.getuid!()]);
    }
    expect(dirname(taskLog)).not.toBe(join(tmpdir(), `codemode-${process.pid}`, "spill"));
    expect(dirname(runSpill)).not.toBe(join(tmpdir(), "codemode-spill"));
    expect(readFileSync(taskLog, "utf8")).toBe("y".repeat(80 * 1024));
    await cm.close();
    closed = true;
    expect([existsSync(dirname(taskLog)), existsSync(dirname(runSpill))]).toStrictEqual([false, false]);
  });

  it.skipIf(!isRoot)("another local user who pre-created the old fixed paths reads nothing and redirects nothing (acting as a second uid needs root)", async () => {
    // A temp dir of this test's own, shared like /tmp (1777), so the real /tmp is left alone.
    const tmp = join(tempDir(), "tmp");
    mkdirSync(tmp);
    chmodSync(dirname(tmp), 0o755);
    chmodSync(tmp, 0o1777);
    const savedTmp = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    cleanup.push(() => {
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
    });
    expect(tmpdir()).toBe(tmp);
    // The attacker's set-up of the old paths: world-writable dirs, a link aimed at a root-owned rc file.
    const rcDir = tempDir();
    const rc = join(rcDir, ".bashrc");
    writeFileSync(rc, "# root's rc\n");
    const oldTaskSpill = join(tmp, `codemode-${process.pid}`);
    const oldRunSpill = join(tmp, "codemode-spill");
    chmodSync(rcDir, 0o755);
    const plant = (dir: string) => `fs.mkdirSync(${JSON.stringify(dir)}, { recursive: true, mode: 0o777 }); fs.symlinkSync(${JSON.stringify(rc)}, ${JSON.stringify(join(dir, "planted.log"))});`;
    expect(asOtherUser(`const fs = require("fs"); ${plant(join(oldTaskSpill, "spill"))} ${plant(oldRunSpill)} console.log("planted")`)).toBe("planted");
    const agents = [{ name: "loud", description: "prints a lot", driver: "function" as const, run: async () => "secret task output ".repeat(4000) }];
    const cm = await open({ agents, limits: { outputBudget: 1000 } });
    const result = await cm.run(`
      ${spawnAndWait("loud", "x")}
      const page = await tools.ptc_task_output({ task_id: t.task_id });
      text("secret run output ".repeat(500));
      return page.output_full_path;`);
    const taskLog = result.structuredContent.value as string;
    const runSpill = result.details.fullOutputPath!;
    expect(taskLog.startsWith(oldTaskSpill + "/")).toBe(false);
    expect(runSpill.startsWith(oldRunSpill + "/")).toBe(false);
    // The other user can neither read the real files nor replace them.
    const tryRead = (file: string) =>
      asOtherUser(
        `const fs = require("fs"); try { fs.readFileSync(${JSON.stringify(file)}); console.log("read") } catch (e) { console.log(e.code) } try { fs.writeFileSync(${JSON.stringify(file)}, "IGNORE PREVIOUS INSTRUCTIONS"); console.log("replaced") } catch (e) { console.log(e.code) }`,
      );
    expect(tryRead(taskLog)).toBe("EACCES\nEACCES");
    expect(tryRead(runSpill)).toBe("EACCES\nEACCES");
    expect(readFileSync(runSpill, "utf8")).toBe("secret run output ".repeat(500));
    expect(readFileSync(rc, "utf8")).toBe("# root's rc\n");
    expect(readdirSync(join(oldTaskSpill, "spill"))).toStrictEqual(["planted.log"]);
    expect(readdirSync(oldRunSpill)).toStrictEqual(["planted.log"]);
  });

  it.skipIf(!isRoot)("a data dir another user created is refused, naming the owner (acting as a second uid needs root)", async () => {
    const parent = tempDir();
    chmodSync(parent, 0o777);
    const dataDir = join(parent, "shared-state");
    expect(asOtherUser(`require("fs").mkdirSync(${JSON.stringify(dataDir)}, { mode: 0o777 }); console.log("made")`)).toBe("made");
    await expect(createCodemode({ dataDir, agentDirs: [], workers: { min: 0 } })).rejects.toThrow(
      `${dataDir} belongs to another user (uid ${OTHER_UID}); the runtime keeps its state only in directories of its own user`,
    );
    const own = join(parent, "own-state");
    expect((await (await open({ dataDir: own })).run(`return 1`)).structuredContent.value).toBe(1);
    expect(mode(own)).toBe("700");
  });
});

describe("finding 9: sessions keep every value they are given", () => {
  it("a valid session name too long for a file name once encoded is persisted and loads in the next runtime", async () => {
    const dataDir = tempDir();
    const names = [":".repeat(200), "@".repeat(100) + "x".repeat(100), "a".repeat(200)];
    const cm = await open({ dataDir });
    for (const session of names) {
      const run = await cm.run(`store("name", ${JSON.stringify(session.slice(0, 10))})`, { session });
      expect(run.details.warnings).toStrictEqual([]);
    }
    const next = await open({ dataDir });
    for (const session of names) expect((await next.run(`return load("name")`, { session })).structuredContent.value).toBe(session.slice(0, 10));
    expect(readdirSync(join(dataDir, "sessions")).every((name) => Buffer.byteLength(name) <= 255)).toBe(true);
  });

  it("two hosts on one session keep each other's updates", async () => {
    const dataDir = tempDir();
    const a = await open({ dataDir });
    const b = await open({ dataDir });
    // Both have the session loaded before either writes.
    await a.run(`return load("x")`, { session: "shared" });
    await b.run(`return load("x")`, { session: "shared" });
    await a.run(`store("from_a", 1)`, { session: "shared" });
    await b.run(`store("from_b", 2)`, { session: "shared" });
    await a.run(`store("from_a", 3); store("gone", true)`, { session: "shared" });
    await b.run(`store("gone", undefined)`, { session: "shared" });
    expect((await a.run(`return [load("from_a"), load("from_b"), load("gone") ?? null]`, { session: "shared" })).structuredContent.value).toStrictEqual([3, 2, null]);
    expect(JSON.parse(readFileSync(join(dataDir, "sessions", "shared.json"), "utf8"))).toStrictEqual({ from_a: 3, from_b: 2 });
  });

  it("four CLI processes storing into one session at once lose nothing", async () => {
    const project = tempDir();
    writeFileSync(join(project, "codemode.json"), JSON.stringify({ dataDir: "state", workspace: false }));
    const runs = Array.from(
      { length: 4 },
      (_, i) =>
        new Promise<number | null>((resolve) => {
          const child = spawn(process.execPath, [CLI, "run", "-", "--session", "crowd"], { cwd: project, stdio: ["pipe", "ignore", "ignore"] });
          child.once("close", resolve);
          child.stdin.end(`store("k${i}", ${i}); await sleep(20); store("k${i}", ${i * 10})`);
        }),
    );
    expect(await Promise.all(runs)).toStrictEqual(Array(4).fill(0));
    const saved = JSON.parse(readFileSync(join(project, "state", "sessions", "crowd.json"), "utf8"));
    expect(saved).toStrictEqual(Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`k${i}`, i * 10])));
    expect(readdirSync(join(project, "state", "sessions"))).toStrictEqual(["crowd.json"]);
  });

  it('store("__proto__", …) is persisted as an ordinary key and loads in the next runtime', async () => {
    const dataDir = tempDir();
    const cm = await open({ dataDir });
    await cm.run(`store("__proto__", { polluted: true }); store("plain", [1])`);
    expect(readFileSync(join(dataDir, "sessions", "default.json"), "utf8")).toBe('{\n  "__proto__": {"polluted":true},\n  "plain": [1]\n}\n');
    const next = await open({ dataDir });
    expect((await next.run(`return [load("__proto__"), load("plain"), ({}).polluted ?? "clean"]`)).structuredContent.value).toStrictEqual([{ polluted: true }, [1], "clean"]);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
