// budget(): what is left of a run's limits, so a long program can stop early and print what it has.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, defineTool, z, type Codemode } from "../../src/index.js";

const ping = defineTool({ name: "ping", description: "Answers.", input: z.object({}), output: z.object({ ok: z.boolean() }), execute: async () => ({ ok: true }) });

let cm: Codemode;
beforeAll(async () => {
  cm = await createCodemode({ tools: [ping], limits: { maxToolCalls: 10, outputBudget: 1_000 } });
});
afterAll(async () => {
  await cm.close();
});

describe("budget()", () => {
  it("counts down milliseconds, tool calls and output bytes", async () => {
    const result = await cm.run(`const before = budget(); await tools.ping({}); await tools.ping({}); text("héllo"); text("x"); const after = budget(); return { before, after }`, {
      timeoutMs: 5_000,
    });
    const { before, after } = result.structuredContent.value as Record<string, { ms_left: number; tool_calls_left: number; output_bytes_left: number }>;
    expect(Object.keys(before!)).toStrictEqual(["ms_left", "tool_calls_left", "output_bytes_left"]);
    expect(before!.tool_calls_left).toBe(10);
    expect(after!.tool_calls_left).toBe(8);
    // "héllo" is 6 bytes, the newline joining it to "x" one more.
    expect(before!.output_bytes_left).toBe(1_000);
    expect(after!.output_bytes_left).toBe(1_000 - 8);
    expect(before!.ms_left).toBeGreaterThan(0);
    expect(before!.ms_left).toBeLessThanOrEqual(5_000);
    expect(after!.ms_left).toBeLessThanOrEqual(before!.ms_left);
  });

  it("lets a long program stop before its limits and print what it has", async () => {
    const result = await cm.run(`const done = []; while (budget().tool_calls_left > 2) done.push((await tools.ping({})).ok); text(done.length + " calls, stopped in time"); return budget()`);
    expect(result.structuredContent.status).toBe("ok");
    expect(result.content[0]!.text.split("\n\n")[0]).toBe("8 calls, stopped in time");
    expect(result.structuredContent.value).toMatchObject({ tool_calls_left: 2 });
  });

  it("is read-only like the rest of the guest API", async () => {
    const result = await cm.run(`"use strict"; let threw = false; try { budget = () => 1 } catch { threw = true } return [threw, typeof budget().ms_left]`);
    expect(result.structuredContent.value).toStrictEqual([true, "number"]);
  });
});
