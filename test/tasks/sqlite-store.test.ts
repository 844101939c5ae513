import { describe, it, expect, afterAll } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import { AgentRegistry, TaskHost, sqliteTaskStore, createTaskStore, currentOwner, type TaskRecord } from "../../src/tasks/index.js";
import { compileTasksForChild } from "./helpers/compile.js";

const cleanup: string[] = [];
const pids: number[] = [];
afterAll(() => {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

/** A zombie is dead: it only waits to be reaped by its (new) parent. */
function processAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanup.push(d);
  return d;
}

const echoAgents = () => new AgentRegistry({ dirs: [], agents: [{ name: "echo", description: "d", driver: "function", run: async ({ task }) => `echo ${task}` }] });

describe("SqliteTaskStore", () => {
  it("persists records and output logs across store instances", async () => {
    const dir = tempDir("store-");
    const host = new TaskHost({ store: sqliteTaskStore(dir), agents: echoAgents() });
    const rec = await host.spawn({ agent: "echo", task: "héllo" });
    await host.close();
    host.store.close();

    const again = new TaskHost({ store: createTaskStore({ dataDir: dir }), agents: echoAgents() });
    expect(again.get(rec.id)).toStrictEqual(rec);
    const page = again.output(rec.id);
    expect([page.output, page.outputBytes, page.truncated, page.preview]).toStrictEqual(["echo héllo", 11, false, "echo héllo"]);
    expect(again.store.outputPath(rec.id)).toBe(join(dir, "tasks", `${rec.id}.log`));
    const db = new Database(join(dir, "tasks.db"), { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    db.close();
    again.store.close();
  });

  it("lists the most recent matches oldest first, with the total", async () => {
    const dir = tempDir("store-");
    const host = new TaskHost({ store: sqliteTaskStore(dir), agents: echoAgents() });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await host.spawn({ agent: "echo", task: `t${i}` })).id);
    const page = host.list({ limit: 2 });
    expect([page.records.map((r) => r.id), page.total]).toStrictEqual([ids.slice(3), 5]);
    expect(host.list({ status: ["failed"] })).toStrictEqual({ records: [], total: 0 });
    host.store.close();
  });

  it("a task running on one host: another host on the store reads its output size from the log, in get() as in list()", async () => {
    const dir = tempDir("store-");
    const talker = "process.stdout.write('hello from the child\\n'); setInterval(() => {}, 1000)";
    const agents = new AgentRegistry({ dirs: [], agents: [{ name: "talker", description: "d", driver: "command", command: [process.execPath, "-e", talker] }] });
    const runner = new TaskHost({ store: sqliteTaskStore(dir), agents, killGraceMs: 100 });
    const reader = new TaskHost({ store: sqliteTaskStore(dir), agents: echoAgents() });
    try {
      const t = await runner.spawn({ agent: "talker", task: "t", background: true });
      const bytes = Buffer.byteLength("hello from the child\n");
      for (let i = 0; i < 400 && reader.store.outputSize(t.id) < bytes; i++) await new Promise((r) => setTimeout(r, 25));
      // The stored record was written when the task started, before any output.
      expect([reader.store.get(t.id)!.status, reader.store.get(t.id)!.outputBytes]).toStrictEqual(["running", 0]);
      const got = reader.get(t.id)!;
      const listed = reader.list().records.find((r) => r.id === t.id)!;
      expect([got.status, got.outputBytes, listed.outputBytes]).toStrictEqual(["running", bytes, bytes]);
      expect(got).toStrictEqual(listed);
      await runner.stop(t.id, "test");
      // Once finished, the record's own count is the answer.
      expect([reader.get(t.id)!.status, reader.get(t.id)!.outputBytes]).toStrictEqual(["canceled", bytes]);
    } finally {
      await runner.close();
      runner.store.close();
      reader.store.close();
    }
  });

  it("only the owner (status and owner compare-and-set) can move a record", () => {
    const dir = tempDir("store-");
    const store = sqliteTaskStore(dir);
    const owner = currentOwner();
    const rec: TaskRecord = {
      id: "01ARZ3NDEKTSV4RRFFQ69G5FAV",
      agent: "a",
      driver: "function",
      task: "t",
      label: "t",
      depth: 1,
      background: true,
      cwd: "/",
      status: "running",
      owner,
      createdAt: 1,
      outputBytes: 0,
    };
    store.insert(rec);
    expect(store.replace({ ...rec, status: "failed" }, { status: "running", owner: { pid: 1, startTime: "proc:1" } })).toBe(false);
    expect(store.replace({ ...rec, status: "failed" }, { status: "queued", owner })).toBe(false);
    expect(store.replace({ ...rec, status: "failed" }, { status: "running", owner })).toBe(true);
    expect(store.get(rec.id)!.status).toBe("failed");
    expect(() => store.readOutput("../etc/passwd", 0, 10)).toThrow('"task_id" must be a 26-character ULID, got the string "../etc/passwd"');
    store.close();
  });
});

describe("a host killed with SIGKILL", () => {
  it("leaves its tasks to be marked lost by the next host, output kept, live hosts never reaped", async () => {
    const dataDir = tempDir("killed-");
    const build = compileTasksForChild();
    cleanup.push(build);
    // The command child prints its pid, then ticks; once its host is gone a write fails and it exits.
    const talker = `process.stdout.write("pid " + process.pid + " é\\n"); setInterval(() => process.stdout.write("tick\\n"), 100);`;
    const hostScript = join(build, "host.mjs");
    writeFileSync(
      hostScript,
      `import { TaskHost, AgentRegistry, sqliteTaskStore } from "./tasks/index.js";
const agents = new AgentRegistry({ dirs: [], agents: [
  { name: "talker", description: "d", driver: "command", command: [process.execPath, "-e", ${JSON.stringify(talker)}] },
  { name: "echo", description: "d", driver: "function", run: async () => "finished before the crash" },
] });
const host = new TaskHost({ store: sqliteTaskStore(process.argv[2]), agents, maxRunning: 2 });
const done = await host.spawn({ agent: "echo", task: "done" });
const a = await host.spawn({ agent: "talker", task: "a", background: true });
const b = await host.spawn({ agent: "talker", task: "b", background: true });
const c = await host.spawn({ agent: "talker", task: "c", background: true });
while (host.store.outputSize(a.id) === 0 || host.store.outputSize(b.id) === 0) await new Promise((r) => setTimeout(r, 20));
console.log(JSON.stringify({ done: done.id, running: [a.id, b.id], queued: c.id }));
setInterval(() => {}, 1000);
`,
    );
    const child: ChildProcess = spawn(process.execPath, [hostScript, dataDir], { stdio: ["ignore", "pipe", "inherit"] });
    pids.push(child.pid!);
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once("line", resolve);
      child.once("exit", (code) => reject(new Error(`host child exited early with ${code}`)));
    });
    const ids = JSON.parse(line) as { done: string; running: string[]; queued: string };

    // A second host on the same data dir while the first is alive: nothing of the first is reaped.
    const live = new TaskHost({ store: sqliteTaskStore(dataDir), agents: echoAgents() });
    expect(live.reapLost()).toStrictEqual([]);
    expect(live.list({ status: ["running", "queued"] }).total).toBe(3);
    await expect(live.stop(ids.running[0]!)).rejects.toThrow(`task ${ids.running[0]} is run by another host (pid ${child.pid}); stop it from that host, or wait until it ends`);
    live.store.close();

    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;

    const next = new TaskHost({ store: sqliteTaskStore(dataDir), agents: echoAgents() });
    const byId = new Map(next.list().records.map((r) => [r.id, r]));
    for (const id of ids.running) {
      const r = byId.get(id)!;
      expect([r.status, r.lostReason, Object.hasOwn(r, "usage")]).toStrictEqual(["lost", "host_exited_while_running", false]);
      // A ticking child may notice its dead host (a failed write) before the next host stops it.
      expect(r.errorMessage).toMatch(
        new RegExp(
          `^the host \\(pid ${child.pid}\\) exited while the task was running; its output so far is kept — read it with ptc_task_output, or spawn the task again(; the 1 process it left running was stopped)?$`,
        ),
      );
      const out = next.output(id).output;
      const pid = Number(/^pid (\d+) é\n/.exec(out)![1]);
      pids.push(pid);
      for (let i = 0; i < 400 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 25));
      expect(processAlive(pid)).toBe(false);
    }
    const q = byId.get(ids.queued)!;
    expect([q.status, q.lostReason, q.errorMessage]).toStrictEqual(["lost", "lost_on_restart", `the host (pid ${child.pid}) exited before the task started; spawn it again`]);
    const d = byId.get(ids.done)!;
    expect([d.status, d.exitCode, next.output(ids.done).output]).toStrictEqual(["succeeded", 0, "finished before the crash"]);
    const db = new Database(join(dataDir, "tasks.db"), { readonly: true });
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    db.close();
    next.store.close();
  });
});

describe("a data dir with bad rows or a damaged database", () => {
  function goodRecord(id: string, status: TaskRecord["status"] = "succeeded"): TaskRecord {
    return {
      id,
      agent: "echo",
      driver: "function",
      task: "t",
      label: "t",
      depth: 1,
      background: true,
      cwd: "/",
      status,
      owner: { pid: 1, startTime: "proc:1", hostId: "00ff" },
      createdAt: 1,
      outputBytes: 0,
    };
  }

  it("quarantines malformed rows with a warning naming each row and the file, and serves the rest", async () => {
    const dir = tempDir("bad-rows-");
    const store = sqliteTaskStore(dir);
    const ids = ["01ARZ3NDEKTSV4RRFFQ69G5FA1", "01ARZ3NDEKTSV4RRFFQ69G5FA2", "01ARZ3NDEKTSV4RRFFQ69G5FA3", "01ARZ3NDEKTSV4RRFFQ69G5FA4"];
    store.insert(goodRecord(ids[0]!));
    store.insert(goodRecord(ids[3]!, "running"));
    store.close();
    const db = new Database(join(dir, "tasks.db"));
    const raw = db.prepare("INSERT INTO tasks (id, status, owner_pid, owner_start, parent_id, record) VALUES (?, ?, 1, 'proc:1', NULL, ?)");
    raw.run(ids[1], "running", "{ not json");
    raw.run("../../etc/passwd", "running", JSON.stringify({ ...goodRecord(ids[2]!, "running"), id: "../../etc/passwd" }));
    const { owner: _owner, ...ownerless } = goodRecord(ids[2]!, "running");
    raw.run(ids[2], "running", JSON.stringify(ownerless));
    db.close();

    const host = new TaskHost({ store: sqliteTaskStore(dir), agents: echoAgents() });
    const file = join(dir, "tasks.db");
    // Start-up reaping read every active row: the bad ones are set aside, the good one is reaped.
    expect(host.warnings).toStrictEqual([
      `task database ${file}: row 5 (id "${ids[2]}") is not a valid task record — field "owner" expected object, received undefined; it was moved to the table "quarantine" of that file and is no longer listed`,
      `task database ${file}: row 3 (id "${ids[1]}") is not a valid task record — its JSON does not parse (Expected property name or '}' in JSON at position 2); it was moved to the table "quarantine" of that file and is no longer listed`,
      `task database ${file}: row 4 (id "../../etc/passwd") is not a valid task record — field "id" must be a 26-character ULID; it was moved to the table "quarantine" of that file and is no longer listed`,
    ]);
    const listed = host.list();
    expect([listed.records.map((r) => [r.id, r.status]), listed.total]).toStrictEqual([
      [
        [ids[0], "succeeded"],
        [ids[3], "lost"],
      ],
      2,
    ]);
    expect((await host.spawn({ agent: "echo", task: "next" })).status).toBe("succeeded");
    host.store.close();
    const check = new Database(file, { readonly: true });
    expect((check.prepare("SELECT row_id, id, reason FROM quarantine ORDER BY row_id").all() as Array<{ row_id: number }>).map((r) => r.row_id)).toStrictEqual([3, 4, 5]);
    check.close();
  });

  it("a truncated or foreign database file fails with a message naming the file and the fix", () => {
    const dir = tempDir("truncated-");
    const store = sqliteTaskStore(dir);
    for (let i = 0; i < 50; i++) store.insert(goodRecord(`01ARZ3NDEKTSV4RRFFQ69G${String(i).padStart(4, "0")}`));
    store.close();
    const file = join(dir, "tasks.db");
    const bytes = readFileSync(file);
    writeFileSync(file, bytes.subarray(0, 100));
    expect(() => sqliteTaskStore(dir)).toThrow(
      `the task database ${file} failed: database disk image is malformed; the file is damaged or is not a task database: move it aside (mv "${file}" "${file}.bad") to start a new one, or restore it from a backup`,
    );
    writeFileSync(file, "this is not a database, just text that is long enough to have a header".repeat(10));
    expect(() => sqliteTaskStore(dir)).toThrow(`the task database ${file} failed: file is not a database; the file is damaged or is not a task database: move it aside`);
  });
});

describe("a task database that is not a regular file", () => {
  it("a FIFO, a link or a directory as tasks.db or one of its -wal, -shm, -journal files is refused at once, naming it and the fix; moved aside, the store works", async () => {
    const dir = tempDir("special-db-");
    const host = new TaskHost({ store: sqliteTaskStore(dir), agents: echoAgents() });
    const first = await host.spawn({ agent: "echo", task: "kept" });
    await host.close();
    host.store.close();
    const refused = (path: string, what: string) =>
      `${path} is ${what}, not a regular file; the task database and its -wal, -shm and -journal files must be regular files: move it aside (mv "${path}" "${path}.bad")`;
    const db = join(dir, "tasks.db");
    for (const name of ["tasks.db-wal", "tasks.db-shm", "tasks.db-journal"]) {
      const path = join(dir, name);
      rmSync(path, { force: true });
      execFileSync("mkfifo", [path]);
      // Before, SQLite's open of the FIFO blocked the process for good.
      expect(() => sqliteTaskStore(dir)).toThrow(refused(path, "a FIFO"));
      rmSync(path);
    }
    renameSync(db, `${db}.real`);
    execFileSync("mkfifo", [db]);
    expect(() => sqliteTaskStore(dir)).toThrow(refused(db, "a FIFO"));
    rmSync(db);
    mkdirSync(db);
    expect(() => sqliteTaskStore(dir)).toThrow(refused(db, "a directory"));
    rmSync(db, { recursive: true });
    symlinkSync("/dev/zero", db);
    expect(() => sqliteTaskStore(dir)).toThrow(`${db} is a symbolic link; the runtime does not follow links among its own files — remove it`);
    rmSync(db);
    renameSync(`${db}.real`, db);
    const again = new TaskHost({ store: sqliteTaskStore(dir), agents: echoAgents() });
    expect(again.get(first.id)?.status).toBe("succeeded");
    expect((await again.spawn({ agent: "echo", task: "next" })).status).toBe("succeeded");
    await again.close();
    again.store.close();
  });
});

describe("host liveness on a data dir", () => {
  it("is the host's lock, not its pid: a record whose owner pid is alive but holds no lock is lost; a lock holder is alive", () => {
    const dir = tempDir("liveness-");
    const store = sqliteTaskStore(dir);
    const me = currentOwner();
    // pid 1 always runs, but the host that wrote this record (another namespace, or dead) holds no lock here.
    expect(store.isOwnerAlive({ pid: 1, startTime: "proc:1", hostId: "abcdef012345" })).toBe(false);
    expect(store.isOwnerAlive(me)).toBe(true);
    expect(readdirSync(join(dir, "hosts"))).toStrictEqual([`${me.hostId}.lock`]);
    // Records from before host locks: judged by pid and start time.
    expect(store.isOwnerAlive({ pid: me.pid, startTime: me.startTime })).toBe(true);
    store.close();
    expect(readdirSync(join(dir, "hosts"))).toStrictEqual([]);
  });

  it("a FIFO or a link in place of another host's lock file is no host's lock: its record is lost at start-up, nothing waits on it", async () => {
    const dir = tempDir("liveness-fifo-");
    const store = sqliteTaskStore(dir);
    const record = (id: string, hostId: string): TaskRecord => ({
      id,
      agent: "echo",
      driver: "function",
      task: "t",
      label: "t",
      depth: 1,
      background: true,
      cwd: "/",
      status: "running",
      owner: { pid: 1, startTime: "proc:1", hostId },
      createdAt: 1,
      outputBytes: 0,
    });
    store.insert(record("01ARZ3NDEKTSV4RRFFQ69G5FB1", "00ff00ff00ff"));
    store.insert(record("01ARZ3NDEKTSV4RRFFQ69G5FB2", "11ee11ee11ee"));
    store.close();
    // Before, opening the FIFO to ask for its lock blocked the process for good.
    execFileSync("mkfifo", [join(dir, "hosts", "00ff00ff00ff.lock")]);
    symlinkSync("/dev/zero", join(dir, "hosts", "11ee11ee11ee.lock"));
    const host = new TaskHost({ store: sqliteTaskStore(dir), agents: echoAgents() });
    expect(host.list().records.map((r) => [r.id, r.status])).toStrictEqual([
      ["01ARZ3NDEKTSV4RRFFQ69G5FB1", "lost"],
      ["01ARZ3NDEKTSV4RRFFQ69G5FB2", "lost"],
    ]);
    expect((await host.spawn({ agent: "echo", task: "next" })).status).toBe("succeeded");
    await host.close();
    host.store.close();
  });
});
