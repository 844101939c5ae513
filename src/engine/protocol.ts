// Messages between the host thread and a sandbox worker. Values that cross into or out of the
// guest travel as JSON strings; the worker never parses them.
import type { MemoryLayout } from "./snapshot.js";

export const ERROR_KINDS = ["syntax", "exception", "timeout", "memory", "stack", "call_limit", "aborted", "sandbox"] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

// ---- the guest bridge -------------------------------------------------------------------------
// sandbox/prelude.js (plain JavaScript inside the sandbox) spells these as literals; its header
// points here, and test/engine/protocol.test.ts checks that the two agree.

/** Every operation the prelude asks of the host through `__codemode_host(op, …)`; guest-run.ts `hostCall` handles each. */
export const HOST_OPS = ["call", "text", "console", "store", "load", "sleep", "clearTimer", "unknownTool", "reentrant", "budget", "uncaught", "promiseRead"] as const;
export type HostOp = (typeof HOST_OPS)[number];

/** How the prelude's `result()` tags the program's value: `value` + its JSON, or `notJson` + why it has none. */
export const RESULT_TAG = { value: "=", notJson: "!" } as const;

/**
 * Clock readings of a replayable run travel in front of a tool call's arguments:
 * CLOCK_MARK + JSON of the readings + CLOCK_MARK + the arguments' JSON (codemode/ledger.ts
 * splits them). JSON text never starts with it.
 */
export const CLOCK_MARK = "~";

/** Limits one run is held to, already validated and merged with the defaults. */
export interface RunLimits {
  timeoutMs: number;
  memoryBytes: number;
  stackBytes: number;
  maxToolCalls: number;
  maxCrossingBytes: number;
  /** Per stored value and per session, in bytes of JSON. */
  storeValueBytes: number;
  storeSessionBytes: number;
  maxTimers: number;
  /** Model-visible output, in bytes: what `budget()` counts down (absent: not reported). */
  outputBytes?: number;
}

/** A program to run, as a caller hands it to `SandboxEngine.run`. */
export interface RunRequest {
  runId: string;
  code: string;
  /** Isolation key: runs with different keys never share a WASM instance. */
  session: string;
  limits: RunLimits;
  /** Tool paths as the guest reaches them: "name" or "namespace.name". */
  tools: string[];
  /** Names that are not bound, with why (an MCP server that failed to start): reaching one says so. */
  unavailable?: Record<string, string>;
  /** Read-only globals the program sees (e.g. `task` for a script agent), as JSON values. */
  globals: Record<string, unknown>;
  /** The session's stored values as JSON strings. */
  store: Record<string, string>;
  /**
   * Makes the program replayable (approvals, src/codemode/ledger.ts): the prelude seeds
   * Math.random from `seed` (four 32-bit words) and answers Date.now()/new Date() first from
   * `clock` (readings of an earlier run, as [value, repeats] pairs), then from the real clock,
   * sending every reading out with the next tool call. Absent: the guest's own clock and random.
   */
  determinism?: { seed: number[]; clock: number[] };
  /**
   * Math.random's state at the start of the run (QuickJS's xorshift64*, any non-zero 64-bit
   * value): the same seed gives the same sequence, e.g. to replay a run. Absent: a fresh random
   * seed every run.
   */
  randomSeed?: bigint;
}

/**
 * What the engine sends a worker: a copy of the caller's request stamped when a worker takes it
 * (engine.ts `dispatch`). The caller's object is never written to.
 */
export interface RunMessage extends RunRequest {
  type: "run";
  /** This run's number on its worker's abort word: the host aborts a run by storing it there. */
  abortSeq: number;
  /** Epoch milliseconds after which the run is a timeout: the clock starts when a worker takes the run. */
  deadline: number;
}

export interface SettleMessage {
  type: "settle";
  runId: string;
  callId: number;
  ok: boolean;
  /** JSON of the value the guest receives (ok) or of `{ name, code?, reason?, message }`; for a value, its binary encoding instead (bjson.ts). */
  json: string | Uint8Array;
}

export interface AbortMessage {
  type: "abort";
  runId: string;
}

/** On the worker's main port; tool results (SettleMessage) travel on their own port. */
/** A run was written to the shared-memory ring while the worker was not watching it: look there. */
export interface RingMessage {
  type: "ring";
}

export type HostToWorker = RunMessage | AbortMessage | RingMessage;

export interface CallMessage {
  type: "call";
  runId: string;
  callId: number;
  path: string;
  args: string;
}

export interface ConsoleLine {
  level: "log" | "info" | "warn" | "error" | "debug";
  text: string;
}

/** Output produced since the last flush; sent whenever the run waits and at the end. */
export interface FlushMessage {
  type: "flush";
  runId: string;
  text: string[];
  console: ConsoleLine[];
}

export interface StoreMessage {
  type: "store";
  runId: string;
  key: string;
  /** Absent: the key was deleted. */
  json?: string;
}

export interface GuestError {
  kind: ErrorKind;
  name?: string;
  message: string;
  line?: number;
  column?: number;
  /** For a timeout: how the program spent its last stretch, so the host can name the fix. */
  stall?: Stall;
}

export interface Stall {
  /** Milliseconds the program had been running bytecode without yielding when it was stopped (0: it was waiting). */
  busyMs: number;
  /** Times the program waited for a tool result, a timer or a sleep. */
  waits: number;
  pendingCalls: number;
  pendingTimers: number;
}

export interface DoneMessage {
  type: "done";
  runId: string;
  ok: boolean;
  /** JSON of the return value, when there was one and it was JSON. */
  valueJson?: string;
  error?: GuestError;
  warnings: string[];
  /** Tool calls the guest started but never saw settled: the host cancels them. */
  pendingCalls: number[];
  /** The WASM instance was thrown away (trap, abort, failed disposal). */
  instanceDiscarded: boolean;
  /** Output not yet flushed when the run ended: carried here to save a message on every run. */
  text?: string[];
  console?: ConsoleLine[];
  /**
   * The worker kept more memory than it may hold for warm sessions (linear memory never shrinks,
   * and a dropped instance is freed only when its thread's heap is collected): the host replaces it.
   */
  retire?: boolean;
  /**
   * Which instance ran the program (unique across workers), whether its VM came from a snapshot,
   * and where the instance came from: the session's own (`kept`), a ready one (a snapshot or the
   * spare, made off the critical path), or `built` for this run (instantiated while it waited).
   */
  /** Where the run's VM came from; `prepared`: its state was restored and configured before the request came (worker.ts). */
  vm?: { instance: string; restored: boolean; prepared: boolean; source: "kept" | "ready" | "built" };
}

export interface ReadyMessage {
  type: "ready";
}

/** This build's memory layout (snapshot.ts), derived once and handed to later workers. */
export interface LayoutMessage {
  type: "layout";
  layout: MemoryLayout;
}

/** Snapshots are unsupported here and the worker takes the ordinary path: said once, with the reason. */
export interface FallbackMessage {
  type: "fallback";
  reason: string;
}

/** Whether the worker's build decodes QuickJS's binary format as the host writes it (bjsonSelfTest). */
export interface BinaryMessage {
  type: "binary";
  ok: boolean;
  reason?: string;
}

export type WorkerToHost = CallMessage | FlushMessage | StoreMessage | DoneMessage | ReadyMessage | LayoutMessage | FallbackMessage | BinaryMessage;
