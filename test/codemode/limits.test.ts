// Every limit of docs/limits.md crossed, each followed by a benign run on the same instance.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, type Codemode, type RunResult } from "../../src/index.js";
import { MAX_STACK_BYTES } from "../../src/codemode/limits.js";

const TIMEOUT = 1000;
const GiB = 1024 * 1024 * 1024;

const echo = { name: "echo", description: "Answers with its input's size", execute: async (input: { s?: string }) => String(input.s?.length ?? 0) };
const big = { name: "big", description: "Answers with n characters", execute: async (input: { n: number; unit?: string }) => (input.unit ?? "z").repeat(input.n) };

let cm: Codemode;
beforeAll(async () => {
  cm = await createCodemode({ tools: [echo, big], limits: { timeoutMs: TIMEOUT } });
});
afterAll(async () => {
  await cm.close();
});

afterEach(async () => {
  // The next run after any failure works, and the host stays small.
  const benign = await cm.run(`text("still fine"); return 1 + 1`);
  expect(benign.structuredContent).toMatchObject({ status: "ok", value: 2 });
  // The return value is not shown because the program printed; a warning after the output says so.
  expect(benign.content[0].text.split("\n\n")[0]).toBe("still fine");
  expect(process.memoryUsage().rss).toBeLessThan(GiB);
});

function expectFailure(result: RunResult, kind: string, within = TIMEOUT + 1000): void {
  expect(result.structuredContent.status).toBe("error");
  expect(result.structuredContent.error?.kind).toBe(kind);
  expect(result.isError).toBe(true);
  expect(result.structuredContent.duration_ms).toBeLessThan(within);
  expect(result.content[0].text.startsWith(`Script failed (${kind}): `)).toBe(true);
}

describe("deadline", () => {
  it("stops a busy loop", async () => {
    const result = await cm.run(`while (true) {}`);
    expectFailure(result, "timeout");
    expect(result.structuredContent.error?.message).toMatch(
      /^the program ran past its 1000 ms deadline without yielding: synchronous code ran for the last \d+ ms \(a loop that never awaits, or a busy-wait\), so no timer or tool result could come in$/,
    );
    expect(result.structuredContent.error?.hint).toBe("to wait, use await sleep(ms) instead of spinning; to stop in time, check budget().ms_left in long loops (the loop at line 1)");
    expect(result.structuredContent.error?.line).toBe(1);
  });

  it("stops a microtask loop", async () => {
    expectFailure(await cm.run(`for (;;) { await 0 }`), "timeout");
  });

  it("ends a wait that nothing can settle at once", async () => {
    const result = await cm.run(`await new Promise(() => {})`);
    expectFailure(result, "timeout", TIMEOUT);
    expect(result.structuredContent.error?.message).toBe("the program is waiting for a promise that nothing can settle (no tool call, timer or job is pending)");
  });

  it("stops a program inside a long builtin by terminating its worker", async () => {
    const result = await cm.run(`new Array(1e8).join("x")`);
    // Either QuickJS refuses the size up front or the worker is terminated past the deadline.
    expect(["timeout", "memory"]).toContain(result.structuredContent.error?.kind);
    expect(result.structuredContent.duration_ms).toBeLessThan(TIMEOUT + 1000);
  });

  it("stops a sleep past the deadline and honours a per-run timeout", async () => {
    const result = await cm.run(`await sleep(60_000)`, { timeoutMs: 200 });
    expectFailure(result, "timeout", 1200);
    expect(result.structuredContent.error?.message).toBe("the program ran past its 200 ms deadline while waiting for 1 timer or sleep");
  });
});

describe("memory and stack", () => {
  it("refuses a 512 MiB string", async () => {
    expectFailure(await cm.run(`const s = 'x'.repeat(2 ** 29); text(s.length)`), "memory");
  });

  it("stops a doubling string", async () => {
    expectFailure(await cm.run(`let s = "x"; for (;;) s += s;`), "memory");
  });

  it("caps typed arrays and many objects for real", async () => {
    expectFailure(await cm.run(`const parts = []; for (let i = 0; i < 100; i++) parts.push(new Uint8Array(8 * 1024 * 1024)); text(parts.length)`), "memory");
    // Filling the cap with small objects takes ~300 ms of allocation: room for a loaded machine.
    expectFailure(await cm.run(`const a = []; for (;;) a.push({ i: a.length, s: "v" + a.length })`, { timeoutMs: 5_000 }), "memory", 6_000);
  });

  it("turns deep recursion into a catchable RangeError, then a stack failure", async () => {
    const caught = await cm.run(`function f(n) { return f(n + 1) + 1 } try { f(0) } catch (e) { return [e.name + ": " + e.message, e instanceof RangeError] }`);
    expect(caught.structuredContent.value).toStrictEqual(["InternalError: stack overflow", true]);
    const result = await cm.run(`function f(n) { return n >= 1e6 ? n : f(n + 1) } f(0)`);
    expectFailure(result, "stack");
    expect(result.structuredContent.error).toMatchObject({ line: 1 });
  });

  it("keeps the largest stack limit inside the engine's C stack: deep recursion is a stack failure, the next run works", async () => {
    const limits = { stackBytes: MAX_STACK_BYTES };
    const shallow = await cm.run(`function f() { return 1 } return f()`, { limits });
    expect(shallow.structuredContent).toMatchObject({ status: "ok", value: 1 });
    expectFailure(await cm.run(`function f(n) { return f(n + 1) + 1 } f(0)`, { limits }), "stack");
    await expect(cm.run("1", { limits: { stackBytes: MAX_STACK_BYTES + 1 } })).rejects.toThrow(
      `options.limits.stackBytes must be an integer from 65536 to ${MAX_STACK_BYTES}, got the number ${MAX_STACK_BYTES + 1}`,
    );
  });

  it("honours a smaller per-run memory limit", async () => {
    const result = await cm.run(`const a = new Uint8Array(20 * 1024 * 1024); return a.length`, { limits: { memoryBytes: 16 * 1024 * 1024 } });
    expectFailure(result, "memory");
  });
});

describe("calls and crossings", () => {
  it("ends the run past 1,000 tool calls", async () => {
    // A limit test, not a speed test: 1,000 round trips get room on a loaded machine.
    const result = await cm.run(`for (let i = 0; i < 2000; i++) await tools.echo({})`, { timeoutMs: 10_000 });
    expectFailure(result, "call_limit", 11_000);
    expect(result.structuredContent.tool_calls).toBe(1000);
    expect(result.structuredContent.error?.message).toBe("the program made more than 1000 tool calls (the per-run limit)");
  });

  it("ends the run past the limit even if the program swallows the rejection", async () => {
    const result = await cm.run(`for (let i = 0; i < 20; i++) { try { await tools.echo({}) } catch {} } return "kept going"`, { limits: { maxToolCalls: 5 } });
    expectFailure(result, "call_limit");
  });

  it("rejects a 20 MB argument before it reaches the tool", async () => {
    const result = await cm.run(`try { await tools.echo({ s: "x".repeat(20 * 1024 * 1024) }) } catch (e) { return { name: e.name, code: e.code, message: e.message } }`, { timeoutMs: 10_000 });
    // Building and measuring 20 MB in the guest can take over a second on a loaded machine: the limit under test is the crossing, not the deadline.
    expect(result.structuredContent.value).toStrictEqual({
      name: "RangeError",
      code: "crossing_limit",
      message: "tools.echo(): the argument is 20.0 MiB of JSON; one value crossing the sandbox wall is limited to 8.0 MiB",
    });
    expect(result.structuredContent.tool_calls).toBe(0);
  });

  it("rejects a result over the crossing limit with a clear error", async () => {
    const result = await cm.run(`try { await tools.big({ n: 9 * 1024 * 1024 }) } catch (e) { return { code: e.code, message: e.message } }`, { timeoutMs: 10_000 });
    expect(result.structuredContent.value).toStrictEqual({
      code: "crossing_limit",
      message: "tools.big() returned 9.0 MiB of JSON; one value crossing the sandbox wall is limited to 8.0 MiB",
    });
  });

  it("moves a 1 MB result into the guest", async () => {
    const result = await cm.run(`const s = await tools.big({ n: 1024 * 1024 }); return s.length`);
    expect(result.structuredContent.value).toBe(1024 * 1024);
  });

  it("moves a large result of multi-byte characters into the guest intact", async () => {
    const result = await cm.run(`const s = await tools.big({ n: 100000, unit: "é😀\\u0000x" }); return [s.length, s.slice(0, 5), s.slice(-5), s.indexOf("\\u0000")]`);
    expect(result.structuredContent.value).toStrictEqual([500000, "é😀\u0000x", "é😀\u0000x", 3]);
    const plain = await cm.run(`const s = await tools.big({ n: 200000, unit: "ж😀" }); return [s.length, s.slice(0, 3), s.slice(-3)]`);
    expect(plain.structuredContent.value).toStrictEqual([600000, "ж😀", "ж😀"]);
  });
});

describe("output and cancellation", () => {
  it("truncates 100 MB of text() to the budget", async () => {
    const result = await cm.run(`const chunk = "y".repeat(1024 * 1024); for (let i = 0; i < 100; i++) text(chunk)`, { timeoutMs: 20_000 });
    expect(result.structuredContent.status).toBe("ok");
    expect(Buffer.byteLength(result.content[0].text)).toBeLessThanOrEqual(40_000);
    expect(result.content[0].text).toContain("bytes of output cut; full output:");
  });

  it("aborts through an AbortSignal, also inside a long builtin", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const waiting = await cm.run(`await sleep(10_000)`, { signal: controller.signal, timeoutMs: 10_000 });
    expectFailure(waiting, "aborted");
    const busy = new AbortController();
    setTimeout(() => busy.abort(), 50);
    const spinning = await cm.run(`while (true) {}`, { signal: busy.signal, timeoutMs: 10_000 });
    expectFailure(spinning, "aborted");
  });

  it("aborts before the start when the signal is already aborted", async () => {
    const result = await cm.run(`text("never")`, { signal: AbortSignal.abort() });
    expectFailure(result, "aborted");
  });
});

describe("soak", () => {
  it("survives 2,000 mixed runs without host heap growth", { timeout: 240_000 }, async () => {
    const programs = [
      { code: `text("ok"); return 1`, options: {} },
      { code: `throw new Error("boom")`, options: {} },
      { code: `while (true) {}`, options: { timeoutMs: 30 } },
      { code: `await sleep(1000)`, options: { abortAfter: 5 } },
      { code: `await tools.echo({ s: "abc" }); return 2`, options: {} },
      { code: `let s = "x"; for (;;) s += s;`, options: {} },
    ];
    const heap: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const program = programs[i % programs.length];
      let signal: AbortSignal | undefined;
      if ("abortAfter" in program.options) {
        const controller = new AbortController();
        setTimeout(() => controller.abort(), program.options.abortAfter);
        signal = controller.signal;
      }
      const result = await cm.run(program.code, { signal, timeoutMs: "timeoutMs" in program.options ? program.options.timeoutMs : undefined });
      expect(result.structuredContent.error?.kind ?? "ok").not.toBe("sandbox");
      if (i === 200 || i === 1999) {
        global.gc?.();
        heap.push(process.memoryUsage().heapUsed);
      }
    }
    // A fixed bound: whatever one run leaves behind must not accumulate.
    expect(heap[1] - heap[0]).toBeLessThan(64 * 1024 * 1024);
  });
});

describe("the deadline of a run that waits for a busy pool", () => {
  it("counts the wait: a run still queued at its deadline ends there, one that starts late gets what is left", async () => {
    const single = await createCodemode({ workers: { max: 1, min: 1 } });
    try {
      await single.run("return 1");
      // The only worker is busy for the whole of the first run's 1,000 ms deadline.
      const busy = single.run("while (true) {}", { timeoutMs: 1000, session: "busy" });
      const queued = single.run("return 1", { timeoutMs: 300, session: "short" });
      const late = single.run("return budget().ms_left", { timeoutMs: 5000, session: "late" });
      expect((await busy).structuredContent.error?.kind).toBe("timeout");
      const short = await queued;
      expect(short.structuredContent.error?.kind).toBe("timeout");
      expect(short.structuredContent.error?.message).toMatch(
        /^the run waited \d+ ms for a free sandbox worker \(1 busy with other runs\) and its 300 ms deadline passed before the program started: run fewer programs at once, or give them a longer timeoutMs$/,
      );
      expect(short.structuredContent.tool_calls).toBe(0);
      // At least the busy run's 1,000 ms came off the late one's 5,000.
      const left = (await late).structuredContent.value as number;
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual(4000);
    } finally {
      await single.close();
    }
  });
});
