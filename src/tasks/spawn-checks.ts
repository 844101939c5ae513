// What a spawn request may ask for, checked before anything is recorded: the working directory
// (confined to the workspace or the roots an operator configured), the size of the task text and
// label, and the model (only one the agent lists).
import { realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import type { AgentDefinition } from "./agents.js";
import { TaskError } from "./errors.js";
import { formatBytes, headChars } from "../text.js";

/** Longest task text (UTF-8 bytes); a record holds it, and a command gets it as one argument. */
export const MAX_TASK_BYTES = 64 * 1024;
/** Longest label kept (characters); a longer one is cut, ending in "…". */
export const MAX_LABEL_CHARS = 200;

/** Directories as the host compares them: absolute and with symlinks resolved where they exist. */
export function realRoots(roots: readonly string[], base: string): string[] {
  return roots.map((root) => {
    const abs = resolve(base, root);
    try {
      return realpathSync(abs);
    } catch {
      return abs;
    }
  });
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * The directory a task runs in: `requested` resolved from `base` (symlinks followed), which must
 * be an existing directory inside one of `roots`.
 */
export function confineCwd(requested: string, base: string, roots: readonly string[]): string {
  const abs = resolve(base, requested);
  const where = roots.length === 1 ? roots[0] : `one of ${roots.join(", ")}`;
  let real: string;
  try {
    real = realpathSync(abs);
  } catch {
    throw new TaskError("invalid_argument", `"cwd" ${JSON.stringify(requested)} does not exist (it resolves to ${abs}); pass an existing directory inside ${where}`);
  }
  if (!roots.some((root) => inside(root, real))) {
    throw new TaskError(
      "invalid_argument",
      `"cwd" ${JSON.stringify(requested)} is outside the directories tasks may run in (${roots.join(", ")}); pass a directory inside ${where}, or leave "cwd" out to run in ${roots[0]} (an operator adds directories with tasks.cwdRoots)`,
    );
  }
  if (!statSync(real).isDirectory()) throw new TaskError("invalid_argument", `"cwd" ${JSON.stringify(requested)} is not a directory; pass a directory inside ${where}`);
  return real;
}

export function checkTaskSize(task: string): void {
  const bytes = Buffer.byteLength(task);
  if (bytes > MAX_TASK_BYTES) {
    throw new TaskError("invalid_argument", `"task" is ${formatBytes(bytes)}; a task is at most ${formatBytes(MAX_TASK_BYTES)} — write large inputs to a file and name the file in the task`);
  }
}

export function boundedLabel(label: string): string {
  if (label.length <= MAX_LABEL_CHARS) return label;
  return `${headChars(label, MAX_LABEL_CHARS - 1)}…`;
}

/** The model a task runs with: the agent's own, or one the agent lists in `models`. */
export function chooseModel(agent: AgentDefinition, requested: string | undefined): string | undefined {
  if (requested === undefined || requested === agent.model) return agent.model;
  if (agent.models?.includes(requested)) return requested;
  const allowed = [...new Set([...(agent.model ? [agent.model] : []), ...(agent.models ?? [])])];
  throw new TaskError(
    "invalid_argument",
    allowed.length > 1 || agent.models
      ? `"model" ${JSON.stringify(requested)} is not one agent "${agent.name}" may use; choose one of ${allowed.map((m) => JSON.stringify(m)).join(", ")}, or leave "model" out`
      : `"model" cannot be chosen for agent "${agent.name}": it runs ${agent.model ? JSON.stringify(agent.model) : "its own default model"} and lists no other models; leave "model" out (its author can list choices in a "models" field of ${agent.source})`,
  );
}
