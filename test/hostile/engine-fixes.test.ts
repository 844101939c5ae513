// Regressions the hostile suite found in the engine, each pinned by the program that showed it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, type Codemode } from "../../src/index.js";
import { expectBenignRun, hostFaults, hostileCodemode } from "./harness.js";

describe("engine regressions found by hostile programs", () => {
  let cm: Codemode;
  let fresh = 0;
  const session = () => `fixes-${process.pid}-${fresh++}`;
  beforeAll(async () => {
    cm = await hostileCodemode();
  });
  afterAll(async () => {
    await cm?.close();
    expect(hostFaults).toEqual([]);
  });

  it("creates promises while the heap grows: no host TypeError about a detached ArrayBuffer", async () => {
    // Linear memory that grew under quickjs-emscripten's newPromise left it reading a detached
    // view: the guest caught a V8 TypeError and the leaked handles aborted the module on dispose.
    for (const delay of [1e6, 0]) {
      const result = await cm.run(`for (let i = 0; i < 10000; i++) setTimeout(() => {}, ${delay}); return "scheduled"`, { session: session(), timeoutMs: 10_000 });
      expect(result.structuredContent).toMatchObject({ status: "ok", value: "scheduled" });
      // The program ends before any of them fires: nothing else goes wrong, and it is told.
      expect(result.details.warnings).toEqual([
        "10000 setTimeout callbacks had not run when the program ended and never will: to run them, await sleep(ms) (or a promise they resolve) before the program ends; clearTimeout what should not run",
      ]);
    }
    await expectBenignRun(cm);
  });

  it("tells an out-of-memory null from a program's own throw null, also after an earlier OOM in the session", async () => {
    const s = session();
    const own = await cm.run("throw null", { session: s });
    expect(own.structuredContent.error).toEqual({
      kind: "exception",
      message: "null",
      line: 1,
      column: 1,
      hint: "the program threw a value that is not an Error, which carries no line or stack: throw new Error(message) instead",
    });
    const oom = await cm.run("function fill() { const a = []; for (;;) a.push({ x: a.length }) } fill()", { session: s, timeoutMs: 5000 });
    expect(oom.structuredContent.error?.kind).toBe("memory");
    expect(oom.structuredContent.error?.message).toMatch(/out of memory|memory limit/);
    const ownAgain = await cm.run("throw null", { session: s });
    expect(ownAgain.structuredContent.error).toEqual({
      kind: "exception",
      message: "null",
      line: 1,
      column: 1,
      hint: "the program threw a value that is not an Error, which carries no line or stack: throw new Error(message) instead",
    });
    await expectBenignRun(cm);
  });

  it("ends every wait at its deadline, never through the host's hard stop", async () => {
    // The deadline timer could fire a millisecond before Date.now() passed the deadline; the loop
    // then waited for nothing and the host killed the worker 400 ms later ("inside a long builtin").
    for (let i = 0; i < 20; i++) {
      const result = await cm.run("await sleep(60_000)", { timeoutMs: 100 });
      expect(result.structuredContent.error).toEqual({
        kind: "timeout",
        message: "the program ran past its 100 ms deadline while waiting for 1 timer or sleep",
        hint: "stop before the deadline (check budget().ms_left), wait less, or pass a larger timeout",
      });
    }
  });

  it("carries NUL and lone surrogates exactly through text, console, store keys and tool errors", async () => {
    // The bridge read and wrote C strings: text("a\0b") showed "a", store("k\0x") and store("k")
    // were one key, "\ud800" and "\udc00" were one key, and a tool error "before\0after" arrived as "before".
    const result = await cm.run(
      `text("a\\u0000b|\\ud800|\\u{1F600}"); console.log("c\\u0000d", "\\udc00");
store("k\\u0000x", 1); store("k", 2); store("\\ud800", 3); store("\\udc00", 4);
let failure; try { await tools.fail({ kind: "nul" }) } catch (e) { failure = e.message }
return [load("k\\u0000x"), load("k"), load("\\ud800"), load("\\udc00"), failure]`,
      { session: session() },
    );
    expect(result.structuredContent.value).toEqual([1, 2, 3, 4, "before\u0000after"]);
    // What reaches a model is well-formed: a lone surrogate there becomes U+FFFD (the program's own values keep it).
    expect(result.content[0].text).toBe("a\u0000b|\ufffd|\u{1F600}\n\nWarnings:\n- the return value (29 bytes of JSON) is not shown because the program printed with text(); text() it to see it here");
    expect(result.details.console).toEqual([{ level: "log", text: "c\u0000d \ufffd" }]);
    const unknown = await cm.run(`tools["ec\\u0000ho"]({})`);
    expect(unknown.structuredContent.error?.message).toContain("tools.ec\u0000ho is not a tool");
  });

  it("describes a thrown error even when Object.prototype.toJSON is replaced, and names unreadable throws", async () => {
    const tampered = await cm.run(`Object.prototype.toJSON = function () { return "hacked" }; throw new Error("the real error")`);
    expect(tampered.structuredContent.error).toMatchObject({ kind: "exception", message: "Error: the real error", line: 1 });
    expect((await cm.run("throw { code: 1 }")).structuredContent.error).toEqual({
      kind: "exception",
      message: '{"code":1}',
      line: 1,
      column: 1,
      hint: "the program threw a value that is not an Error, which carries no line or stack: throw an Error with the fields on it instead, e.g. throw Object.assign(new Error(message), { code })",
    });
    const proxy = await cm.run(`throw new Proxy({}, { get() { throw new Error("nope") } })`);
    expect(proxy.structuredContent.error).toEqual({
      kind: "exception",
      message: "[a value JSON cannot show: nope]",
      line: 1,
      column: 1,
      hint: "the program threw a value that is not an Error, which carries no line or stack: throw new Error(message) instead",
    });
  });

  it("throws from setTimeout past the timer limit instead of silently never calling back", async () => {
    const result = await cm.run(`try { for (let i = 0; i < 20000; i++) setTimeout(() => {}, 1e6); return "scheduled" } catch (e) { return e.name + ": " + e.message }`);
    expect(result.structuredContent.value).toBe("RangeError: setTimeout(): too many pending timers (limit 10000 per run)");
  });

  it("recycles an instance whose heap a run exhausted instead of keeping its whole cap resident", async () => {
    // Linear memory never shrinks: four sessions that each hit the 64 MiB cap kept ~80 MiB apiece.
    const single = await createCodemode({ limits: { timeoutMs: 5000 }, workers: { max: 1, min: 1 } });
    try {
      await single.run("return 1");
      const before = process.memoryUsage().rss;
      for (let i = 0; i < 4; i++) {
        const result = await single.run(`const a = []; for (;;) a.push("x".repeat(1 << 16) + a.length)`, { session: `hog-${i}` });
        expect(result.structuredContent.error?.kind).toBe("memory");
      }
      for (let i = 0; i < 4; i++) expect((await single.run("return 2", { session: `hog-${i}` })).structuredContent.value).toBe(2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const grownMiB = (process.memoryUsage().rss - before) / 1048576;
      expect(grownMiB).toBeLessThan(200);
    } finally {
      await single.close();
    }
  });

  it("ends a flood of tiny text() calls at its deadline, without blocking the host", async () => {
    // Each piece used to cross and be spilled on its own: the host's main thread fell seconds
    // behind (a 5 s run ended at 7–10 s) and its timers, every other run's included, waited.
    let timerLate = 0;
    const scheduled = performance.now();
    const timer = new Promise<void>((resolve) =>
      setTimeout(() => {
        timerLate = performance.now() - scheduled - 1000;
        resolve();
      }, 1000),
    );
    const started = performance.now();
    const result = await cm.run(`for (;;) text("y")`, { timeoutMs: 4000 });
    const elapsed = performance.now() - started;
    await timer;
    expect(result.structuredContent.error).toMatchObject({ kind: "timeout", message: expect.stringMatching(/^the program ran past its 4000 ms deadline without yielding/) });
    expect(elapsed).toBeLessThan(5000);
    expect(timerLate).toBeLessThan(1000);
    expect(Buffer.byteLength(result.content[0].text)).toBeLessThanOrEqual(40_000);
  });

  it("reports a microtask flood that the deadline broke as a timeout, not as a deadlock", async () => {
    const result = await cm.run("function f() { Promise.resolve().then(f) } f(); await new Promise(() => {})", { timeoutMs: 300 });
    // A flood of jobs never yields to the host: it is the busy kind of timeout, with its fix.
    expect(result.structuredContent.error).toEqual({
      kind: "timeout",
      message: expect.stringMatching(/^the program ran past its 300 ms deadline without yielding: synchronous code ran for the last \d+ ms/),
      hint: "to wait, use await sleep(ms) instead of spinning; to stop in time, check budget().ms_left in long loops",
    });
  });
});
