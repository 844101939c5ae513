// The `function` driver: an in-process async function, for embedding and tests.
import type { Driver } from "./types.js";
import { messageOf } from "../../text.js";

/** Runs an in-process async function; its return value (a string) is appended as final text. */
export const functionDriver: Driver = async ({ task, agent, signal, emit, trace }) => {
  if (!agent.run) return { exitCode: 1, error: `agent "${agent.name}" has no run function` };
  try {
    const out = await agent.run({ task: task.task, taskId: task.id, signal, emit, ...(trace ? { trace } : {}) });
    if (typeof out === "string" && out.length > 0) emit({ type: "text", text: out });
    return { exitCode: 0 };
  } catch (err) {
    return { exitCode: 1, error: messageOf(err) };
  }
};
