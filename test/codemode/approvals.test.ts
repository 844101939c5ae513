import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { approvalDigest, createCodemode, defineTool, z, type Codemode, type CodemodeOptions } from "../../src/index.js";

/** What the host saw: every execution, with the ctx it got. */
let executed: Array<{ tool: string; input: unknown; key: string | undefined }> = [];
const lookup = defineTool({
  name: "lookup",
  description: "Looks a value up",
  input: z.object({ q: z.string() }),
  output: z.object({ value: z.string() }),
  execute: async ({ q }, ctx) => {
    executed.push({ tool: "lookup", input: { q }, key: ctx.idempotencyKey });
    return { value: `v:${q}` };
  },
});
const gateKeys: Array<string | undefined> = [];
const deploy = defineTool({
  name: "deploy",
  description: "Deploys a build",
  approval: "required",
  input: z.object({ env: z.string() }),
  output: z.object({ deployed: z.string() }),
  execute: async ({ env }, ctx) => {
    executed.push({ tool: "deploy", input: { env }, key: ctx.idempotencyKey });
    return { deployed: env };
  },
});
const send = defineTool({
  name: "send",
  description: "Sends a message; only messages to outsiders need approval",
  approval: (input) => input.to !== "team",
  input: z.object({ to: z.string(), body: z.string() }),
  views: { compact: z.object({ sent: z.boolean() }), full: z.object({ sent: z.boolean(), to: z.string() }) },
  execute: async ({ to }, ctx) => {
    executed.push({ tool: "send", input: { to }, key: ctx.idempotencyKey });
    return { sent: true, to };
  },
});
// The gate sees the ctx too: its idempotency key is the one the tool gets once approved.
const probe = defineTool({
  name: "probe",
  description: "Gated; remembers the key the approval function saw",
  approval: (_input, ctx) => {
    gateKeys.push(ctx.idempotencyKey);
    return true;
  },
  input: z.object({}),
  output: z.object({ ok: z.boolean() }),
  execute: async (_input, ctx) => {
    executed.push({ tool: "probe", input: {}, key: ctx.idempotencyKey });
    return { ok: true };
  },
});

const slow = defineTool({
  name: "slow",
  description: "Answers after input.ms milliseconds",
  input: z.object({ ms: z.number() }),
  output: z.object({ waited: z.number() }),
  execute: async ({ ms }) => {
    executed.push({ tool: "slow", input: { ms }, key: undefined });
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { waited: ms };
  },
});

const open: Codemode[] = [];
const dirs: string[] = [];
async function make(options: CodemodeOptions = {}): Promise<Codemode> {
  const cm = await createCodemode({ tools: [lookup, deploy, send, probe, slow], workers: { max: 2 }, ...options });
  open.push(cm);
  return cm;
}
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cm-approvals-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  executed = [];
  gateKeys.length = 0;
  vi.restoreAllMocks();
});
afterAll(async () => {
  for (const cm of open) await cm.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const count = (tool: string) => executed.filter((e) => e.tool === tool).length;
const DEPLOY_PROD = approvalDigest("deploy", { env: "prod" });

const GATED = `
const before = await tools.lookup({ q: "build" });
try {
  const done = await tools.deploy({ env: "prod" });
  return { deployed: done.deployed, after: before.value };
} catch (e) {
  return { code: e.code, reason: e.reason, name: e.name };
}`;

describe("a gated call interrupts the program", () => {
  it("stops before the call, with the pending approval, a continuation and a plain account of who must decide", async () => {
    const cm = await make();
    const result = await cm.run(GATED);
    const sc = result.structuredContent;
    expect(typeof sc.continuation).toBe("string");
    expect(sc).toStrictEqual({
      status: "interrupted",
      pending_approvals: [{ approval_id: "call_2", tool: "deploy", input: { env: "prod" }, digest: DEPLOY_PROD }],
      continuation: sc.continuation,
      tool_calls: 2,
      duration_ms: sc.duration_ms,
    });
    expect(JSON.parse(JSON.stringify(sc))).toStrictEqual(sc);
    expect(Object.hasOwn(sc, "value")).toBe(false);
    expect(Object.hasOwn(sc, "error")).toBe(false);
    expect(Object.hasOwn(result, "isError")).toBe(false);
    expect(result.content[0]!.text).toBe(
      [
        "The program stopped before a call that needs a person's approval; nothing of it has run:",
        `- call_2: tools.deploy({"env":"prod"})`,
        `Ask the user to decide it (allow or deny), then resume: cm.resume(result.structuredContent.continuation, { approvals: { "call_2": "allow" } })`,
        `The program runs again from the start; the calls it completed before are answered from its record, not run again. "deny" makes the call reject with code "tool_denied", reason "approval_denied". { "decision": "allow", "remember": true } also allows the same call (same tool and input) for the rest of the session.`,
      ].join("\n"),
    );
    // Nothing of the gated call ran; the call before it ran once.
    expect(executed.map((e) => e.tool)).toStrictEqual(["lookup"]);
    expect(result.details.calls.map((c) => [c.tool, c.status, c.awaitingApproval])).toStrictEqual([
      ["lookup", "ok", undefined],
      ["deploy", "cancelled", "call_2"],
    ]);
  });

  it("resume allow: the result is exact, the call before the gate ran once, the gated call once", async () => {
    const cm = await make();
    const first = await cm.run(GATED);
    const result = await cm.resume(first.structuredContent.continuation!, { approvals: { call_2: "allow" } });
    expect(result.structuredContent).toStrictEqual({ status: "ok", value: { deployed: "prod", after: "v:build" }, tool_calls: 2, duration_ms: result.structuredContent.duration_ms });
    expect(result.content[0]!.text).toBe(JSON.stringify({ deployed: "prod", after: "v:build" }, null, 2));
    expect(count("lookup")).toBe(1);
    expect(count("deploy")).toBe(1);
    expect(result.details.calls.map((c) => [c.tool, c.status, c.replayed])).toStrictEqual([
      ["lookup", "ok", true],
      ["deploy", "ok", undefined],
    ]);
  });

  it("resume deny: the program's catch sees tool_denied / approval_denied and the tool never runs", async () => {
    const cm = await make();
    const first = await cm.run(GATED);
    const result = await cm.resume(first.structuredContent.continuation!, { approvals: { call_2: { decision: "deny", reason: "not on a Friday" } } });
    expect(result.structuredContent).toStrictEqual({
      status: "ok",
      value: { code: "tool_denied", reason: "approval_denied", name: "ToolError" },
      tool_calls: 2,
      duration_ms: result.structuredContent.duration_ms,
    });
    expect(count("deploy")).toBe(0);
    expect(count("lookup")).toBe(1);
    expect(result.details.calls[1]!.error).toBe(`tool "deploy" call denied: the person asked to approve it said no (not on a Friday); the tool did not run`);
  });

  it("resume without an answer for the call stops at it again; a resumed run can interrupt again, and keys stay the run's", async () => {
    const cm = await make();
    const code = `await tools.lookup({ q: "a" }); await tools.probe({}); await tools.lookup({ q: "b" }); await tools.probe({}); return "both";`;
    const first = await cm.run(code);
    expect(first.structuredContent.pending_approvals!.map((p) => p.approval_id)).toStrictEqual(["call_2"]);
    const again = await cm.resume(first.structuredContent.continuation!, {});
    expect(again.structuredContent.pending_approvals!.map((p) => p.approval_id)).toStrictEqual(["call_2"]);
    const second = await cm.resume(again.structuredContent.continuation!, { approvals: { call_2: "allow" } });
    expect(second.structuredContent.status).toBe("interrupted");
    expect(second.structuredContent.pending_approvals!.map((p) => p.approval_id)).toStrictEqual(["call_4"]);
    const done = await cm.resume(second.structuredContent.continuation!, { approvals: { call_4: "allow" } });
    expect(done.structuredContent).toStrictEqual({ status: "ok", value: "both", tool_calls: 4, duration_ms: done.structuredContent.duration_ms });
    // Every call ran once, over four runs; each key is the first run's id and the call's number.
    expect(executed.map((e) => e.tool)).toStrictEqual(["lookup", "probe", "lookup", "probe"]);
    const keys = executed.map((e) => e.key!);
    const runId = keys[0]!.split(":")[0];
    expect(keys).toStrictEqual([`${runId}:1`, `${runId}:2`, `${runId}:3`, `${runId}:4`]);
    // The approval function saw the same key for call 2 in every run that reached it.
    expect(gateKeys.slice(0, 3)).toStrictEqual([`${runId}:2`, `${runId}:2`, `${runId}:2`]);
  });

  it("gated calls issued together are asked at once; the other calls issued with them do not run", async () => {
    const cm = await make();
    const code = `const [a, b, c] = await Promise.all([tools.deploy({ env: "eu" }), tools.lookup({ q: "x" }), tools.deploy({ env: "us" })]); return [a.deployed, b.value, c.deployed];`;
    const first = await cm.run(code);
    expect(first.structuredContent.pending_approvals).toStrictEqual([
      { approval_id: "call_1", tool: "deploy", input: { env: "eu" }, digest: approvalDigest("deploy", { env: "eu" }) },
      { approval_id: "call_3", tool: "deploy", input: { env: "us" }, digest: approvalDigest("deploy", { env: "us" }) },
    ]);
    expect(first.content[0]!.text.split("\n").slice(0, 3)).toStrictEqual([
      "The program stopped before 2 calls that need a person's approval; nothing of them has run:",
      `- call_1: tools.deploy({"env":"eu"})`,
      `- call_3: tools.deploy({"env":"us"})`,
    ]);
    expect(executed).toStrictEqual([]);
    const done = await cm.resume(first.structuredContent.continuation!, { approvals: { call_1: "allow", call_3: "allow" } });
    expect(done.structuredContent.value).toStrictEqual(["eu", "v:x", "us"]);
    expect(executed.map((e) => e.tool).sort()).toStrictEqual(["deploy", "deploy", "lookup"]);
  });

  it("Date.now(), new Date() and Math.random() before the gate give the same values on resume; after it the clock is live", async () => {
    const cm = await make();
    const code = `
      const t = Date.now(), d = new Date().getTime(), r = [Math.random(), Math.random()];
      await tools.lookup({ q: JSON.stringify({ t, d, r }) });
      await sleep(5);
      const t2 = Date.now();
      await tools.deploy({ env: "prod" });
      return { t, d, r, t2, after: Date.now() >= t2, isDate: new Date() instanceof Date, parsed: Date.parse("2020-01-01T00:00:00Z"), str: typeof Date() };`;
    const first = await cm.run(code);
    const seen = JSON.parse((executed[0]!.input as { q: string }).q) as { t: number; d: number; r: number[] };
    // Later than the first run's readings, so a live clock would show.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const done = await cm.resume(first.structuredContent.continuation!, { approvals: { call_2: "allow" } });
    const value = done.structuredContent.value as { t: number; d: number; r: number[]; t2: number; after: boolean; isDate: boolean; parsed: number; str: string };
    expect({ t: value.t, d: value.d, r: value.r }).toStrictEqual(seen);
    expect(value.t2).toBeGreaterThanOrEqual(value.t);
    expect({ after: value.after, isDate: value.isDate, parsed: value.parsed, str: value.str }).toStrictEqual({ after: true, isDate: true, parsed: 1577836800000, str: "string" });
    expect(value.r.every((n) => n >= 0 && n < 1) && value.r[0] !== value.r[1]).toBe(true);
    expect(count("lookup")).toBe(1);
  });

  it("a busy loop on Date.now() before the gate replays to the same iteration count", async () => {
    const cm = await make();
    const code = `let n = 0; const end = Date.now() + 15; while (Date.now() < end) n++; await tools.lookup({ q: String(n) }); await tools.deploy({ env: "x" }); return n;`;
    const first = await cm.run(code);
    const n = Number((executed[0]!.input as { q: string }).q);
    const done = await cm.resume(first.structuredContent.continuation!, { approvals: { call_2: "allow" } });
    expect(done.structuredContent.value).toBe(n);
  });

  it("timers race recorded results as they did: a replayed result comes back no earlier than it first did", async () => {
    const cm = await make();
    // Wide margins (5 ms against 400 ms): which wins does not depend on the machine's load.
    const code = `
      const first = await Promise.race([tools.slow({ ms: 400 }).then(() => "tool"), sleep(5).then(() => "timer")]);
      const second = await Promise.race([tools.slow({ ms: 1 }).then(() => "tool"), sleep(400).then(() => "timer")]);
      const order = [];
      await Promise.all([tools.slow({ ms: 120 }).then(() => order.push("slow")), tools.slow({ ms: 2 }).then(() => order.push("fast"))]);
      await tools.deploy({ env: "x" });
      return { first, second, order };`;
    const run = await cm.run(code);
    expect(run.structuredContent.status).toBe("interrupted");
    const done = await cm.resume(run.structuredContent.continuation!, { approvals: { call_5: "allow" } });
    expect(done.structuredContent.value).toStrictEqual({ first: "timer", second: "tool", order: ["fast", "slow"] });
    expect(count("slow")).toBe(4);
  });

  it("a flood of gated calls is asked at once, bounded in the content; the next run works", async () => {
    const cm = await make();
    const run = await cm.run(`await Promise.all(Array.from({ length: 300 }, (_, i) => tools.deploy({ env: "e" + i + "x".repeat(3000) })));`);
    const sc = run.structuredContent;
    expect(sc.pending_approvals!.length).toBe(300);
    expect(sc.pending_approvals![299]!.approval_id).toBe("call_300");
    const text = run.content[0]!.text;
    expect(text.split("\n").filter((line) => line.startsWith("- call_")).length).toBe(20);
    expect(text).toContain("- … and 280 more (all in structuredContent.pending_approvals)");
    const json = JSON.stringify({ env: `e0${"x".repeat(3000)}` });
    expect(text).toContain(`- call_1: tools.deploy(${json.slice(0, 1000)}… [${json.length - 1000} characters cut])`);
    expect(Buffer.byteLength(text)).toBeLessThan(40_000);
    expect(executed).toStrictEqual([]);
    expect((await cm.run(`return 1 + 1`)).structuredContent.value).toBe(2);
  });

  it("runs without any gated tool keep the guest's own clock and random (nothing is recorded)", async () => {
    const cm = await createCodemode({ tools: [lookup], workers: { max: 1 } });
    open.push(cm);
    const result = await cm.run(`return [Date.now() > 1.7e12, Math.random() < 1, typeof Date.now];`);
    expect(result.structuredContent.value).toStrictEqual([true, true, "function"]);
  });
});

describe("remembered approvals", () => {
  it("match the same call with and without result_view, in the same session only; another input does not match", async () => {
    const cm = await make();
    const first = await cm.run(`return await tools.send({ to: "press", body: "hi" });`, { session: "s1" });
    const digest = approvalDigest("send", { to: "press", body: "hi" });
    expect(first.structuredContent.pending_approvals).toStrictEqual([{ approval_id: "call_1", tool: "send", input: { to: "press", body: "hi" }, digest }]);
    const allowed = await cm.resume(first.structuredContent.continuation!, { approvals: { call_1: { decision: "allow", remember: true } } });
    expect(allowed.structuredContent.value).toStrictEqual({ sent: true });
    const listed = cm.approvals.list({ session: "s1" });
    expect(listed).toStrictEqual([{ session: "s1", tool: "send", digest, decision: "allow", input: { to: "press", body: "hi" }, created_at: listed[0]!.created_at }]);
    // The same call, with the full view and with the compact one: no question.
    const full = await cm.run(`return await tools.send({ to: "press", body: "hi", result_view: "full" });`, { session: "s1" });
    expect(full.structuredContent).toStrictEqual({ status: "ok", value: { sent: true, to: "press" }, tool_calls: 1, duration_ms: full.structuredContent.duration_ms });
    const compact = await cm.run(`return await tools.send({ to: "press", body: "hi", result_view: "compact" });`, { session: "s1" });
    expect(compact.structuredContent.value).toStrictEqual({ sent: true });
    // Another input, or another session: asked again.
    const other = await cm.run(`return await tools.send({ to: "press", body: "bye" });`, { session: "s1" });
    expect(other.structuredContent.status).toBe("interrupted");
    const elsewhere = await cm.run(`return await tools.send({ to: "press", body: "hi" });`, { session: "s2" });
    expect(elsewhere.structuredContent.status).toBe("interrupted");
    // The tool's own function: messages to the team need nobody.
    const team = await cm.run(`return await tools.send({ to: "team", body: "hi" });`, { session: "s2" });
    expect(team.structuredContent.value).toStrictEqual({ sent: true });
    expect(count("send")).toBe(4);
  });

  it("a remembered call issued after the one the run stops for waits too, and runs once on resume", async () => {
    const cm = await make();
    const first = await cm.run(`return (await tools.deploy({ env: "eu" })).deployed;`, { session: "r" });
    await cm.resume(first.structuredContent.continuation!, { approvals: { call_1: { decision: "allow", remember: true } } });
    executed = [];
    const run = await cm.run(`return (await Promise.all([tools.deploy({ env: "us" }), tools.deploy({ env: "eu" })])).map((d) => d.deployed);`, { session: "r" });
    expect(run.structuredContent.pending_approvals!.map((p) => p.approval_id)).toStrictEqual(["call_1"]);
    expect(executed).toStrictEqual([]);
    const done = await cm.resume(run.structuredContent.continuation!, { approvals: { call_1: "allow" } });
    expect(done.structuredContent.value).toStrictEqual(["us", "eu"]);
    expect(executed.map((e) => (e.input as { env: string }).env).sort()).toStrictEqual(["eu", "us"]);
  });

  it("are listed and revoked from the API; a revoked approval asks again", async () => {
    const cm = await make();
    const first = await cm.run(`return (await tools.deploy({ env: "prod" })).deployed;`, { session: "ops" });
    await cm.resume(first.structuredContent.continuation!, { approvals: { call_1: { decision: "allow", remember: true } } });
    expect((await cm.run(`return (await tools.deploy({ env: "prod" })).deployed;`, { session: "ops" })).structuredContent.value).toBe("prod");
    expect(cm.approvals.list().map((a) => [a.session, a.tool, a.digest])).toStrictEqual([["ops", "deploy", DEPLOY_PROD]]);
    expect(cm.approvals.revoke({ session: "other", digest: DEPLOY_PROD })).toBe(0);
    expect(cm.approvals.revoke({ session: "ops", digest: DEPLOY_PROD })).toBe(1);
    expect(cm.approvals.list()).toStrictEqual([]);
    expect((await cm.run(`return (await tools.deploy({ env: "prod" })).deployed;`, { session: "ops" })).structuredContent.status).toBe("interrupted");
    expect(() => cm.approvals.revoke({})).toThrow("revoke(filter): give a digest, a session, or both (revoking everything at once is not offered)");
  });

  it("a remembered deny refuses the call without asking; remembered approvals survive the host in the data dir", async () => {
    const dataDir = tempDir();
    const cm = await make({ dataDir });
    const first = await cm.run(GATED, { session: "k" });
    const denied = await cm.resume(first.structuredContent.continuation!, { approvals: { call_2: { decision: "deny", remember: true } } });
    expect((denied.structuredContent.value as { reason: string }).reason).toBe("approval_denied");
    await cm.close();
    const next = await make({ dataDir });
    expect(next.approvals.list().map((a) => [a.session, a.decision, a.digest])).toStrictEqual([["k", "deny", DEPLOY_PROD]]);
    const again = await next.run(GATED, { session: "k" });
    expect(again.structuredContent.value).toStrictEqual({ code: "tool_denied", reason: "approval_denied", name: "ToolError" });
    expect(count("deploy")).toBe(0);
  });
});

describe("continuations cannot be forged", () => {
  it("a kept continuation is usable once; unknown and malformed ones are refused", async () => {
    const cm = await make();
    const first = await cm.run(GATED);
    const token = first.structuredContent.continuation!;
    expect(token).toMatch(/^cmc1\.k\.[0-9a-f]{32}$/);
    await cm.resume(token, { approvals: { call_2: "allow" } });
    await expect(cm.resume(token, { approvals: { call_2: "allow" } })).rejects.toMatchObject({
      name: "ContinuationError",
      code: "continuation_invalid",
      reason: "used",
      message: "this continuation was already used: a continuation resumes its run once; the resumed run returns its own result (and a new continuation if it stops again)",
    });
    await expect(cm.resume(`cmc1.k.${"0".repeat(32)}`)).rejects.toMatchObject({ reason: "unknown" });
    await expect(cm.resume("hello")).rejects.toMatchObject({
      reason: "malformed",
      message: `this is not a continuation: pass the "continuation" string of an interrupted run's structuredContent exactly as it was returned`,
    });
    expect(count("deploy")).toBe(1);
  });

  it("a signed continuation carries the run; tampered, expired and reused ones are refused before any call", async () => {
    const key = "k".repeat(40);
    const cm = await make({ approvals: { key, ttlMs: 60_000 } });
    const first = await cm.run(GATED);
    const token = first.structuredContent.continuation!;
    expect(token.startsWith("cmc1.s.")).toBe(true);
    const body = token.slice("cmc1.s.".length);
    const tampered = `cmc1.s.${body[0] === "A" ? "B" : "A"}${body.slice(1)}`;
    await expect(cm.resume(tampered, { approvals: { call_2: "allow" } })).rejects.toMatchObject({
      code: "continuation_invalid",
      reason: "tampered",
      message: "this continuation was altered (its signature or contents do not check out); pass it exactly as it was returned, or run the program again",
    });
    // Another runtime with the same key resumes it (the state travels in the continuation); one with another key cannot.
    const other = await make({ approvals: { key: "x".repeat(40) } });
    await expect(other.resume(token)).rejects.toMatchObject({ reason: "tampered" });
    const expiresAt = Date.now() + 60_000;
    const realNow = Date.now;
    vi.spyOn(Date, "now").mockImplementation(() => realNow() + 61_000);
    const expired = cm.resume(token, { approvals: { call_2: "allow" } });
    vi.restoreAllMocks();
    await expect(expired).rejects.toMatchObject({ reason: "expired" });
    expect(((await expired.catch((e: Error) => e)) as Error).message).toMatch(/^this continuation expired at \d{4}-\d\d-\d\dT[\d:.]+Z \(continuations stay usable 1 minutes\); run the program again$/);
    expect(Math.abs(Date.parse(((await expired.catch((e: Error) => e)) as Error).message.slice(29, 53)) - expiresAt)).toBeLessThan(5_000);
    const twin = await make({ approvals: { key } });
    const done = await twin.resume(token, { approvals: { call_2: "allow" } });
    expect(done.structuredContent.value).toStrictEqual({ deployed: "prod", after: "v:build" });
    await expect(twin.resume(token, { approvals: { call_2: "allow" } })).rejects.toMatchObject({ reason: "used" });
    expect(executed.map((e) => e.tool)).toStrictEqual(["lookup", "deploy"]);
  });

  it("a run whose state is too large for a signed continuation ends with an error saying so; the next run works", async () => {
    const noise = defineTool({ name: "noise", description: "900 KiB of random text", input: z.object({}), execute: async () => randomBytes(900 * 1024).toString("base64") });
    const cm = await createCodemode({ tools: [noise, deploy], workers: { max: 1 }, approvals: { key: "k".repeat(32) } });
    open.push(cm);
    const result = await cm.run(`const n = await tools.noise({}); await tools.deploy({ env: "prod" }); return n.length;`);
    expect(result.structuredContent.status).toBe("error");
    expect(result.structuredContent.error!.kind).toBe("exception");
    expect(result.structuredContent.error!.message).toMatch(
      /^the program stopped for an approval, but it cannot be resumed: the run's state \(\d+ bytes signed\) is more than a signed continuation may carry \(1048576\); the results the program received before the approval are too large — configure no signing key so the state is kept in the data dir$/,
    );
    expect(Object.hasOwn(result.structuredContent, "continuation")).toBe(false);
    expect(count("deploy")).toBe(0);
    expect((await cm.run(`return (await tools.deploy({ env: "x" }).catch((e) => e.reason))`)).structuredContent.status).toBe("interrupted");
  });

  it("a changed program is refused before any call; answers for calls that are not waiting are refused", async () => {
    const cm = await make();
    const first = await cm.run(GATED);
    const token = first.structuredContent.continuation!;
    await expect(cm.resume(token, { code: GATED.replace("build", "other"), approvals: { call_2: "allow" } })).rejects.toMatchObject({
      code: "continuation_invalid",
      reason: "program_changed",
      message: "the program is not the one that was interrupted: a resumed run replays the same program (send it unchanged, or leave code out); a changed program must be run anew",
    });
    await expect(cm.resume(token, { approvals: { call_9: "allow" } })).rejects.toThrow(`approvals["call_9"]: no call of this run waits for that approval; waiting: "call_2"`);
    await expect(cm.resume(token, { approvals: { call_2: "yes" as never } })).rejects.toThrow(
      `approvals["call_2"] must be "allow", "deny" or { decision: "allow" | "deny", remember?: boolean }, got the string "yes"`,
    );
    expect(count("lookup")).toBe(1);
    // Still usable: nothing consumed it.
    const done = await cm.resume(token, { code: GATED, approvals: { call_2: "allow" } });
    expect(done.structuredContent.value).toStrictEqual({ deployed: "prod", after: "v:build" });
  });

  it("an interrupted run leaves the session's store as it found it; the resumed run's writes are kept", async () => {
    const cm = await make();
    const code = `const n = (load("count") ?? 0) + 1; store("count", n); await tools.lookup({ q: String(n) }); await tools.deploy({ env: "prod" }); return n;`;
    const first = await cm.run(code, { session: "st" });
    expect(first.structuredContent.status).toBe("interrupted");
    expect((await cm.run(`return load("count") ?? "unset"`, { session: "st" })).structuredContent.value).toBe("unset");
    const done = await cm.resume(first.structuredContent.continuation!, { approvals: { call_2: "allow" } });
    expect(done.structuredContent.value).toBe(1);
    expect((await cm.run(`return load("count")`, { session: "st" })).structuredContent.value).toBe(1);
    expect(count("lookup")).toBe(1);
  });

  it("a replay whose calls diverge from the ledger is refused before any host call runs", async () => {
    const cm = await make();
    const code = `const n = load("n") ?? 0; await tools.lookup({ q: String(n) }); await tools.deploy({ env: "prod" }); return n;`;
    const first = await cm.run(code, { session: "d" });
    await cm.run(`store("n", 5)`, { session: "d" });
    await expect(cm.resume(first.structuredContent.continuation!, { approvals: { call_2: "allow" } })).rejects.toMatchObject({
      code: "continuation_invalid",
      reason: "diverged",
      message: `call 1 of the resumed program is tools.lookup({"q":"5"}), but the run it continues made tools.lookup({"q":"0"}) there; a resumed program must make the same calls with the same arguments up to the approval (no host call was run)`,
    });
    expect(executed.map((e) => e.tool)).toStrictEqual(["lookup"]);
  });
});

describe("who decides", () => {
  it("hooks.approve sees every call with its digest and input as sent, and may allow, deny or ask", async () => {
    const seen: unknown[] = [];
    const cm = await make({
      hooks: {
        approve: (event) => {
          seen.push({ tool: event.tool.id, input: event.input, digest: event.digest, has_result_views: event.has_result_views, tool_requires_approval: event.tool_requires_approval });
          if (event.tool.id === "lookup") return event.input.q === "secret" ? "deny" : event.input.q === "ask" ? "ask" : undefined;
          if (event.tool.id === "deploy") return "allow";
          return undefined;
        },
      },
    });
    const result = await cm.run(`
      const out = [];
      out.push((await tools.deploy({ env: "prod" })).deployed);
      out.push((await tools.send({ to: "team", body: "x", result_view: "full" })).to);
      try { await tools.lookup({ q: "secret" }); } catch (e) { out.push(e.code + "/" + e.reason + ": " + e.message); }
      return out;`);
    expect(result.structuredContent.value).toStrictEqual(["prod", "team", `tool_denied/approval_denied: tool "lookup" call denied by the host's approval policy`]);
    expect(seen).toStrictEqual([
      { tool: "deploy", input: { env: "prod" }, digest: DEPLOY_PROD, has_result_views: false, tool_requires_approval: true },
      { tool: "send", input: { to: "team", body: "x", result_view: "full" }, digest: approvalDigest("send", { to: "team", body: "x" }), has_result_views: true, tool_requires_approval: false },
      { tool: "lookup", input: { q: "secret" }, digest: approvalDigest("lookup", { q: "secret" }), has_result_views: false, tool_requires_approval: false },
    ]);
    const asked = await cm.run(`return (await tools.lookup({ q: "ask" })).value`);
    expect(asked.structuredContent.pending_approvals).toStrictEqual([{ approval_id: "call_1", tool: "lookup", input: { q: "ask" }, digest: approvalDigest("lookup", { q: "ask" }) }]);
  });

  it("askApproval answers while the program waits: no interrupt", async () => {
    const cm = await make();
    const questions: unknown[] = [];
    const result = await cm.run(GATED, {
      askApproval: async (pending) => {
        questions.push(pending);
        return { [pending[0]!.approval_id]: "allow" };
      },
    });
    expect(questions).toStrictEqual([[{ approval_id: "call_2", tool: "deploy", input: { env: "prod" }, digest: DEPLOY_PROD }]]);
    expect(result.structuredContent.value).toStrictEqual({ deployed: "prod", after: "v:build" });
    // No answer: interrupted after all.
    const unanswered = await cm.run(GATED, { askApproval: async () => undefined });
    expect(unanswered.structuredContent.status).toBe("interrupted");
  });

  it("askApproval is asked one question at a time: a call that reaches the gate meanwhile waits for the next", async () => {
    let opened!: () => void;
    const questionOpen = new Promise<void>((resolve) => (opened = resolve));
    // Answers once the first question is being asked, so the second deploy reaches the gate during it.
    const hold = defineTool({
      name: "hold",
      description: "waits for the first question",
      input: z.object({}),
      execute: async () => {
        await questionOpen;
        return "held";
      },
    });
    const cm = await createCodemode({ tools: [deploy, hold], workers: { max: 1 } });
    open.push(cm);
    let asking = 0;
    let most = 0;
    const questions: string[][] = [];
    const result = await cm.run(`return (await Promise.all([tools.deploy({ env: "a" }), tools.hold({}).then(() => tools.deploy({ env: "b" }))])).map((d) => d.deployed);`, {
      askApproval: async (pending) => {
        most = Math.max(most, ++asking);
        questions.push(pending.map((p) => (p.input as { env: string }).env));
        opened();
        await new Promise((resolve) => setTimeout(resolve, 50));
        asking--;
        return Object.fromEntries(pending.map((p) => [p.approval_id, "allow" as const]));
      },
    });
    expect(result.structuredContent.value).toStrictEqual(["a", "b"]);
    expect({ most, questions }).toStrictEqual({ most: 1, questions: [["a"], ["b"]] });
  });

  it("a direct call of a gated tool is refused: nothing can ask", async () => {
    const cm = await make();
    const result = await cm.callTool("deploy", { env: "prod" });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toStrictEqual({
      error: {
        code: "tool_denied",
        reason: "approval_required",
        message: `tool "deploy" needs a person's approval before it runs, and nothing here can ask a person: call it from a program (ptc_run_code or cm.run), which stops and asks`,
      },
    });
    expect(count("deploy")).toBe(0);
  });

  it("a subagent task that reaches a gated call fails naming the tool and that approvals belong to the top-level program", async () => {
    const cm = await make({
      agentDirs: [],
      agents: [{ name: "deployer", description: "deploys", driver: "script", tools: ["deploy"], scriptCode: "const r = await tools.deploy({ env: task }); text(r.deployed)" }],
    });
    const result = await cm.run(`
      try { await tools.ptc_subagent({ agent: "deployer", task: "prod" }); return "ran"; }
      catch (e) { const out = await tools.ptc_task_output({ task_id: e.task_id }); return { code: e.code, status: out.status, output: out.output.split("\\n")[0] }; }`);
    expect(result.structuredContent.value).toStrictEqual({
      code: "task_failed",
      status: "failed",
      output: `Script failed (exception): ToolError: tool "deploy" needs a person's approval before it runs, and a subagent task cannot ask a person: approvals belong to the top-level program, so make this call from the program that spawned the task (line 1, column 29)`,
    });
    expect(count("deploy")).toBe(0);
  });

  it("ptc_run_code returns the interrupted result and resumes through { resume, approvals }", async () => {
    const cm = await make();
    const first = await cm.callTool("ptc_run_code", { code: GATED });
    expect(Object.hasOwn(first, "isError")).toBe(false);
    const sc = first.structuredContent as { continuation: string; duration_ms: number };
    expect(first.structuredContent).toStrictEqual({
      status: "interrupted",
      pending_approvals: [{ approval_id: "call_2", tool: "deploy", input: { env: "prod" }, digest: DEPLOY_PROD }],
      continuation: sc.continuation,
      tool_calls: 2,
      duration_ms: sc.duration_ms,
    });
    expect(first.content[0]!.text).toContain(`then resume: call ptc_run_code with { "resume": ${JSON.stringify(sc.continuation)}, "approvals": { "call_2": "allow" } } (no code needed).`);
    const done = await cm.callTool("ptc_run_code", { resume: sc.continuation, approvals: { call_2: "allow" } });
    expect(done.structuredContent).toStrictEqual({
      status: "ok",
      value: { deployed: "prod", after: "v:build" },
      tool_calls: 2,
      duration_ms: (done.structuredContent as { duration_ms: number }).duration_ms,
    });
    const reused = await cm.callTool("ptc_run_code", { resume: sc.continuation, approvals: { call_2: "allow" } });
    expect(reused.isError).toBe(true);
    expect((reused.structuredContent as { error: unknown }).error).toStrictEqual({
      code: "continuation_invalid",
      reason: "used",
      message: "this continuation was already used: a continuation resumes its run once; the resumed run returns its own result (and a new continuation if it stops again)",
    });
    const neither = await cm.callTool("ptc_run_code", {});
    expect((neither.structuredContent as { error: unknown }).error).toStrictEqual({
      code: "tool_invalid_input",
      reason: "schema_invalid",
      message: `tool "ptc_run_code" input needs "code" (the program), or "resume" (a continuation) to continue an interrupted run`,
    });
    expect(count("deploy")).toBe(1);
    expect(count("lookup")).toBe(1);
  });

  it('defineTool refuses an approval that is neither "required" nor a function', () => {
    expect(() => defineTool({ name: "x", description: "x", approval: "always" as never, input: z.object({}), execute: async () => ({}) })).toThrow(
      `defineTool: "approval" must be "required" or a function (input, ctx) => boolean, received "always"`,
    );
  });
});
