// A program that squeezes its heap to the cap, then hands the host strings: what crosses must be
// whole or the run must end as out of memory; nothing half-read is acted on (a session file held
// `"k": ` with no value, a run's value read as "" made cm.run reject), and nothing the host writes
// lands outside the heap (the instance trapped later with "memory access out of bounds").
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, defineTool, z, type Codemode } from "../../src/index.js";
import { expectBenignRun, hostFaults, hostileCodemode } from "./harness.js";

/** Fills the heap with 1 MiB blocks, then 4 KiB ones, then frees a hundred of the small: a little room, scattered. */
const SQUEEZE = `const big = [], small = [];
try { for (;;) big.push(new ArrayBuffer(1 << 20)); } catch {}
try { for (;;) small.push(new ArrayBuffer(4096)); } catch {}
for (let i = 0; i < 100; i++) small.pop();`;

describe("a squeezed heap", () => {
  let cm: Codemode;
  let dataDir: string;
  beforeAll(async () => {
    cm = await hostileCodemode();
    dataDir = mkdtempSync(join(tmpdir(), "codemode-squeeze-"));
  });
  afterAll(async () => {
    await cm?.close();
    rmSync(dataDir, { recursive: true, force: true });
    expect(hostFaults).toEqual([]);
  });

  it("never writes a half-read value into a session file: the next run of the session works", async () => {
    const persisted = await createCodemode({ dataDir, limits: { timeoutMs: 10_000 } });
    try {
      for (const [i, layout] of ["", "\n// a comment moves the layout\n"].entries()) {
        const session = `squeezed-${i}`;
        const result = await persisted.run(`${layout}${SQUEEZE}\nstore("k", "é".repeat(100 * 1024));\nreturn "stored"`, { session });
        // Either the value fitted (and is stored whole) or the run ran out of memory (and stored nothing).
        if (result.structuredContent.status === "error") expect(result.structuredContent.error?.kind).toBe("memory");
        const next = await persisted.run(`const v = load("k"); return v === undefined ? "none" : v.length`, { session });
        expect(next.structuredContent.status).toBe("ok");
        expect(next.structuredContent.value).toBe(result.structuredContent.status === "ok" ? 100 * 1024 : "none");
        const sessions = join(dataDir, "sessions");
        for (const file of existsSync(sessions) ? readdirSync(sessions).filter((name) => name.endsWith(".json")) : []) {
          expect(() => JSON.parse(readFileSync(join(dataDir, "sessions", file), "utf8"))).not.toThrow();
        }
      }
    } finally {
      await persisted.close();
    }
  });

  it("ends a run whose output or tool arguments cannot cross as out of memory, never as an engine failure", async () => {
    const calls: unknown[] = [];
    const record = defineTool({
      name: "record",
      description: "Keeps its input.",
      input: z.object({ v: z.string() }),
      execute: async ({ v }) => {
        calls.push(v);
        return { ok: true };
      },
    });
    const local = await createCodemode({ tools: [record], limits: { timeoutMs: 10_000 } });
    try {
      for (const tail of [`text("é".repeat(100 * 1024))`, `console.log("é".repeat(100 * 1024))`, `await tools.record({ v: "é".repeat(100 * 1024) })`]) {
        for (const layout of ["", "\n// another layout\n"]) {
          const result = await local.run(`${layout}${SQUEEZE}\n${tail}\nreturn "done"`);
          if (result.structuredContent.status === "error") expect(result.structuredContent.error?.kind).toBe("memory");
          else expect(result.structuredContent.value).toBe("done");
          expect((await local.run("return 1")).structuredContent.value).toBe(1);
        }
      }
      // A call either reached the tool whole or not at all.
      for (const v of calls) expect(v).toBe("é".repeat(100 * 1024));
    } finally {
      await local.close();
    }
  });

  it("drops a return value far over the crossing limit unread, with a warning, instead of failing the run", async () => {
    for (const mib of [20, 24]) {
      const result = await cm.run(`return "x".repeat(${mib} * 1024 * 1024)`, { timeoutMs: 10_000 });
      expect(result.structuredContent.status).toBe("ok");
      expect(Object.hasOwn(result.structuredContent, "value")).toBe(false);
      expect(result.details.warnings).toContain(`the return value is at least ${mib}.0 MiB of JSON, over the 8.0 MiB limit for one value crossing the sandbox wall; it was dropped`);
    }
    await expectBenignRun(cm);
  });

  it("keeps a flood of long console lines at their cut, and the program's text", async () => {
    // 200 lines of 4 MiB: each cut line kept its whole string alive, and the worker's heap ran out.
    const result = await cm.run(`text("before"); const s = "y".repeat(4 * 1024 * 1024); for (let i = 0; i < 200; i++) console.log(s); return "done"`, { timeoutMs: 30_000 });
    expect(result.structuredContent.status).toBe("ok");
    expect(result.content[0].text.split("\n\n")[0]).toBe("before");
    expect(result.details.console).toHaveLength(200);
    for (const line of result.details.console) expect(line.text).toBe(`${"y".repeat(2000)}…`);
    await expectBenignRun(cm);
  });

  it("refuses tool arguments nested deeper than the host passes on, before the tool runs", async () => {
    const result = await cm.run(`let o = []; for (let i = 0; i < 5000; i++) o = [o]; await tools.echo({ v: o })`, { timeoutMs: 10_000 });
    expect(result.structuredContent.error?.message).toBe("ToolError: tools.echo(): the argument is nested more than 2000 levels deep; pass flatter data (the tool did not run)");
    expect(result.details.calls.map((call) => call.status)).toStrictEqual(["error"]);
    await expectBenignRun(cm);
  });

  it("names a long store key by its head", async () => {
    const result = await cm.run(`try { store("k".repeat(1e6), "x".repeat(300 * 1024)) } catch (e) { return e.message }`, { session: "long-key", timeoutMs: 10_000 });
    expect(result.structuredContent.value).toBe(`store("${"k".repeat(80)}"…): the value is 300.0 KiB of JSON; one stored value is limited to 256.0 KiB`);
  });
});
