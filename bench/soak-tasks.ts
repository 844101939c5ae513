// Task soak: 1,000 subagent tasks with large and hostile outputs on one codemode instance with a
// data dir — big text past the output cap, endless jsonl lines, usage readings of 1e308, failures,
// stops, script agents flooding text — spawned from programs in the background, polled and read.
// The host holds if its RSS stays flat (≤ 1.5× after warm-up), nothing escapes as an unhandled
// rejection, and at the end every record is consistent: terminal, its status the one its agent
// must give, its output size equal to its log's, within the cap, usage finite, no process of any
// task still running, and the database whole.
//
//   npm run build && node --expose-gc dist/bench/soak-tasks.js [tasks=1000]
//
// test/tasks/soak.test.ts runs the same mix with 40 tasks.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { prng } from "./prng.js";
import Database from "better-sqlite3";
import { createCodemode } from "../src/index.js";
import { findTaskProcesses } from "../src/tasks/processes.js";
import { isTerminal, type AgentInput, type TaskRecord, type TaskStatus } from "../src/tasks/index.js";

const MiB = 1024 * 1024;
/** The output cap of the soak's host: most "big" tasks print past it. */
const CAP = 2 * MiB;

interface TaskKind {
  agent: AgentInput;
  weight: number;
  /** The status a task of this kind must end with. */
  expect: TaskStatus;
  /** Stopped by the program once it runs. */
  stop?: boolean;
}

const sh = (script: string): string[] => ["sh", "-c", script];

export const TASK_KINDS: TaskKind[] = [
  // 0.5-6 MiB of base64 text (the task is the size in KiB): past the 2 MiB cap for most.
  {
    agent: { name: "big", description: "prints a lot", driver: "command", command: ["sh", "-c", "head -c $(( $1 * 1024 )) /dev/urandom | base64 -w 160", "sh", "{task}"] },
    weight: 30,
    expect: "succeeded",
  },
  // One 6 MiB jsonl line with no newline: past the line limit, fails its task.
  { agent: { name: "endless-line", description: "one huge line", driver: "command", protocol: "jsonl", command: sh("head -c 6291456 /dev/zero | tr '\\0' 'x'") }, weight: 10, expect: "failed" },
  // Usage readings no meter gives: 1e308 twice, then a real one.
  {
    agent: {
      name: "liar",
      description: "lies about usage",
      driver: "command",
      protocol: "jsonl",
      command: sh(
        `for i in 1 2; do echo '{"type":"usage","input_tokens":1e308,"output_tokens":1e308,"cost_usd":1e308}'; done; echo '{"type":"usage","input_tokens":7,"output_tokens":3}'; echo '{"type":"text","text":"ok"}'`,
      ),
    },
    weight: 15,
    expect: "succeeded",
  },
  { agent: { name: "crash", description: "fails", driver: "command", command: sh("head -c 300000 /dev/urandom | base64; echo boom >&2; exit 3") }, weight: 10, expect: "failed" },
  // Leaves a grandchild behind that holds stdout: the task still ends, and the grandchild with it.
  { agent: { name: "holder", description: "leaves a grandchild", driver: "command", command: sh("sleep 60 & echo started") }, weight: 10, expect: "succeeded" },
  { agent: { name: "sleeper", description: "runs until stopped", driver: "command", command: ["sleep", "60"] }, weight: 10, expect: "canceled", stop: true },
  {
    agent: { name: "flooder", description: "a script agent flooding text", driver: "script", scriptCode: `for (let i = 0; i < 200; i++) text("f".repeat(5000) + i)` },
    weight: 10,
    expect: "succeeded",
  },
  {
    agent: {
      name: "fn",
      description: "in-process output",
      driver: "function",
      run: async ({ emit }) => {
        for (let i = 0; i < 64; i++) emit({ type: "text", text: "g".repeat(64 * 1024) });
        return "\nend";
      },
    },
    weight: 5,
    expect: "succeeded",
  },
];

export interface TaskSoakReport {
  tasks: number;
  seconds: number;
  samples: Array<{ tasks: number; rssMiB: number }>;
  rssAfterWarmup: number;
  rssAtEnd: number;
  byAgent: Record<string, number>;
  /** Records that are not what they must be at the end. */
  inconsistent: string[];
  /** Processes of any task still alive at the end. */
  leftoverProcesses: number;
  unhandled: string[];
  integrity: string;
  finalRunOk: boolean;
}

function rss(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage.rss() / MiB;
}

/** What must hold of one task's record at the end, or why it does not. */
function check(record: TaskRecord, expected: TaskStatus | undefined, logBytes: number): string | undefined {
  const where = `task ${record.id} (${record.agent})`;
  if (!isTerminal(record.status)) return `${where} is still ${record.status}`;
  if (expected !== undefined && record.status !== expected) return `${where} ended ${record.status}, expected ${expected}: ${record.errorMessage ?? ""}`.slice(0, 300);
  if (record.outputBytes !== logBytes) return `${where} records ${record.outputBytes} output bytes, its log has ${logBytes}`;
  if (record.outputBytes > CAP) return `${where} stored ${record.outputBytes} bytes, over the ${CAP} cap`;
  if (record.status !== "lost") {
    const usage = record.usage;
    if (!usage || ![usage.input, usage.output, usage.cost, usage.turns].every((n) => Number.isFinite(n) && n >= 0)) return `${where} has usage ${JSON.stringify(usage)}`;
  }
  if (record.agent === "liar" && (record.usage?.input !== 7 || record.usage.output !== 3)) return `${where} counted ${JSON.stringify(record.usage)}`;
  return undefined;
}

export async function soakTasks(options: { tasks: number; batch?: number; seed?: number; log?: (line: string) => void }): Promise<TaskSoakReport> {
  const { tasks, batch = 10, seed = 11, log } = options;
  const random = prng(seed);
  const totalWeight = TASK_KINDS.reduce((sum, kind) => sum + kind.weight, 0);
  const pick = (i: number): TaskKind => {
    if (i < TASK_KINDS.length) return TASK_KINDS[i]!;
    let r = random() * totalWeight;
    for (const kind of TASK_KINDS) if ((r -= kind.weight) < 0) return kind;
    return TASK_KINDS[0]!;
  };
  const dataDir = mkdtempSync(join(tmpdir(), "codemode-soak-tasks-"));
  const unhandled: string[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(String((reason as Error)?.stack ?? reason));
  process.on("unhandledRejection", onUnhandled);
  const cm = await createCodemode({
    dataDir,
    cwd: dataDir,
    agentDirs: [],
    agents: TASK_KINDS.map((kind) => kind.agent),
    tasks: { maxOutputBytes: CAP, maxRunning: 8, killGraceMs: 500 },
    limits: { timeoutMs: 120_000 },
    workers: { max: 3, min: 1 },
  });
  const expected = new Map<string, TaskStatus>();
  const byAgent: Record<string, number> = {};
  const samples: TaskSoakReport["samples"] = [];
  const started = performance.now();
  let rssAfterWarmup = 0;
  try {
    for (let done = 0; done < tasks; ) {
      const kinds = Array.from({ length: Math.min(batch, tasks - done) }, (_, b) => pick(done + b));
      // One program per batch: spawn in the background, stop the ones that run forever, poll, read.
      const program = `
        const kinds = ${JSON.stringify(kinds.map((k) => ({ agent: k.agent.name, stop: k.stop === true, task: String(400 + Math.floor(random() * 4500)) })))};
        const spawned = [];
        for (const k of kinds) spawned.push(await tools.ptc_subagent({ agent: k.agent, task: k.task, background: true }));
        for (const [i, k] of kinds.entries()) if (k.stop) {
          while ((await tools.ptc_task_output({ task_id: spawned[i].task_id })).status === "queued") await sleep(20);
          await tools.ptc_task_stop({ task_id: spawned[i].task_id, reason: "soak" });
        }
        const ids = spawned.map((s) => s.task_id);
        for (;;) {
          const pages = [];
          for (const id of ids) pages.push(await tools.ptc_task_output({ task_id: id }));
          if (pages.every((p) => !["queued", "running", "stopping"].includes(p.status))) return ids;
          await sleep(50);
        }`;
      const result = await cm.run(program);
      if (result.structuredContent.status !== "ok")
        throw new Error(
          `soak program failed: ${result.content
            .map((c) => c.text)
            .join("\n")
            .slice(0, 2000)}`,
        );
      const ids = result.structuredContent.value as string[];
      ids.forEach((id, i) => {
        expected.set(id, kinds[i]!.expect);
        byAgent[kinds[i]!.agent.name] = (byAgent[kinds[i]!.agent.name] ?? 0) + 1;
      });
      done += ids.length;
      if (rssAfterWarmup === 0 && done >= Math.min(100, tasks)) {
        rssAfterWarmup = rss();
        samples.push({ tasks: done, rssMiB: rssAfterWarmup });
        log?.(`tasks ${done}: rss ${rssAfterWarmup.toFixed(1)} MiB (after warm-up)`);
      } else if (done % 100 === 0 || done === tasks) {
        const now = rss();
        samples.push({ tasks: done, rssMiB: now });
        log?.(`tasks ${done}: rss ${now.toFixed(1)} MiB, ${((performance.now() - started) / 1000).toFixed(1)} s`);
      }
    }
    const final = await cm.run(`text("still fine"); return (await tools.ptc_task_list({ limit: 1 })).count`);
    const rssAtEnd = rss();
    // Every record, read back from the data dir as another process would.
    const inconsistent: string[] = [];
    const page = cm.tasks.list({ limit: 10_000 });
    if (page.total !== tasks) inconsistent.push(`the data dir holds ${page.total} tasks, ${tasks} were spawned`);
    let leftoverProcesses = 0;
    for (const record of page.records) {
      let logBytes = 0;
      try {
        logBytes = statSync(join(dataDir, "tasks", `${record.id}.log`)).size;
      } catch {
        // No log: no output.
      }
      const problem = check(record, expected.get(record.id), logBytes);
      if (problem && inconsistent.length < 50) inconsistent.push(problem);
    }
    // Stragglers (the holders' grandchildren) are stopped with their tasks; give SIGKILL its grace.
    for (let i = 0; i < 40; i++) {
      leftoverProcesses = page.records.reduce((n, r) => n + findTaskProcesses(r.id, undefined).length, 0);
      if (leftoverProcesses === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const db = new Database(join(dataDir, "tasks.db"), { readonly: true });
    const integrity = String(db.pragma("integrity_check", { simple: true }));
    db.close();
    return {
      tasks,
      seconds: (performance.now() - started) / 1000,
      samples,
      rssAfterWarmup,
      rssAtEnd,
      byAgent,
      inconsistent,
      leftoverProcesses,
      unhandled,
      integrity,
      finalRunOk: final.structuredContent.status === "ok" && final.structuredContent.value === tasks,
    };
  } finally {
    await cm.close();
    process.off("unhandledRejection", onUnhandled);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export function taskSoakFailures(report: TaskSoakReport): string[] {
  const ratio = report.rssAtEnd / report.rssAfterWarmup;
  return [
    ratio > 1.5 ? `RSS grew ${ratio.toFixed(2)}x` : "",
    report.inconsistent.length ? `${report.inconsistent.length} records are inconsistent: ${report.inconsistent.slice(0, 3).join("; ")}` : "",
    report.leftoverProcesses ? `${report.leftoverProcesses} task processes still run` : "",
    report.unhandled.length ? `${report.unhandled.length} unhandled rejections` : "",
    report.integrity === "ok" ? "" : `the database is not whole: ${report.integrity}`,
    report.finalRunOk ? "" : "the final run failed",
  ].filter(Boolean);
}

async function main(): Promise<void> {
  const tasks = Number(process.argv[2] ?? 1000);
  const report = await soakTasks({ tasks, log: (line) => console.log(line) });
  console.log(JSON.stringify({ ...report, samples: undefined }, null, 2));
  console.log(
    `RSS after ${tasks} tasks: ${report.rssAtEnd.toFixed(1)} MiB = ${(report.rssAtEnd / report.rssAfterWarmup).toFixed(2)}x RSS after warm-up (${report.rssAfterWarmup.toFixed(1)} MiB); limit 1.5x`,
  );
  const failures = taskSoakFailures(report);
  if (failures.length) {
    console.error(`task soak FAILED: ${failures.join("; ")}`);
    process.exitCode = 1;
  } else {
    console.log("task soak passed");
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
