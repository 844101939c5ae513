// A call's lazily made AbortSignal behaves as an eager one: same reason, listeners fire, one signal.
import { describe, expect, it } from "vitest";
import { contextAborted, hasLazySignal, LazyAbort, lazySignal } from "../../src/tools/call-signal.js";
import type { ToolContext } from "../../src/tools/index.js";

const contextOf = (abort: LazyAbort): ToolContext =>
  lazySignal(
    {
      get signal() {
        return abort.signal;
      },
      callId: "r:1",
      runId: "r",
      depth: 0,
    },
    abort,
  );

describe("LazyAbort", () => {
  it("cancelled before its signal is read: the signal it then makes is aborted, with the reason", () => {
    const abort = new LazyAbort();
    const ctx = contextOf(abort);
    const reason = new Error("ended");
    expect(contextAborted(ctx)).toBe(false);
    abort.abort(reason);
    abort.abort(new Error("a second abort changes nothing"));
    expect(contextAborted(ctx)).toBe(true);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBe(reason);
    expect(ctx.signal).toBe(ctx.signal);
  });

  it("read first: its listeners fire on cancel; a spread copy holds the same signal and is checked through it", () => {
    const abort = new LazyAbort();
    const ctx = contextOf(abort);
    const heard: unknown[] = [];
    ctx.signal.addEventListener("abort", () => heard.push(ctx.signal.reason));
    const copy = { ...ctx };
    expect(hasLazySignal(ctx)).toBe(true);
    expect(hasLazySignal(copy)).toBe(false);
    expect(copy.signal).toBe(ctx.signal);
    abort.abort("stop");
    expect(heard).toStrictEqual(["stop"]);
    expect([contextAborted(ctx), contextAborted(copy)]).toStrictEqual([true, true]);
  });
});
