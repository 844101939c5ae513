// Runs a slice of the hostile programs with the checks every one of them must pass.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Codemode, RunResult } from "../../src/index.js";
import { expectBenignRun, expectNoHostLeak, expectPrototypesUnchanged, hostFaults, hostileCodemode, log } from "./harness.js";
import { PROGRAMS, type Category, type HostileProgram } from "./programs.js";

function matches(actual: string, fragments: (string | RegExp)[] | undefined, what: string): void {
  for (const fragment of fragments ?? []) {
    if (typeof fragment === "string") expect(actual, what).toContain(fragment);
    else expect(actual, what).toMatch(fragment);
  }
}

export async function runHostile(cm: Codemode, program: HostileProgram): Promise<RunResult> {
  const timeoutMs = program.timeoutMs ?? 1000;
  const before = { inputs: log.inputs.length, counter: log.counter, aborted: log.aborted };
  const controller = new AbortController();
  const timer = program.abortAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), program.abortAfterMs);
  const started = performance.now();
  const result = await cm.run(program.code, { timeoutMs, signal: controller.signal, ...(program.limits ? { limits: program.limits } : {}) });
  const elapsed = performance.now() - started;
  clearTimeout(timer);
  const sc = result.structuredContent;
  const summary = JSON.stringify(sc).slice(0, 600);

  // The contract's own bound: every run ends within its deadline + 1 s.
  expect(elapsed, `wall time of "${program.name}"`).toBeLessThan(timeoutMs + 1000);
  expect(sc.status, summary).toBe(program.expect.status);
  expect(result.isError === true, summary).toBe(program.expect.status === "error");
  if (program.expect.kind) expect(sc.error?.kind, summary).toBe(program.expect.kind);
  if (program.expect.status === "ok") expect(sc.error, summary).toBeUndefined();
  matches(sc.error?.message ?? "", program.expect.message, summary);
  if (program.expect.value instanceof RegExp) expect(String(sc.value), summary).toMatch(program.expect.value);
  else if (program.expect.value !== undefined) expect(sc.value, summary).toEqual(program.expect.value);
  matches(result.content[0]?.text ?? "", program.expect.text, "content");
  if (program.expect.warning) matches(result.details.warnings.join("\n"), program.expect.warning, "warnings");

  if (program.settleMs) await new Promise((resolve) => setTimeout(resolve, program.settleMs));
  program.check?.(result, before);
  // One budget over every byte the model sees, failure line and receipt included.
  expect(Buffer.byteLength(result.content.map((block) => block.text).join("")), "content bytes").toBeLessThanOrEqual(40_000);
  // Whoever the host hands the result to (an MCP client, --json) must be able to serialise it.
  expect(() => JSON.stringify(result)).not.toThrow();
  expectNoHostLeak(result);
  expectPrototypesUnchanged();
  if (program.after) {
    const follow = await cm.run(program.after.code, { timeoutMs: 5000 });
    expect(follow.structuredContent.value, JSON.stringify(follow.structuredContent)).toEqual(program.after.value);
  }
  await expectBenignRun(cm);
  return result;
}

export function hostileSuite(categories: Category[]): void {
  const programs = PROGRAMS.filter((p) => categories.includes(p.category));
  describe(`hostile programs: ${categories.join(", ")}`, () => {
    let cm: Codemode;
    beforeAll(async () => {
      cm = await hostileCodemode();
      // The deadline + 1 s bound below is the sandbox's. A process's first syntax error also loads
      // TypeScript (the retry as TypeScript) and acorn (the diagnosis), once: up to ~1.5 s on a
      // loaded machine, which is the host's own start-up and not any one run's. Loaded here first.
      await cm.run("const = ;", { timeoutMs: 5000 });
    });
    afterAll(async () => {
      await cm?.close();
      expect(hostFaults).toEqual([]);
    });
    for (const program of programs) {
      it(`[${program.category}] ${program.name}`, async () => {
        await runHostile(cm, program);
      });
    }
  });
}
