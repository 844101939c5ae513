// A tool call's AbortSignal, made only when something reads it. Every call's context carries a
// signal, but most tools never look at it, and an AbortController costs ~2.5 µs to make (Node 20):
// for a program's Promise.all of 1,000 calls that was the largest part of the host's own work.
// The signal a reader gets behaves exactly as an eager one would: aborted (with the same reason)
// when the call was cancelled before it was first read, firing its listeners when cancelled after.
import type { ToolContext } from "./types.js";

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

/** Contexts whose `signal` is a getter over a LazyAbort (see `lazySignal`). */
const lazy = new WeakMap<object, LazyAbort>();

/**
 * Marks `ctx`, whose `signal` is an own, enumerable getter over `abort` (so a spread of it, a hook
 * or a tool reading `ctx.signal` all get the one signal, made on that first read), for
 * `contextAborted` and the context check, which then need not make it.
 */
export function lazySignal<T extends ToolContext>(ctx: T, abort: LazyAbort): T {
  lazy.set(ctx, abort);
  return ctx;
}

/** `ctx.signal.aborted`, without making a lazy context's signal. */
export function contextAborted(ctx: ToolContext): boolean {
  const owner = lazy.get(ctx);
  return owner ? owner.aborted : ctx.signal.aborted;
}

/** The context was marked by `lazySignal`: its signal is an AbortSignal, whenever it is read. */
export function hasLazySignal(ctx: object): boolean {
  return lazy.has(ctx);
}
