// A call's lazily made AbortSignal behaves as an eager one: same reason, listeners fire, one signal;
// and a caller reads a cancellation through it without making it.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { CALL_ABORT, LazyAbort } from "../../src/tools/call-signal.js";
import { defineTool, prepareCalls, type PerCall } from "../../src/tools/index.js";

function lazyCall(abort: LazyAbort): PerCall {
  return {
    ctx: {
      get signal() {
        return abort.signal;
      },
      callId: "r:1",
      runId: "r",
      depth: 0,
    },
    [CALL_ABORT]: abort,
  } as PerCall;
}

describe("LazyAbort", () => {
  it("cancelled before its signal is read: the signal it then makes is aborted, with the reason", () => {
    const abort = new LazyAbort();
    const reason = new Error("ended");
    expect(abort.aborted).toBe(false);
    abort.abort(reason);
    abort.abort(new Error("a second abort changes nothing"));
    expect(abort.aborted).toBe(true);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
    expect(abort.signal).toBe(abort.signal);
  });

  it("read first: its listeners fire on cancel; a spread copy of the context holds the same signal", () => {
    const abort = new LazyAbort();
    const { ctx } = lazyCall(abort);
    const heard: unknown[] = [];
    ctx.signal.addEventListener("abort", () => heard.push(ctx.signal.reason));
    const copy = { ...ctx };
    expect(copy.signal).toBe(ctx.signal);
    abort.abort("stop");
    expect(heard).toStrictEqual(["stop"]);
    expect([abort.aborted, copy.signal.aborted]).toStrictEqual([true, true]);
  });

  it("a call cancelled before it runs is refused without running, and a running tool gets the one signal", async () => {
    const signals: AbortSignal[] = [];
    const tool = defineTool({
      name: "probe",
      description: "keeps its signal",
      input: z.object({}),
      execute: (_input, ctx) => {
        signals.push(ctx.signal);
        return "ran";
      },
    });
    const caller = prepareCalls({ audience: "program" });
    const cancelled = new LazyAbort();
    cancelled.abort(new Error("ended"));
    await expect(caller.forProgram(tool, {}, lazyCall(cancelled))).rejects.toMatchObject({ code: "tool_aborted", message: 'tool "probe" was cancelled before it ran' });
    expect(signals).toStrictEqual([]);
    const live = new LazyAbort();
    expect(await caller.forProgram(tool, {}, lazyCall(live))).toBe("ran");
    expect(signals).toStrictEqual([live.signal]);
    expect(signals[0]!.aborted).toBe(false);
  });
});
