// How a run's failures are described to the host and, through it, to a model: the kind of a
// thrown value, the line in the user's own program, the message of a stopped run, the
// unknown-tool message with its suggestions. Pure functions of what the guest reported: nothing
// here touches a QuickJS handle (guest-run.ts reads the values and calls these).
import { closestNames } from "../closest-names.js";
import { formatBytes, headChars } from "../text.js";
import type { ErrorKind, GuestError, RunLimits, Stall } from "./protocol.js";

/** The program is wrapped so that top-level `await` and `return` work; kept on line 1 so line numbers match. */
const PROGRAM_PREFIX = "(async () => {";
const PROGRAM_SUFFIX = "\n})()";
/** The file name QuickJS gives the user's program in stacks: how its frames are told from the prelude's. */
export const PROGRAM_FILE = "program.js";

/** The user's program as the run evaluates it: an async function called at once. */
export function wrapProgram(code: string): string {
  return PROGRAM_PREFIX + code + PROGRAM_SUFFIX;
}

/** Why the host stopped a run, when it did. */
export type StopReason = "timeout" | "aborted" | "call_limit" | "deadlock" | "memory";

/** A thrown value as the prelude's `describe` reports it (sandbox/prelude.js). */
export interface ThrownInfo {
  name?: string;
  message?: string;
  stack?: string;
  /** Not an Error-like object: a string, a number, null … (its message is how it renders). */
  thrown?: boolean;
}

/** The prelude's description of a thrown value, or what is said when it cannot be read. */
export function parseThrown(json: string): ThrownInfo {
  try {
    return JSON.parse(json) as ThrownInfo;
  } catch {
    return { message: "the thrown value could not be read" };
  }
}

/**
 * A thrown guest value as a GuestError. `compiling`: it came from compiling the program (only
 * then is a SyntaxError the program's syntax). `memoryExhausted`: the allocator hit the
 * instance's cap during the run.
 */
export function thrownError(info: ThrownInfo, compiling: boolean, memoryExhausted: boolean, limits: RunLimits): GuestError {
  const name = info.name;
  const message = info.message ?? "";
  // Out of memory, QuickJS may fail to build even its error object and throw null instead.
  if (info.thrown && message === "null" && memoryExhausted) {
    return outOfMemory(limits);
  }
  const error: GuestError = { kind: classify(name, message, compiling), message: name && !info.thrown ? `${name}: ${message}` : message };
  if (name) error.name = name;
  const position = userPosition(info.stack);
  if (position) {
    error.line = position.line;
    error.column = position.column;
  }
  return error;
}

function classify(name: string | undefined, message: string, compiling: boolean): ErrorKind {
  // A SyntaxError thrown while running (JSON.parse, new Function) is the program's exception.
  if (name === "SyntaxError" && compiling) return "syntax";
  // QuickJS refuses strings and arrays past its size limits before memory runs out: the same failure to a program.
  if (/out of memory|string too long|array too long/i.test(message) && name !== "TypeError") return "memory";
  if ((name === "InternalError" || name === "RangeError") && /stack overflow|call stack/i.test(message)) return "stack";
  return "exception";
}

/** The first stack frame in the user's program, with line 1's column corrected for the wrapper. */
function userPosition(stack: string | undefined): { line: number; column: number } | undefined {
  if (!stack) return undefined;
  const match = /program\.js:(\d+)(?::(\d+))?/.exec(stack);
  if (!match) return undefined;
  const line = Number(match[1]);
  let column = match[2] === undefined ? 1 : Number(match[2]);
  if (line === 1) column = Math.max(1, column - PROGRAM_PREFIX.length);
  return { line, column };
}

/**
 * The error of a stopped run. (No line: QuickJS's interrupt error names the start of the
 * interrupted frame, not where it was, which would point a model at the wrong line.)
 */
/** The program's heap reached its cap. */
export function outOfMemory(limits: RunLimits): GuestError {
  return { kind: "memory", message: `out of memory: the program reached its ${formatBytes(limits.memoryBytes)} memory limit` };
}

export function stopError(reason: StopReason | undefined, limits: RunLimits, stall: Stall): GuestError {
  switch (reason) {
    case "memory":
      return outOfMemory(limits);
    case "aborted":
      return { kind: "aborted", message: "the run was aborted by the host" };
    case "call_limit":
      return { kind: "call_limit", message: `the program made more than ${limits.maxToolCalls} tool calls (the per-run limit)` };
    case "deadlock":
      return {
        kind: "timeout",
        message: "the program is waiting for a promise that nothing can settle (no tool call, timer or job is pending)",
      };
    default: {
      const error: GuestError = { kind: "timeout", message: `the program ran past its ${limits.timeoutMs} ms deadline` };
      // How the program spent its last stretch: the host names the fix from it (codemode/diagnose.ts).
      if (reason === "timeout") error.stall = stall;
      return error;
    }
  }
}

/** The warning for an exception nothing could catch (a setTimeout callback's), its text cut at `maxChars`. */
export function uncaughtWarning(info: ThrownInfo, maxChars: number): string {
  const position = userPosition(info.stack);
  const what = info.name && !info.thrown ? `${info.name}: ${info.message ?? ""}` : (info.message ?? "");
  const at = position ? ` (line ${position.line}, column ${position.column})` : "";
  return `a setTimeout callback threw and nothing caught it${at}: ${what.length > maxChars ? headChars(what, maxChars) + "…" : what}`;
}

/** Longest property name a promise-read warning shows whole. */
const READ_NAME_CHARS = 60;

/**
 * The warning for a promise used as its value (a forgotten `await`), from the prelude's
 * promiseRead: `what` is the property read ("toJSON" when JSON.stringify met the promise, "" when
 * it was turned into a string), `stack` where it happened.
 */
export function promiseReadWarning(what: string, stack: string | undefined): string {
  const position = userPosition(stack);
  const at = position ? `line ${position.line}: ` : "";
  if (what === "") return `${at}a promise was turned into a string (it shows as "[a Promise: await it to get its value]"): await it first and use its value`;
  if (what === "toJSON") return `${at}JSON.stringify met a promise, which it writes as {}: await the promise first and stringify its value`;
  const name = /^[A-Za-z_$][\w$]*$/.test(what)
    ? `.${what.length > READ_NAME_CHARS ? headChars(what, READ_NAME_CHARS) + "…" : what}`
    : `[${JSON.stringify(what.length > READ_NAME_CHARS ? headChars(what, READ_NAME_CHARS) + "…" : what)}]`;
  return `${at}${name} was read from a promise, not from the value it resolves to (it gave undefined): await the promise where it is made (const r = await tools.name(…)) or write (await promise)${name}`;
}

/** An error the engine itself threw (not the guest): the instance trapped or failed. */
export function describeHostError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** Longest unknown tool name that is matched against the real names and shown whole. */
const UNKNOWN_NAME_CHARS = 200;

/** "tools.x is not a tool", with the closest names a model most likely meant. */
export function unknownToolMessage(paths: readonly string[], prefix: string, key: string, unavailable?: Record<string, string>): string {
  if (prefix === "" && unavailable !== undefined && Object.hasOwn(unavailable, key)) return `tools.${key} is not available: ${unavailable[key]}`;
  const names = new Set<string>();
  for (const path of paths) {
    const dot = path.indexOf(".");
    if (prefix === "") names.add(dot < 0 ? path : path.slice(0, dot));
    else if (dot >= 0 && path.slice(0, dot) === prefix) names.add(path.slice(dot + 1));
  }
  const where = prefix ? `tools.${prefix}` : "tools";
  const known = [...names];
  // Edit distance is quadratic: a name far longer than any tool's (tools["x".repeat(1e7)]) ran the
  // worker past its deadline into a hard stop. Such a name is no typo; show its start only.
  const typo = key.length <= UNKNOWN_NAME_CHARS;
  const suggestions = typo ? closestNames(key, known) : [];
  const hint = suggestions.length ? ` Did you mean ${suggestions.map((name) => `${where}.${name}`).join(", ")}?` : "";
  const list = known.length ? ` Available: ${known.slice(0, 40).join(", ")}${known.length > 40 ? ", …" : ""}.` : " No tools are bound.";
  const shown = typo ? key : `${key.slice(0, UNKNOWN_NAME_CHARS)}… (${key.length} characters)`;
  return `${where}.${shown} is not a tool.${hint}${list}`;
}
