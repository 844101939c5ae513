// Soak: thousands of mixed runs on one codemode instance — benign, failing, hostile, timed out,
// aborted and concurrent — sampling the host's RSS and heap. The wall holds if every run ends
// with its expected kind, nothing escapes as an unhandled rejection, no run reports a sandbox
// failure, and RSS after all runs stays within 1.5x of RSS after the first 100.
//
//   npm run build && node --expose-gc dist/bench/soak.js [runs=10000] [tasks=1000]
//
// After the runs it soaks the task host too (bench/soak-tasks.ts: 1,000 subagent tasks with large
// and hostile outputs). test/hostile/soak.test.ts runs the same mix 1,000 times, and
// test/tasks/soak.test.ts the task mix with 40 tasks.
import { pathToFileURL } from "node:url";
import { prng } from "./prng.js";
import { createCodemode, defineTool, z, type Codemode, type RunResult } from "../src/index.js";
import { soakTasks, taskSoakFailures } from "./soak-tasks.js";

export interface SoakSample {
  runs: number;
  rssMiB: number;
  heapMiB: number;
}

export interface SoakReport {
  runs: number;
  seconds: number;
  samples: SoakSample[];
  /** Runs by kind of program, and outcomes that did not match what the kind must give. */
  kinds: Record<string, number>;
  mismatches: string[];
  sandboxFailures: number;
  unhandled: string[];
  moduleAborts: number;
  rssAfter100: number;
  rssAtEnd: number;
  /** Workers replaced because they held more memory than warm sessions may keep (engine internals). */
  workersReplaced: number;
  finalBenignOk: boolean;
}

interface Kind {
  name: string;
  weight: number;
  /** Run it and return a mismatch description, or undefined when the outcome is right. */
  run(run: Run, i: number): Promise<string | undefined>;
}

type Run = (code: string, options?: Parameters<Codemode["run"]>[1]) => Promise<RunResult>;

const tools = [
  defineTool({ name: "echo", description: "Returns its input.", input: z.object({}).passthrough(), output: z.object({}).passthrough(), execute: async (input) => input }),
  defineTool({
    name: "slow",
    description: "Waits ms unless cancelled.",
    input: z.object({ ms: z.number() }),
    output: z.object({ done: z.boolean() }),
    execute: ({ ms }, ctx) =>
      new Promise<{ done: boolean }>((resolve) => {
        const timer = setTimeout(() => resolve({ done: true }), ms);
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          resolve({ done: false });
        });
      }),
  }),
  defineTool({
    name: "polluted",
    description: "Returns __proto__ keys.",
    input: z.object({}),
    output: z.object({}).passthrough(),
    execute: async () => JSON.parse('{"__proto__":{"polluted":1},"ok":true}') as Record<string, unknown>,
  }),
];

function expectOk(result: RunResult, value: unknown): string | undefined {
  const sc = result.structuredContent;
  if (sc.status !== "ok" || JSON.stringify(sc.value) !== JSON.stringify(value)) return `expected ok ${JSON.stringify(value)}, got ${JSON.stringify(sc).slice(0, 300)}`;
  return undefined;
}

function expectKind(result: RunResult, kinds: string[]): string | undefined {
  const kind = result.structuredContent.error?.kind;
  if (!kind || !kinds.includes(kind)) return `expected ${kinds.join("|")}, got ${JSON.stringify(result.structuredContent).slice(0, 300)}`;
  return undefined;
}

const session = (i: number) => `soak-${i % 6}`;

export const KINDS: Kind[] = [
  {
    name: "benign",
    weight: 40,
    run: async (run, i) => expectOk(await run(`text("hi ${i}"); return (await tools.echo({ i: ${i} })).i`, { session: session(i) }), i),
  },
  {
    name: "parallel-tools",
    weight: 8,
    run: async (run, i) => expectOk(await run(`const r = await Promise.all([1, 2, 3, 4, 5].map((n) => tools.echo({ n }))); return r.map((x) => x.n)`, { session: session(i) }), [1, 2, 3, 4, 5]),
  },
  {
    name: "store-load",
    weight: 5,
    run: async (run, i) => expectOk(await run(`store("k", { i: ${i} }); return load("k").i`, { session: session(i) }), i),
  },
  { name: "exception", weight: 8, run: async (run, i) => expectKind(await run(`throw new Error("boom ${i}")`, { session: session(i) }), ["exception"]) },
  { name: "syntax", weight: 3, run: async (run, i) => expectKind(await run(`return (${i}`, { session: session(i) }), ["syntax"]) },
  { name: "busy-timeout", weight: 4, run: async (run, i) => expectKind(await run(`while (true) {}`, { session: session(i), timeoutMs: 40 }), ["timeout"]) },
  { name: "sleep-timeout", weight: 4, run: async (run, i) => expectKind(await run(`await sleep(1e9)`, { session: session(i), timeoutMs: 30 }), ["timeout"]) },
  { name: "microtask-flood", weight: 2, run: async (run, i) => expectKind(await run(`for (;;) await 0`, { session: session(i), timeoutMs: 40 }), ["timeout"]) },
  { name: "deadlock", weight: 3, run: async (run, i) => expectKind(await run(`await new Promise(() => {})`, { session: session(i) }), ["timeout"]) },
  {
    name: "abort-pending-tool",
    weight: 4,
    run: async (run, i) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 10);
      return expectKind(await run(`await tools.slow({ ms: 5000 })`, { session: session(i), signal: controller.signal }), ["aborted"]);
    },
  },
  {
    name: "abort-busy",
    weight: 3,
    run: async (run, i) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 10);
      return expectKind(await run(`while (true) {}`, { session: session(i), signal: controller.signal }), ["aborted"]);
    },
  },
  {
    name: "dangling",
    weight: 4,
    run: async (run, i) => expectOk(await run(`tools.slow({ ms: 5000 }); setTimeout(() => tools.echo({}), 5); return ${i}`, { session: session(i) }), i),
  },
  {
    name: "pollution",
    weight: 4,
    run: async (run, i) =>
      expectOk(
        await run(`const r = await tools.polluted({}); Object.prototype.x = 1; await tools.echo(JSON.parse('{"__proto__":{"y":1}}')); return [r.ok, typeof ({}).polluted]`, {
          session: session(i),
        }),
        [true, "undefined"],
      ),
  },
  {
    name: "call-storm",
    weight: 2,
    run: async (run, i) =>
      expectKind(await run(`await Promise.all(Array.from({ length: 60 }, () => tools.echo({}).catch(() => 0)))`, { session: session(i), limits: { maxToolCalls: 50 } }), ["call_limit"]),
  },
  { name: "text-flood", weight: 2, run: async (run, i) => expectOk(await run(`for (let i = 0; i < 200; i++) text("z".repeat(1000)); return 1`, { session: session(i) }), 1) },
  { name: "stack", weight: 2, run: async (run, i) => expectKind(await run(`function r() { return r() } r()`, { session: session(i) }), ["stack"]) },
  // Memory exhaustion keeps a session's instance at its high-water mark: one session for all of it.
  { name: "memory", weight: 0.3, run: async (run) => expectKind(await run(`const a = []; for (;;) a.push("x".repeat(1 << 16) + a.length)`, { session: "soak-hog", timeoutMs: 5000 }), ["memory"]) },
  // A builtin that never polls the interrupt handler: the host terminates the worker.
  { name: "hard-stop", weight: 0.1, run: async (run, i) => expectKind(await run(`new Array(1e8).join("x")`, { session: session(i), timeoutMs: 100 }), ["timeout"]) },
];

function sample(runs: number): SoakSample {
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  return { runs, rssMiB: usage.rss / 1048576, heapMiB: usage.heapUsed / 1048576 };
}

export async function soak(options: { runs: number; seed?: number; concurrency?: number; sampleEvery?: number; log?: (line: string) => void }): Promise<SoakReport> {
  const { runs, seed = 6, concurrency = 4, sampleEvery = 1000, log } = options;
  const random = prng(seed);
  const totalWeight = KINDS.reduce((sum, kind) => sum + kind.weight, 0);
  const pick = (i: number): Kind => {
    // The first runs go through every kind once, so the baseline after 100 runs has seen them all.
    if (i < KINDS.length) return KINDS[i];
    let r = random() * totalWeight;
    for (const kind of KINDS) if ((r -= kind.weight) < 0) return kind;
    return KINDS[0];
  };

  const unhandled: string[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(String((reason as Error)?.stack ?? reason));
  process.on("unhandledRejection", onUnhandled);
  // A WASM module abort prints "Aborted(…)" from its worker, forwarded to this process's stderr.
  let moduleAborts = 0;
  const stderrWrite = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (String(chunk).includes("Aborted(")) moduleAborts++;
    return (stderrWrite as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;

  const cm = await createCodemode({ tools, limits: { timeoutMs: 2000 }, workers: { max: 3, min: 1 } });
  const kinds: Record<string, number> = {};
  const mismatches: string[] = [];
  let sandboxFailures = 0;
  const samples: SoakSample[] = [];
  const started = performance.now();
  let rssAfter100 = 0;
  const counted: Run = async (code, runOptions) => {
    const result = await cm.run(code, runOptions);
    if (result.structuredContent.error?.kind === "sandbox") sandboxFailures++;
    return result;
  };
  try {
    let i = 0;
    while (i < runs) {
      // Every fifth step runs a batch at once; the rest one at a time.
      const batch = i % 5 === 4 ? Math.min(concurrency, runs - i) : 1;
      const jobs: Promise<void>[] = [];
      for (let b = 0; b < batch; b++, i++) {
        const kind = pick(i);
        const index = i;
        kinds[kind.name] = (kinds[kind.name] ?? 0) + 1;
        jobs.push(
          kind.run(counted, index).then((mismatch) => {
            if (mismatch && mismatches.length < 50) mismatches.push(`run ${index} (${kind.name}): ${mismatch}`);
          }),
        );
      }
      await Promise.all(jobs);
      if (rssAfter100 === 0 && i >= 100) {
        const s = sample(i);
        rssAfter100 = s.rssMiB;
        samples.push(s);
        log?.(`runs ${i}: rss ${s.rssMiB.toFixed(1)} MiB, heap ${s.heapMiB.toFixed(1)} MiB`);
      } else if (Math.floor(i / sampleEvery) !== Math.floor((i - batch) / sampleEvery)) {
        const s = sample(i);
        samples.push(s);
        log?.(`runs ${i}: rss ${s.rssMiB.toFixed(1)} MiB, heap ${s.heapMiB.toFixed(1)} MiB, ${((performance.now() - started) / 1000).toFixed(1)} s`);
      }
    }
    const final = await cm.run(`text("still fine"); return (await tools.echo({ done: true })).done`);
    const end = sample(runs);
    samples.push(end);
    return {
      runs,
      seconds: (performance.now() - started) / 1000,
      samples,
      kinds,
      mismatches,
      sandboxFailures,
      unhandled,
      moduleAborts,
      rssAfter100,
      rssAtEnd: end.rssMiB,
      workersReplaced: (cm as unknown as { engine: { workersReplaced: number } }).engine.workersReplaced,
      finalBenignOk: final.structuredContent.status === "ok" && final.structuredContent.value === true,
    };
  } finally {
    await cm.close();
    process.off("unhandledRejection", onUnhandled);
    process.stderr.write = stderrWrite;
  }
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 10_000);
  const tasks = Number(process.argv[3] ?? 1000);
  const report = await soak({ runs, sampleEvery: 1000, log: (line) => console.log(line) });
  console.log(JSON.stringify({ ...report, samples: undefined }, null, 2));
  const ratio = report.rssAtEnd / report.rssAfter100;
  console.log(`RSS after ${runs} runs: ${report.rssAtEnd.toFixed(1)} MiB = ${ratio.toFixed(2)}x RSS after 100 (${report.rssAfter100.toFixed(1)} MiB); limit 1.5x`);
  const failures = [
    ratio > 1.5 ? `RSS grew ${ratio.toFixed(2)}x` : "",
    report.mismatches.length ? `${report.mismatches.length} runs ended with the wrong outcome` : "",
    report.sandboxFailures ? `${report.sandboxFailures} sandbox failures` : "",
    report.unhandled.length ? `${report.unhandled.length} unhandled rejections` : "",
    report.moduleAborts ? `${report.moduleAborts} WASM module aborts` : "",
    report.finalBenignOk ? "" : "the final benign run failed",
  ].filter(Boolean);
  if (tasks > 0) {
    const taskReport = await soakTasks({ tasks, log: (line) => console.log(line) });
    console.log(JSON.stringify({ ...taskReport, samples: undefined }, null, 2));
    console.log(
      `RSS after ${tasks} tasks: ${taskReport.rssAtEnd.toFixed(1)} MiB = ${(taskReport.rssAtEnd / taskReport.rssAfterWarmup).toFixed(2)}x RSS after warm-up (${taskReport.rssAfterWarmup.toFixed(1)} MiB); limit 1.5x`,
    );
    failures.push(...taskSoakFailures(taskReport));
  }
  if (failures.length) {
    console.error(`soak FAILED: ${failures.join("; ")}`);
    process.exitCode = 1;
  } else {
    console.log("soak passed");
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
