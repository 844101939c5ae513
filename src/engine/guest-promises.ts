// Who frees what on the promise bridge. A host function that starts something the host finishes
// later (a tool call, a timer) returns a QuickJS deferred promise's `handle` to the guest: the
// library releases our reference to it once the guest holds it, so from then on the run owns
// only the deferred's resolve and reject functions, until it settles or drops the promise. This
// is quickjs-emscripten's rule for deferreds returned from host functions (deferred-promise.ts).
import { Scope, type QuickJSDeferredPromise, type QuickJSHandle } from "quickjs-emscripten-core";

/**
 * The deferred promises a run has handed the guest and not settled yet, by key (a call id, a
 * timer id). The table owns each deferred it holds: `add` is the only way in; `take` hands an
 * entry to the caller, who must settle it with `settleOwned`; `drop` frees one that will never
 * settle (a cleared timer); `releaseAll` frees the rest when the run is torn down. Nothing else
 * adds or removes, so at teardown the table is exactly what is left to free.
 */
export class PendingPromises<Entry extends { readonly deferred: QuickJSDeferredPromise }> {
  private readonly entries = new Map<number, Entry>();

  get size(): number {
    return this.entries.size;
  }

  /** The keys in the order they were added. */
  keys(): IterableIterator<number> {
    return this.entries.keys();
  }

  /** Read-only: entries stay owned by the table. */
  entriesView(): IterableIterator<[number, Entry]> {
    return this.entries.entries();
  }

  add(key: number, entry: Entry): void {
    this.entries.set(key, entry);
  }

  /** Removes the entry and hands it, and the duty to settle it, to the caller. */
  take(key: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry) this.entries.delete(key);
    return entry;
  }

  /** Frees an entry whose promise will never settle. */
  drop(key: number): void {
    this.take(key)?.deferred.dispose();
  }

  /** Frees every entry left; a disposal that fails does not stop the others. */
  releaseAll(): void {
    for (const entry of this.entries.values()) {
      try {
        entry.deferred.dispose();
      } catch {
        // The instance is being torn down: what could not be freed goes with it.
      }
    }
    this.entries.clear();
  }
}

/**
 * Settles a deferred the caller owns with `value` (also the caller's, if given) and frees both,
 * the value first; the guest's promise keeps what it needs.
 */
export function settleOwned(deferred: QuickJSDeferredPromise, how: "resolve" | "reject", value?: QuickJSHandle): void {
  Scope.withScope((scope) => {
    scope.manage(deferred);
    deferred[how](value === undefined ? undefined : scope.manage(value));
  });
}

/**
 * Rejects a deferred whose handle went to the guest and that the run never holds (the call is
 * refused at once): rejecting frees its resolvers, and `error` is consumed.
 */
export function rejectReturned(deferred: QuickJSDeferredPromise, error: QuickJSHandle): void {
  error.consume((value) => deferred.reject(value));
}
