import { describe, expect, it } from "vitest";
import { noSlot, Slots, type SlotLinks } from "../../src/tasks/slots.js";

// A task as the host keeps it, reduced to what the scheduler reads.
interface Task {
  id: string;
  parent?: string;
  background: boolean;
  slot: SlotLinks<Task>;
  started: boolean;
  finished: boolean;
}

function scheduler(cap: number) {
  const tasks = new Map<string, Task>();
  const started: string[] = [];
  const slots = new Slots<Task>(cap, {
    start: (t) => {
      t.started = true;
      started.push(t.id);
    },
    queuedTask: (id) => {
      const t = tasks.get(id);
      return t && !t.started && !t.finished ? t : undefined;
    },
    isForegroundChild: (t, parent) => !t.background && t.parent === parent.id,
  });
  const task = (id: string, extra: { parent?: string; background?: boolean } = {}): Task => {
    const t: Task = { id, background: extra.background ?? true, slot: noSlot(), started: false, finished: false, ...(extra.parent ? { parent: extra.parent } : {}) };
    tasks.set(id, t);
    return t;
  };
  /** Places a task as the host's spawn does: in its own slot if one is free and none queue, else in the queue. */
  const spawn = (t: Task): void => {
    if (slots.mustQueue) slots.enqueue(t.id);
    else {
      slots.take(t);
      t.started = true;
      started.push(t.id);
    }
  };
  const end = (t: Task): void => {
    t.finished = true;
    slots.release(t);
  };
  return { slots, task, spawn, end, started };
}

describe("Slots", () => {
  it("runs at most cap tasks and starts the queued ones first come first served as slots free", () => {
    const { slots, task, spawn, end, started } = scheduler(2);
    const [a, b, c, d] = ["a", "b", "c", "d"].map((id) => task(id));
    for (const t of [a!, b!, c!, d!]) spawn(t);
    expect(started).toEqual(["a", "b"]);
    expect([slots.running, slots.waiting]).toEqual([2, 2]);
    end(b!);
    expect(started).toEqual(["a", "b", "c"]);
    expect([slots.running, slots.waiting]).toEqual([2, 1]);
    slots.dequeue("d");
    end(a!);
    expect(started).toEqual(["a", "b", "c"]);
    expect([slots.running, slots.waiting]).toEqual([1, 0]);
  });

  it("a wait gives its slot to a queued task and takes it back at once, over the cap, starting nothing until under it", () => {
    const { slots, task, spawn, end, started } = scheduler(1);
    const [a, b, c] = ["a", "b", "c"].map((id) => task(id));
    spawn(a!);
    spawn(b!);
    spawn(c!);
    const giveBack = slots.yield(a);
    expect(started).toEqual(["a", "b"]);
    giveBack();
    giveBack();
    expect(slots.running).toBe(2);
    end(b!);
    expect(started).toEqual(["a", "b"]);
    expect(slots.running).toBe(1);
    end(a!);
    expect(started).toEqual(["a", "b", "c"]);
    expect(slots.running).toBe(1);
  });

  it("a parent lends its slot to one foreground child at a time; the next queued one runs in it when the first ends", () => {
    const { slots, task, spawn, end, started } = scheduler(1);
    const parent = task("p");
    spawn(parent);
    const first = task("c1", { parent: "p", background: false });
    expect(slots.canLend(parent)).toBe(true);
    slots.lend(parent, first);
    first.started = true;
    expect(slots.canLend(parent)).toBe(false);
    const second = task("c2", { parent: "p", background: false });
    spawn(second);
    expect(slots.running).toBe(1);
    end(first);
    expect(started).toEqual(["p", "c2"]);
    expect(second.slot.borrowedFrom).toBe(parent);
    expect(slots.running).toBe(1);
    end(second);
    expect(slots.canLend(parent)).toBe(true);
  });

  it("a parent that ends while its child still runs in its slot leaves the slot to the child", () => {
    const { slots, task, spawn, end, started } = scheduler(1);
    const parent = task("p");
    spawn(parent);
    const child = task("c", { parent: "p", background: false });
    slots.lend(parent, child);
    child.started = true;
    spawn(task("q"));
    end(parent);
    expect(slots.running).toBe(1);
    expect(child.slot.owns).toBe(true);
    end(child);
    expect(started).toEqual(["p", "q"]);
    expect(slots.running).toBe(1);
  });

  it("a closed scheduler starts no queued task", () => {
    const { slots, task, spawn, end, started } = scheduler(1);
    const a = task("a");
    spawn(a);
    spawn(task("b"));
    slots.close();
    end(a);
    expect(started).toEqual(["a"]);
    expect([slots.running, slots.waiting]).toEqual([0, 1]);
  });
});
