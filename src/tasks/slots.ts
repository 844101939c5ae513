// The running cap of a task host: how many of its slots are held, the FIFO queue of tasks waiting
// for one, and the links of the slots parents lend to their foreground children.
//
// Invariant: the number of tasks holding a slot never exceeds the cap, except transiently after a
// wait ends and takes its slot back at once (see `yield`): the count may then sit above the cap
// for a while, and no queued task starts until it is under the cap again. A task holds a slot of
// its own, or runs in the slot its waiting parent lent it; a parent lends its slot to at most one
// foreground child at a time, and a child in a lent slot is not counted again.
//
// Layer: src/tasks, used only by the TaskHost (host.ts), which stays the only writer of records'
// lifecycle: this module never changes a record. It starts a task only through the `start`
// callback it is given, and reads a queued task only through `queuedTask`. The slot links of a
// task (`SlotLinks`) live on the task so they end with it; only this module writes them.

/** A task's share of the running cap. Written only by Slots. */
export interface SlotLinks<T> {
  /** It holds one of the host's slots (counted in `running`). */
  owns: boolean;
  /** It runs in the slot of this parent, which waits for it. */
  borrowedFrom?: T;
  /** Its foreground child runs in its slot meanwhile. */
  lentTo?: T;
  /** Waits (ptc_task_wait) in progress that gave its slot back to the host; 0 when it holds its slot. */
  waits: number;
}

/** What Slots needs of a task: its links and whether it runs (started, not yet finished). */
export interface SlotTask<T> {
  readonly slot: SlotLinks<T>;
  readonly started: boolean;
  readonly finished: boolean;
}

export interface SlotHooks<T> {
  /** Starts a task the scheduler gave a slot to (its own, or a lent one). */
  start(task: T): void;
  /** The task behind a queued id, if it still waits to start (not stopped or taken over). */
  queuedTask(id: string): T | undefined;
  /** Whether `task` is a foreground child of `parent` (one that may run in its lent slot). */
  isForegroundChild(task: T, parent: T): boolean;
}

/** The links of a task that holds no slot yet. */
export function noSlot<T>(): SlotLinks<T> {
  return { owns: false, waits: 0 };
}

export class Slots<T extends SlotTask<T>> {
  private held = 0;
  private readonly queue: string[] = [];
  private closed = false;

  constructor(
    readonly cap: number,
    private readonly hooks: SlotHooks<T>,
  ) {}

  /** Slots in use: tasks running in their own slot (a child running in its parent's slot is not counted again). */
  get running(): number {
    return this.held;
  }

  /** Tasks waiting in the queue. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Whether a task that neither borrows nor waits would queue: the cap is reached, or others queue before it. */
  get mustQueue(): boolean {
    return this.held >= this.cap || this.queue.length > 0;
  }

  /** A closed scheduler starts no queued task any more. */
  close(): void {
    this.closed = true;
  }

  /** Whether a parent can lend its slot to a foreground child now: it holds one, no child has it, it is not waiting. */
  canLend(parent: T): boolean {
    return this.holds(parent) && parent.slot.waits === 0;
  }

  /** The child runs in its parent's slot (the caller starts it). */
  lend(parent: T, child: T): void {
    child.slot.borrowedFrom = parent;
    parent.slot.lentTo = child;
  }

  /** The task takes one of the host's slots (the caller starts it, or it already runs). */
  take(task: T): void {
    task.slot.owns = true;
    this.held++;
  }

  /** The task waits for a slot, behind those already waiting. */
  enqueue(id: string): void {
    this.queue.push(id);
  }

  /** The task no longer waits (stopped or taken over). */
  dequeue(id: string): void {
    const at = this.queue.indexOf(id);
    if (at !== -1) this.queue.splice(at, 1);
  }

  /**
   * A task that waits for others does not hold a slot meanwhile: the count goes down and queued
   * tasks start, so a program waiting for its own children never keeps them queued. The returned
   * function takes the slot back, at once, when the wait ends: the host may then run over its cap
   * for a while, and starts no queued task until it is under it again (a waiter that had to queue
   * for its slot back could not keep its timeout).
   */
  yield(task: T | undefined): () => void {
    if (!task || (task.slot.waits === 0 && !this.holds(task))) return () => undefined;
    const links = task.slot;
    if (links.waits++ === 0) {
      this.held--;
      this.pump();
    }
    let given = false;
    return () => {
      if (given || links.waits === 0) return;
      given = true;
      if (--links.waits === 0) this.held++;
    };
  }

  /** A started task ended: its slot goes back (to its parent, to its child still stopping, or to the queue). */
  release(task: T): void {
    const links = task.slot;
    if (links.waits > 0) {
      // It ended while waiting (it was stopped): its slot was given back then; count it again to release it below.
      links.waits = 0;
      this.held++;
    }
    const heir = links.lentTo;
    const lender = links.borrowedFrom;
    links.lentTo = undefined;
    links.borrowedFrom = undefined;
    if (heir) {
      // Its foreground child still runs in this slot (it is being stopped): the slot is the child's now.
      heir.slot.borrowedFrom = lender;
      heir.slot.owns = links.owns;
      if (lender) lender.slot.lentTo = heir;
      links.owns = false;
      return;
    }
    if (lender) {
      lender.slot.lentTo = undefined;
      this.lendToWaitingChild(lender);
      return;
    }
    if (links.owns) {
      links.owns = false;
      this.held--;
      this.pump();
    }
  }

  /** Whether a task runs in a slot no child of its own is using: its own, or the one its waiting parent lent it. */
  private holds(task: T): boolean {
    const links = task.slot;
    return task.started && !task.finished && links.lentTo === undefined && (links.owns || links.borrowedFrom !== undefined);
  }

  /** The parent's slot is back: its next queued foreground child runs in it. */
  private lendToWaitingChild(parent: T): void {
    const at = this.queue.findIndex((id) => {
      const task = this.hooks.queuedTask(id);
      return task !== undefined && this.hooks.isForegroundChild(task, parent);
    });
    if (at === -1) return;
    const child = this.hooks.queuedTask(this.queue.splice(at, 1)[0]!)!;
    this.lend(parent, child);
    this.hooks.start(child);
  }

  /** Starts queued tasks, first come first served, while the count is under the cap. */
  private pump(): void {
    while (!this.closed && this.held < this.cap && this.queue.length > 0) {
      const task = this.hooks.queuedTask(this.queue.shift()!);
      if (task) {
        this.take(task);
        this.hooks.start(task);
      }
    }
  }
}
