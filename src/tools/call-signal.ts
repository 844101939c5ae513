// A tool call's AbortSignal, made only when something reads it. Every call's context carries a
// signal, but most tools never look at it, and an AbortController costs ~2.5 µs to make (Node 20):
// for a program's Promise.all of 1,000 calls that was the largest part of the host's own work.
// The signal a reader gets behaves exactly as an eager one would: aborted (with the same reason)
// when the call was cancelled before it was first read, firing its listeners when cancelled after.
export class LazyAbort {
  private controller: AbortController | undefined;
  private cancelled = false;
  private reason: unknown;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Whether the call was cancelled, without making its signal. */
  get aborted(): boolean {
    return this.controller ? this.controller.signal.aborted : this.cancelled;
  }

  abort(reason: unknown): void {
    if (this.controller) this.controller.abort(reason);
    else if (!this.cancelled) {
      this.cancelled = true;
      this.reason = reason;
    }
  }
}

/**
 * Where a program's call (invoke.ts `PerCall`) carries the LazyAbort behind its context's `signal`
 * getter: the caller checks and reads cancellation through it, without making the signal. A
 * symbol of this module: tools and hooks never see the PerCall, and nothing outside sets it.
 */
export const CALL_ABORT: unique symbol = Symbol("codemode.callAbort");

/** What the run gives for a call whose context's `signal` is an own, enumerable getter over `abort`. */
export interface LazyAbortCarrier {
  [CALL_ABORT]?: LazyAbort;
}
