// What tracing costs: a warm run and a sequential tool call with no provider registered (the
// default: one tracer look-up per run, nothing per call), with a tracer whose sampler records
// nothing, and with one recording every span to memory (the real SDK). Ratios are to "no
// provider", measured in the same run, configurations interleaved so the machine's noise falls
// on all of them alike.
import { AlwaysOffSampler, BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { createCodemode, defineTool, z, type Codemode } from "../src/index.js";
import { resolveTracer } from "../src/tracing.js";

export interface TracingRow {
  name: string;
  none: number;
  sampledOut: number;
  recording: number;
  unit: "ms" | "µs";
}

const CALLS = 1000;

function median(samples: number[]): number {
  return [...samples].sort((a, b) => a - b)[samples.length >> 1]!;
}

export async function benchTracing(quick: boolean): Promise<{ rows: TracingRow[]; lookupNs: number }> {
  const echo = defineTool({ name: "echo", description: "echo", input: z.object({ i: z.number() }), output: z.object({ i: z.number() }), execute: async (input) => input });
  const exporter = new InMemorySpanExporter();
  const recording = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const sampledOut = new BasicTracerProvider({ sampler: new AlwaysOffSampler() });
  const open = (tracer?: ReturnType<BasicTracerProvider["getTracer"]>) => createCodemode({ tools: [echo], agentDirs: [], limits: { maxToolCalls: 1_000_000 }, ...(tracer ? { tracer } : {}) });
  const runtimes: Record<"none" | "sampledOut" | "recording", Codemode> = {
    none: await open(),
    sampledOut: await open(sampledOut.getTracer("bench")),
    recording: await open(recording.getTracer("bench")),
  };
  const run = async (cm: Codemode, code: string) => {
    const result = await cm.run(code);
    if (result.structuredContent.status !== "ok") throw new Error(`bench program failed: ${result.content[0]!.text}`);
    exporter.reset();
  };
  const measure = async (code: string, times: number, per: number): Promise<Record<keyof typeof runtimes, number>> => {
    const samples: Record<keyof typeof runtimes, number[]> = { none: [], sampledOut: [], recording: [] };
    for (const cm of Object.values(runtimes)) for (let i = 0; i < 5; i++) await run(cm, code);
    for (let i = 0; i < times; i++) {
      for (const key of Object.keys(runtimes) as Array<keyof typeof runtimes>) {
        const start = performance.now();
        await run(runtimes[key], code);
        samples[key].push((performance.now() - start) / per);
      }
    }
    return { none: median(samples.none), sampledOut: median(samples.sampledOut), recording: median(samples.recording) };
  };
  try {
    const rows: TracingRow[] = [];
    rows.push({ name: 'warm text("hi") (per run)', unit: "ms", ...(await measure(`text("hi")`, quick ? 20 : 200, 1)) });
    const perCall = await measure(`for (let i = 0; i < ${CALLS}; i++) await tools.echo({ i })`, quick ? 3 : 15, CALLS);
    rows.push({ name: "sequential tool call (per call)", unit: "µs", none: perCall.none * 1000, sampledOut: perCall.sampledOut * 1000, recording: perCall.recording * 1000 });
    // All that "no provider" adds to a run: the look-up that finds no tracer.
    const LOOKUPS = 1_000_000;
    const start = performance.now();
    for (let i = 0; i < LOOKUPS; i++) if (resolveTracer(undefined) !== undefined) throw new Error("a provider is registered");
    const lookupNs = ((performance.now() - start) / LOOKUPS) * 1e6;
    return { rows, lookupNs };
  } finally {
    await Promise.all(Object.values(runtimes).map((cm) => cm.close()));
    await recording.shutdown();
    await sampledOut.shutdown();
  }
}
