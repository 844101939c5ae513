import { describe, it, expect } from "vitest";
import { assertTransition, canTransition, TASK_STATUSES, TaskError, type TaskStatus } from "../../src/tasks/index.js";

const LEGAL: Array<[TaskStatus, TaskStatus]> = [
  ["queued", "running"],
  ["queued", "canceled"],
  ["queued", "lost"],
  // A task whose queue worker was lost, queued again for an agent with `retries` (docs/distributed.md).
  ["running", "queued"],
  ["running", "stopping"],
  ["running", "succeeded"],
  ["running", "failed"],
  ["running", "canceled"],
  ["running", "lost"],
  ["stopping", "succeeded"],
  ["stopping", "failed"],
  ["stopping", "canceled"],
  ["stopping", "lost"],
];

describe("task status transitions", () => {
  it("allows exactly the transitions of docs/tasks.md#the-task-model", () => {
    const allowed: string[] = [];
    for (const from of TASK_STATUSES) for (const to of TASK_STATUSES) if (canTransition(from, to)) allowed.push(`${from}>${to}`);
    expect(allowed).toStrictEqual(LEGAL.map(([a, b]) => `${a}>${b}`));
  });

  it("refuses a move out of a terminal status with what to do instead", () => {
    let caught: unknown;
    try {
      assertTransition("T1", "succeeded", "running");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(TaskError);
    expect((caught as TaskError).code).toBe("task_illegal_transition");
    expect((caught as TaskError).message).toBe('task T1 cannot go from "succeeded" to "running": it has already ended (succeeded); read its output with ptc_task_output or spawn a new task');
  });

  it("names the legal targets when a live status is moved illegally", () => {
    expect(() => assertTransition("T2", "queued", "succeeded")).toThrow('task T2 cannot go from "queued" to "succeeded": from "queued" it can only become "running", "canceled", "lost"');
  });
});
