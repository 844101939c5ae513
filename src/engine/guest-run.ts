// One program in one QuickJS runtime: set-up, the promise bridge, the job-pumping loop and a
// teardown that never leaves the WASM instance poisoned. Runs inside a sandbox worker thread.
//
// The loop never awaits the program's own promise through the guest's `Promise` (a program may
// replace it): it pumps jobs, reads the promise state directly and, when nothing is runnable,
// waits for the next host event — a tool result, a timer, an abort or the deadline.
//
// Handles: every QuickJS handle a step creates is consumed (Lifetime.consume) or managed by a
// Scope within that step; the only ones that outlive a step are the deferred promises of timers,
// owned by the PendingPromises table below (guest-promises.ts). A tool call's promise is the
// prelude's own: the host holds only its call id, and settles it by handing the prelude results.
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten-core";
import type { WasmInstance } from "./wasm-instance.js";
import { GuestHeapExhausted, newGuestString, readGuestString } from "./guest-strings.js";
import { callDirectly } from "./host-function.js";
import { decodeInGuest } from "./bjson.js";
import { freshVm, installConfig, runConfig, type GuestVm, type HostDispatch } from "./guest-vm.js";
import { PendingPromises, rejectReturned, settleOwned } from "./guest-promises.js";
import {
  describeHostError,
  outOfMemory,
  parseThrown,
  PROGRAM_FILE,
  stopError,
  thrownError,
  uncaughtWarning,
  promiseReadWarning,
  unknownToolMessage,
  wrapProgram,
  type StopReason,
  type ThrownInfo,
} from "./guest-errors.js";
import { formatBytes, headChars } from "../text.js";
import { RESULT_TAG, type ConsoleLine, type DoneMessage, type GuestError, type HostOp, type RunMessage, type SettleMessage, type Stall, type WorkerToHost } from "./protocol.js";

/** Output is handed to the host in batches so a flood of tiny `text()` calls is not a flood of messages. */
const FLUSH_BYTES = 256 * 1024;
const CONSOLE_LINES = 500;
const CONSOLE_LINE_CHARS = 2_000;
/** setTimeout callbacks whose exceptions are reported one by one; the rest are counted. */
const UNCAUGHT_REPORTED = 5;
/** Promise reads (a forgotten await) reported per run, each place once: the first is what a model needs. */
const PROMISE_READS_REPORTED = 5;

interface Timer {
  /** performance.now() time at which it fires. */
  due: number;
  /** Creation order: timers due at the same time fire in it. */
  order: number;
  deferred: QuickJSDeferredPromise;
}

/**
 * The run's side of the bridge to the host. Messages the run posts are collected and sent by
 * `send()`; host messages (tool results) are delivered through `GuestRun.settle` by `poll()`.
 */
export interface HostLink {
  /** Send what the run posted since the last send, in order, as one batch. */
  send(): void;
  /** Deliver the tool results that have arrived; true if there were any. */
  poll(): boolean;
  /**
   * Block the thread until a host message, an abort of this run or `untilMs` (a performance.now()
   * time: the deadline or the next timer), whichever comes first. Blocking is what lets a
   * result wake the run without an event-loop turn; terminating the worker still stops it.
   */
  wait(untilMs: number, callsInFlight: number): void;
}

/** For a run with no host behind it (tests): nothing arrives, waits only pass time. */
function localLink(): HostLink {
  const word = new Int32Array(new SharedArrayBuffer(4));
  return {
    send() {},
    poll: () => false,
    wait(untilMs) {
      const remaining = untilMs - performance.now();
      if (remaining > 0) Atomics.wait(word, 0, 0, Math.min(remaining, 50));
    },
  };
}

/** Where a run's VM comes from: a snapshot's restored template, or one built for the run. */
export interface VmSource {
  /** The host function of the VM dispatches through this (set while the run owns the VM). */
  dispatch: HostDispatch;
  open(): GuestVm;
}

export class GuestRun {
  private vm: GuestVm | undefined;
  private readonly source: VmSource;
  private runtime!: QuickJSRuntime;
  private context!: QuickJSContext;
  private stopReason: StopReason | undefined;
  private nextCallId = 1;
  private callCount = 0;
  /** Tool calls sent to the host and not settled, by call id, in the order they were made. Added by startCall only; removed by settle and release. */
  private readonly inflight = new Set<number>();
  /** Handing results to the guest ran out of memory (or stack): the run ends with that error. */
  private deliveryFailure: GuestError | undefined;
  /** Results taken from the host and not yet handed to the guest: delivered together after each poll. */
  private arrived: Array<Pick<SettleMessage, "callId" | "ok" | "json">> = [];
  /**
   * Pending sleeps and setTimeouts, by the guest's timer id (internal sleeps: negative ids).
   * Added by startTimer only; removed by fireDueTimers, clearTimer and release.
   */
  private readonly timers = new PendingPromises<Timer>();
  private nextInternalTimer = -1;
  private readonly store: Map<string, string>;
  private readonly heapExhaustedAtStart: number;
  /** The program's own promise while it is being driven. */
  private program: QuickJSHandle | undefined;
  /** The prelude's pristine JSON.parse: builds guest strings that newString would cut at a NUL. */
  private fromJson: QuickJSHandle | undefined;
  private storeBytes = 0;
  private uncaughtCount = 0;
  private readonly promiseReads = new Set<string>();
  private pendingText: string[] = [];
  private pendingTextBytes = 0;
  private pendingConsole: ConsoleLine[] = [];
  private consoleLines = 0;
  private consoleDropped = 0;
  private readonly warnings: string[] = [];
  private nextTimerOrder = 0;
  /** A call was sent in this job pump already: later ones wait for the pump's end, to go as one batch. */
  private sentThisPump = false;
  /** UTF-8 bytes of text() output so far, joining newlines included: what budget() reports. */
  private textBytes = 0;
  private textPieces = 0;
  /** When the program last resumed after waiting: a stop long after it means it never yielded. */
  private runningSince = 0;
  private waits = 0;
  /** Busy time when the deadline interrupted running bytecode (undefined: it was waiting). */
  private busyAtStop: number | undefined;

  constructor(
    private readonly instance: WasmInstance,
    private readonly request: RunMessage,
    prelude: string,
    private readonly abortFlag: Int32Array,
    private readonly post: (message: WorkerToHost) => void,
    /** Takes tool results already queued for this worker; true if it settled any. */
    private readonly link: HostLink = localLink(),
    source?: VmSource,
  ) {
    if (source) this.source = source;
    else {
      const dispatch: HostDispatch = { current: undefined };
      this.source = { dispatch, open: () => freshVm(instance, prelude, dispatch, undefined) };
    }
    this.store = new Map(Object.entries(request.store));
    for (const [key, json] of this.store) this.storeBytes += key.length + json.length;
    this.heapExhaustedAtStart = instance.heapExhausted;
  }

  get runId(): string {
    return this.request.runId;
  }

  /** The run's number on its worker: tool results and aborts name it. */
  get abortSeq(): number {
    return this.request.abortSeq;
  }

  /**
   * A tool result from the host, handed to the guest with the others of its poll (deliverArrived).
   * Late results (after the run ended) and unknown call ids are ignored.
   */
  settle(message: Pick<SettleMessage, "callId" | "ok" | "json">): void {
    if (this.inflight.delete(message.callId)) this.arrived.push(message);
  }

  /**
   * Settle the calls whose results arrived, in arrival order: the successful JSON ones of a run of
   * arrivals in one guest call (their texts back to back), a decoded value or an error one by one.
   */
  private deliverArrived(): void {
    const arrived = this.arrived;
    if (arrived.length === 0) return;
    this.arrived = [];
    // Results that cannot reach the program end the run as out of memory.
    this.orOutOfMemory(() => this.deliver(arrived));
  }

  /** `work`'s value; undefined, and the run stopped as out of memory, when the guest heap could not hold a string it moved. */
  private orOutOfMemory<T>(work: () => T): T | undefined {
    try {
      return work();
    } catch (error) {
      if (!(error instanceof GuestHeapExhausted)) throw error;
      this.stopReason ??= "memory";
      return undefined;
    }
  }

  private deliver(arrived: Array<Pick<SettleMessage, "callId" | "ok" | "json">>): void {
    const { context } = this;
    const handles = this.vm!.handles;
    let meta = "";
    let body = "";
    let count = 0;
    let first = 0;
    const flush = () => {
      if (count === 0) return;
      const args = [count === 1 ? context.newNumber(first) : newGuestString(context, `[${meta}]`), newGuestString(context, body)];
      meta = body = "";
      count = 0;
      this.callGuest(handles.deliver, args);
    };
    for (const message of arrived) {
      if (message.ok && typeof message.json === "string") {
        // A NUL (never in JSON text) would cut the guest's copy short: such a text goes alone.
        const alone = message.json.includes("\0");
        if (alone) flush();
        if (count++ === 0) first = message.callId;
        meta += `${meta === "" ? "" : ","}${message.callId},${message.json.length}`;
        body += message.json;
        if (alone) flush();
        continue;
      }
      flush();
      const [how, value] = this.toolOutcome(message);
      this.callGuest(handles.settle, [context.newNumber(message.callId), how === "resolve" ? context.true : context.false, value]);
    }
    flush();
  }

  /**
   * Call a prelude function with handles it consumes. It fails only on an interrupt (the deadline,
   * an abort: the run's loop sees stopReason) or when memory runs out, which the calls it was
   * settling learn from the run's end.
   */
  private callGuest(fn: QuickJSHandle, args: QuickJSHandle[]): void {
    const { context } = this;
    try {
      const result = context.callFunction(fn, context.undefined, ...args);
      if (result.error) {
        const error = result.error.consume((thrown) => this.describeError(this.vm!.handles.error, thrown));
        if (error.kind === "memory" || error.kind === "stack") this.deliveryFailure ??= error;
        else if (!this.stopReason) this.warnings.push(`tool results could not be delivered: ${error.message}`);
      } else result.value.dispose();
    } finally {
      for (const arg of args) if (arg !== context.true && arg !== context.false && arg.alive) arg.dispose();
    }
  }

  /** What a tool call's promise settles with when that is not JSON text to parse, as a new handle the caller owns. */
  private toolOutcome(message: Pick<SettleMessage, "ok" | "json">): ["resolve" | "reject", QuickJSHandle] {
    const { context } = this;
    if (typeof message.json !== "string") {
      // Already a value ([result]: see the prelude), decoded from QuickJS's own format.
      const decoded = decodeInGuest(context, message.json);
      if ("value" in decoded) return ["resolve", decoded.value];
      if ("error" in decoded) return ["reject", decoded.error];
      return ["reject", context.newError({ name: "InternalError", message: "out of memory" })];
    }
    // No stack yet: QuickJS gives it the frame of the program's await that first throws it.
    return ["reject", this.newGuestError(JSON.parse(message.json))];
  }

  /** An Error the program can catch: name, message, and the machine-readable code and reason. */
  private newGuestError(payload: { name: string; code?: string; reason?: string; message: string; fields?: Record<string, string> }): QuickJSHandle {
    const { context } = this;
    const error = context.newError({ name: payload.name, message: "" });
    const properties: Array<[string, string | undefined]> = [["message", payload.message], ["code", payload.code], ["reason", payload.reason], ...Object.entries(payload.fields ?? {})];
    for (const [key, value] of properties) {
      if (value !== undefined) this.guestString(value).consume((handle) => context.setProp(error, key, handle));
    }
    return error;
  }

  /**
   * A guest string equal to `value`. newString passes through a C string, which ends at the first
   * NUL ("before\0after" arrived as "before"), so such strings are built from their JSON instead.
   */
  private guestString(value: string): QuickJSHandle {
    const { context } = this;
    const fromJson = this.fromJson;
    if (!value.includes("\0") || !fromJson?.alive) return newGuestString(context, value);
    const result = newGuestString(context, JSON.stringify(value)).consume((json) => context.callFunction(fromJson, context.undefined, json));
    if (result.error) {
      result.error.dispose();
      return newGuestString(context, value);
    }
    return result.value;
  }

  /** A string the prelude sent as JSON: getString reads a C string, which ends at a NUL and mangles lone surrogates. */
  private jsonArg(handle: QuickJSHandle): string {
    const value: unknown = JSON.parse(readGuestString(this.context, handle));
    if (typeof value !== "string") throw new TypeError("the bridge expected a JSON string");
    return value;
  }

  abort(): void {
    this.stopReason ??= "aborted";
  }

  async execute(): Promise<DoneMessage> {
    const { request, instance } = this;
    let outcome: Omit<DoneMessage, "type" | "runId" | "warnings" | "pendingCalls" | "instanceDiscarded">;
    let discarded = false;
    try {
      this.source.dispatch.current = (args) => this.hostCall(args);
      const vm = (this.vm = this.source.open());
      this.runtime = vm.runtime;
      this.context = vm.context;
      // The tool-call loop's host calls skip the library's per-call wrapper (host-function.ts).
      callDirectly(vm.context);
      this.runtime.setMemoryLimit(request.limits.memoryBytes);
      this.runtime.setMaxStackSize(request.limits.stackBytes);
      if (request.randomSeed !== undefined && !vm.seedRandom(BigInt(request.randomSeed))) {
        this.warnings.push("randomSeed was not applied: this build's Math.random state could not be located");
      }
      outcome = this.runProgram(vm);
      if (outcome.ok) this.noteUnfiredCallbacks();
    } catch (error) {
      // Anything thrown by the engine itself (not by the guest) means the instance trapped: in a
      // heap this run exhausted, that is the program's memory running out.
      discarded = true;
      const exhausted = error instanceof GuestHeapExhausted || instance.heapExhausted > this.heapExhaustedAtStart;
      outcome = { ok: false, error: exhausted ? outOfMemory(request.limits) : { kind: "sandbox", message: `the sandbox engine failed: ${describeHostError(error)}` } };
    }
    const pendingCalls = [...this.inflight.keys()];
    // Linear memory never shrinks: an instance whose heap this run exhausted would keep its whole
    // cap resident for the session's later runs. Recycle it; the next run takes a fresh spare.
    if (instance.heapExhausted > this.heapExhaustedAtStart) discarded = true;
    if (discarded) instance.dead = true;
    if (this.consoleDropped > 0) this.warnings.push(`${this.consoleDropped} console lines were dropped (limit ${CONSOLE_LINES} per run)`);
    const done: DoneMessage = { type: "done", runId: request.runId, ...outcome, warnings: this.warnings, pendingCalls, instanceDiscarded: discarded };
    // The last output rides on the result: one message fewer on every run that printed.
    if (this.pendingText.length > 0) done.text = this.pendingText.length > 1 ? [this.pendingText.join("\n")] : this.pendingText;
    if (this.pendingConsole.length > 0) done.console = this.pendingConsole;
    this.pendingText = [];
    this.pendingConsole = [];
    return done;
  }

  /** setTimeout callbacks still waiting when the program ended never run: say so, once. */
  private noteUnfiredCallbacks(): void {
    let unfired = 0;
    // Positive keys are the program's setTimeout ids (sleep's timers are the host's own).
    for (const [key] of this.timers.entriesView()) if (key > 0) unfired++;
    if (unfired === 0) return;
    this.warnings.push(
      `${unfired === 1 ? "1 setTimeout callback" : `${unfired} setTimeout callbacks`} had not run when the program ended and never will: to run ${unfired === 1 ? "it" : "them"}, await sleep(ms) (or a promise ${unfired === 1 ? "it resolves" : "they resolve"}) before the program ends; clearTimeout what should not run`,
    );
  }

  private shouldInterrupt(): boolean {
    if (this.stopReason) return true;
    if (Atomics.load(this.abortFlag, 0) === this.request.abortSeq) {
      this.stopReason = "aborted";
      return true;
    }
    if (Date.now() > this.request.deadline) {
      this.stopReason = "timeout";
      this.busyAtStop = performance.now() - this.runningSince;
      return true;
    }
    return false;
  }

  private runProgram(vm: GuestVm): Pick<DoneMessage, "ok" | "valueJson" | "error"> {
    const { context, runtime, request } = this;
    const { result: serialise, error: describe } = vm.handles;
    this.fromJson = vm.handles.fromJson;
    // A state the worker prepared ahead of the run comes only with this run's configuration installed.
    if (vm.installed === undefined) installConfig(vm, runConfig(request));
    // Only the user's program is interruptible: the prelude is ours, short, and must finish.
    runtime.setInterruptHandler(() => this.shouldInterrupt());
    if (this.shouldInterrupt()) return { ok: false, error: this.stopError() };
    this.runningSince = performance.now();
    const evaluated = context.evalCode(wrapProgram(request.code), PROGRAM_FILE, { type: "global" });
    if (evaluated.error) {
      // Only a failure to compile is a syntax error: the body of the async wrapper runs later.
      const error = evaluated.error.consume((thrown) => this.describeError(describe, thrown, true));
      return this.stopReason ? { ok: false, error: this.stopError() } : { ok: false, error };
    }
    return evaluated.value.consume((program) => {
      this.program = program;
      try {
        return this.drive(program, serialise, describe);
      } finally {
        this.program = undefined;
      }
    });
  }

  /** Pump jobs until the program settles, waiting for host events whenever nothing is runnable. */
  private drive(program: QuickJSHandle, serialise: QuickJSHandle, describe: QuickJSHandle): Pick<DoneMessage, "ok" | "valueJson" | "error"> {
    const { context, runtime, link } = this;
    // The deadline on the monotonic clock the waits use; reaching it while waiting is the timeout
    // (the interrupt handler covers running bytecode).
    const deadlineAt = performance.now() + (this.request.deadline - Date.now());
    for (;;) {
      if (this.stopReason || this.shouldInterrupt()) return { ok: false, error: this.stopError() };
      this.sentThisPump = false;
      const jobs = runtime.executePendingJobs();
      if (jobs.error) {
        // A job that throws past the promise machinery is an interrupt or an engine-level error.
        const error = jobs.error.consume((thrown) => this.describeError(describe, thrown));
        if (this.stopReason) return { ok: false, error: this.stopError() };
        if (error.kind === "memory" || error.kind === "stack") return { ok: false, error };
        this.warnings.push(`a promise job failed: ${error.message}`);
      }
      const state = context.getPromiseState(program);
      if (state.type === "fulfilled") {
        return state.value.consume((value) => (this.stopReason ? { ok: false, error: this.stopError() } : this.readValue(serialise, describe, value)));
      }
      if (state.type === "rejected") {
        const error = state.error.consume((thrown) => this.describeError(describe, thrown));
        return this.stopReason ? { ok: false, error: this.stopError() } : { ok: false, error };
      }
      if (runtime.hasPendingJob()) continue;
      if (this.inflight.size === 0 && this.timers.size === 0) {
        // An interrupt during the pump can end a job flood without an error reaching here
        // (the promise machinery swallows it): that is still the deadline, not a deadlock.
        this.stopReason ??= "deadlock";
        return { ok: false, error: this.stopError() };
      }
      // Nothing runnable: hand the host what the pump produced (the calls after its first, output)
      // in one batch, then take every result that has arrived and every timer that is due, and
      // only if there is none sleep until one can be.
      this.flush();
      link.send();
      let woke = this.poll();
      if (this.fireDueTimers()) woke = true;
      while (!woke) {
        const now = performance.now();
        if (now >= deadlineAt) {
          this.stopReason ??= "timeout";
          return { ok: false, error: this.stopError() };
        }
        link.wait(Math.min(deadlineAt, this.nextTimerDue()), this.inflight.size);
        // Only an abort here: the deadline while waiting is the check above (the interrupt
        // handler's would count the wait as busy time).
        if (Atomics.load(this.abortFlag, 0) === this.request.abortSeq) this.stopReason ??= "aborted";
        if (this.stopReason) return { ok: false, error: this.stopError() };
        woke = this.poll();
        if (this.fireDueTimers()) woke = true;
      }
      if (this.deliveryFailure) return { ok: false, error: this.deliveryFailure };
      this.waits++;
      this.runningSince = performance.now();
    }
  }

  /** Take the results that arrived and hand them to the guest; true if there were any. */
  private poll(): boolean {
    const woke = this.link.poll();
    this.deliverArrived();
    return woke;
  }

  private nextTimerDue(): number {
    let next = Infinity;
    for (const [, timer] of this.timers.entriesView()) if (timer.due < next) next = timer.due;
    return next;
  }

  /** Resolve the timers that are due, earliest first (creation order among equals); true if any. */
  private fireDueTimers(): boolean {
    if (this.timers.size === 0) return false;
    const now = performance.now();
    const due: Array<[number, Timer]> = [];
    for (const entry of this.timers.entriesView()) if (entry[1].due <= now) due.push(entry);
    if (due.length === 0) return false;
    due.sort(([, a], [, b]) => a.due - b.due || a.order - b.order);
    for (const [key] of due) settleOwned(this.timers.take(key)!.deferred, "resolve");
    return true;
  }

  private readValue(serialise: QuickJSHandle, describe: QuickJSHandle, valueHandle: QuickJSHandle): Pick<DoneMessage, "ok" | "valueJson" | "error"> {
    const { context } = this;
    const result = context.callFunction(serialise, context.undefined, valueHandle);
    if (result.error) {
      const error = result.error.consume((thrown) => this.describeError(describe, thrown));
      return this.stopReason ? { ok: false, error: this.stopError() } : { ok: false, error };
    }
    const { maxCrossingBytes } = this.request.limits;
    let tooLong = 0;
    const tagged = this.orOutOfMemory(() =>
      result.value.consume((value) => {
        if (context.typeof(value) !== "string") return undefined;
        // Past the limit in characters (each at least a byte) it is dropped unread: reading means a
        // copy in the guest's heap, which a value that large may not have room for.
        const length = context.getProp(value, "length").consume((handle) => context.getNumber(handle));
        if (length - RESULT_TAG.value.length > maxCrossingBytes) {
          tooLong = length - RESULT_TAG.value.length;
          return undefined;
        }
        return readGuestString(context, value);
      }),
    );
    if (tooLong > 0) {
      this.warnings.push(`the return value is at least ${formatBytes(tooLong)} of JSON, over the ${formatBytes(maxCrossingBytes)} limit for one value crossing the sandbox wall; it was dropped`);
      return { ok: true };
    }
    if (this.stopReason) return { ok: false, error: this.stopError() };
    if (tagged === undefined) return { ok: true };
    if (tagged.startsWith(RESULT_TAG.notJson)) {
      this.warnings.push(tagged.slice(RESULT_TAG.notJson.length));
      return { ok: true };
    }
    const json = tagged.slice(RESULT_TAG.value.length);
    if (Buffer.byteLength(json) > maxCrossingBytes) {
      this.warnings.push(
        `the return value is ${formatBytes(Buffer.byteLength(json))} of JSON, over the ${formatBytes(maxCrossingBytes)} limit for one value crossing the sandbox wall; it was dropped`,
      );
      return { ok: true };
    }
    return { ok: true, valueJson: json };
  }

  /** The error of a stopped run (guest-errors.ts), with how it spent its last stretch. */
  private stopError(): GuestError {
    return stopError(this.stopReason, this.request.limits, this.stall());
  }

  private stall(): Stall {
    return {
      busyMs: Math.round(this.busyAtStop ?? 0),
      waits: this.waits,
      pendingCalls: this.inflight.size,
      pendingTimers: this.timers.size,
    };
  }

  /** Turn a thrown guest value into a GuestError, reading it through the prelude (never a naive dump). */
  private describeError(describe: QuickJSHandle, thrown: QuickJSHandle, compiling = false): GuestError {
    const { context } = this;
    let info: ThrownInfo;
    const described = context.callFunction(describe, context.undefined, thrown);
    if (described.error) {
      // Describing failed (typically out of memory, or the deadline hit during conversion).
      const inner = described.error.consume((error) => (context.typeof(error) === "object" ? safeDump(context, error) : undefined));
      info = { name: inner?.name, message: inner?.message ?? "the thrown value could not be read" };
    } else {
      try {
        info = described.value.consume((value) => parseThrown(readGuestString(context, value)));
      } catch (error) {
        if (!(error instanceof GuestHeapExhausted)) throw error;
        return outOfMemory(this.request.limits);
      }
    }
    return thrownError(info, compiling, this.nearMemoryLimit(), this.request.limits);
  }

  /**
   * The allocator hit the instance's cap during this run. (QuickJS's own counter cannot tell: in
   * this build it counts 8 bytes per allocation, and the program's memory is freed by the time
   * the error is read.)
   */
  private nearMemoryLimit(): boolean {
    return this.instance.heapExhausted > this.heapExhaustedAtStart;
  }

  // ---- the bridge ------------------------------------------------------------------------------

  /**
   * A host operation, stopped as out of memory when the guest heap gave out on the way: what was
   * read may be cut short and what was made may be no value at all (the library's own value cells
   * are allocated unchecked), so nothing acts on it and the run ends at the next interrupt check.
   */
  private hostCall(args: QuickJSHandle[]): QuickJSHandle | undefined {
    const exhausted = this.instance.heapExhausted;
    const result = this.orOutOfMemory(() => this.hostOp(args));
    if (this.instance.heapExhausted === exhausted) return result;
    this.stopReason ??= "memory";
    if (result?.alive) result.dispose();
    return undefined;
  }

  private hostOp(args: QuickJSHandle[]): QuickJSHandle | undefined {
    const { context } = this;
    // Every operation sandbox/prelude.js sends (protocol.ts HOST_OPS): the compiler holds this switch to that list.
    const op = readGuestString(context, args[0]) as HostOp;
    switch (op) {
      case "call":
        return this.startCall(readGuestString(context, args[1]), readGuestString(context, args[2]));
      // Free-form strings (output, console lines, store keys, names) cross as JSON; see jsonArg.
      case "text":
        this.appendText(this.jsonArg(args[1]));
        return undefined;
      case "console":
        this.appendConsole(readGuestString(context, args[1]) as ConsoleLine["level"], this.jsonArg(args[2]));
        return undefined;
      case "store": {
        const json = context.typeof(args[2]) === "string" ? readGuestString(context, args[2]) : undefined;
        const problem = this.storeValue(this.jsonArg(args[1]), json);
        return problem === undefined ? undefined : this.guestString(problem);
      }
      case "load": {
        const json = this.store.get(this.jsonArg(args[1]));
        return json === undefined ? undefined : newGuestString(context, json);
      }
      case "sleep":
        return this.startTimer(context.getNumber(args[1]), context.getNumber(args[2]));
      case "clearTimer":
        this.clearTimer(context.getNumber(args[1]));
        return undefined;
      case "unknownTool":
        return this.guestString(unknownToolMessage(this.request.tools, readGuestString(context, args[1]), this.jsonArg(args[2]), this.request.unavailable));
      case "reentrant":
        return newGuestString(
          context,
          `tools.${readGuestString(context, args[1])}() was called while the arguments of tools.${readGuestString(context, args[2])}() were being converted to JSON (by a toJSON method or a getter); compute the values first and pass plain data`,
        );
      case "budget":
        return newGuestString(context, JSON.stringify(this.budget()));
      case "uncaught":
        this.uncaught(readGuestString(context, args[1]));
        return undefined;
      case "promiseRead":
        this.promiseRead(readGuestString(context, args[1]), readGuestString(context, args[2]), args[3] && readGuestString(context, args[3]));
        return undefined;
      default: {
        const unknown: never = op;
        throw new TypeError(`unknown host operation ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** The call's id, which the prelude waits on; or the Error it rejects with when the call is refused. */
  private startCall(path: string, args: string): QuickJSHandle {
    const { context } = this;
    const limits = this.request.limits;
    // A microtask still queued when the program's value settled runs in the same pump; a call it
    // makes would reach the host after the program ended. Refuse it: the tool never runs.
    if (this.programSettled()) {
      return this.newGuestError({ name: "Error", code: "run_ended", message: `tools.${path}(): the program has already ended; calls made after its end are not run` });
    }
    this.callCount++;
    if (this.callCount > limits.maxToolCalls) {
      this.stopReason ??= "call_limit";
      return this.newGuestError({ name: "RangeError", code: "call_limit", message: `tools.${path}(): the program made more than ${limits.maxToolCalls} tool calls (the per-run limit)` });
    }
    const bytes = args.length * 3 > limits.maxCrossingBytes ? Buffer.byteLength(args) : args.length;
    if (bytes > limits.maxCrossingBytes) {
      return this.newGuestError({
        name: "RangeError",
        code: "crossing_limit",
        message: `tools.${path}(): the argument is ${formatBytes(bytes)} of JSON; one value crossing the sandbox wall is limited to ${formatBytes(limits.maxCrossingBytes)}`,
      });
    }
    const callId = this.nextCallId++;
    this.inflight.add(callId);
    // Output produced before the call is flushed first so the host sees events in program order.
    this.flush();
    this.post({ type: "call", runId: this.request.runId, callId, path, args });
    // The first call of a pump goes at once (a sequential program waits for it); the rest of the
    // pump's calls go together when it ends.
    if (!this.sentThisPump) {
      this.sentThisPump = true;
      this.link.send();
    }
    return context.newNumber(callId);
  }

  private programSettled(): boolean {
    if (!this.program?.alive) return false;
    const state = this.context.getPromiseState(this.program);
    if (state.type === "pending") return false;
    if (state.type === "rejected") state.error.dispose();
    else if (!state.notAPromise) state.value.dispose();
    return true;
  }

  /** What is left of the run's limits, as `budget()` returns it. */
  private budget(): { ms_left: number; tool_calls_left: number; output_bytes_left: number | null } {
    const limits = this.request.limits;
    return {
      ms_left: Math.max(0, this.request.deadline - Date.now()),
      tool_calls_left: Math.max(0, limits.maxToolCalls - this.callCount),
      output_bytes_left: limits.outputBytes === undefined ? null : Math.max(0, limits.outputBytes - this.textBytes),
    };
  }

  /** An exception nothing could catch (a setTimeout callback's): reported, the run goes on. */
  private uncaught(json: string): void {
    let info: ThrownInfo;
    try {
      info = JSON.parse(json);
    } catch {
      info = { message: "an exception that could not be read" };
    }
    if (this.uncaughtCount++ < UNCAUGHT_REPORTED) this.warnings.push(uncaughtWarning(info, CONSOLE_LINE_CHARS));
    else if (this.uncaughtCount === UNCAUGHT_REPORTED + 1) this.warnings.push(`more setTimeout callbacks threw; only the first ${UNCAUGHT_REPORTED} are reported`);
  }

  /**
   * A promise used as its value (the prelude's promiseRead), or a returned value JSON emptied
   * (`said`, the prelude's own words): one warning per place, a few per run.
   */
  private promiseRead(what: string, stack: string, said: string | undefined): void {
    const warning = said === undefined ? promiseReadWarning(what, stack) : said.length > CONSOLE_LINE_CHARS ? `${headChars(said, CONSOLE_LINE_CHARS)}…` : said;
    if (this.promiseReads.has(warning) || this.promiseReads.size > PROMISE_READS_REPORTED) return;
    this.promiseReads.add(warning);
    if (this.promiseReads.size <= PROMISE_READS_REPORTED) this.warnings.push(warning);
    else this.warnings.push(`more promises were used as values; only the first ${PROMISE_READS_REPORTED} places are reported`);
  }

  private appendText(text: string): void {
    this.textBytes += Buffer.byteLength(text) + (this.textPieces++ === 0 ? 0 : 1);
    this.pendingText.push(text);
    // Counting the joining newline too: a flood of text("") must flush, not grow an array forever.
    this.pendingTextBytes += text.length + 1;
    if (this.pendingTextBytes >= FLUSH_BYTES) this.flush();
  }

  private appendConsole(level: ConsoleLine["level"], text: string): void {
    if (this.consoleLines >= CONSOLE_LINES) {
      this.consoleDropped++;
      return;
    }
    this.consoleLines++;
    this.pendingConsole.push({ level, text: text.length > CONSOLE_LINE_CHARS ? headChars(text, CONSOLE_LINE_CHARS) + "…" : text });
  }

  private storeValue(key: string, json: string | undefined): string | undefined {
    const limits = this.request.limits;
    const previous = this.store.get(key);
    const previousBytes = previous === undefined ? 0 : key.length + previous.length;
    if (json === undefined) {
      if (previous !== undefined) {
        this.store.delete(key);
        this.storeBytes -= previousBytes;
        this.post({ type: "store", runId: this.request.runId, key });
      }
      return undefined;
    }
    const valueBytes = Buffer.byteLength(json);
    if (valueBytes > limits.storeValueBytes) {
      return `store(${shownKey(key)}): the value is ${formatBytes(valueBytes)} of JSON; one stored value is limited to ${formatBytes(limits.storeValueBytes)}`;
    }
    const total = this.storeBytes - previousBytes + key.length + json.length;
    if (total > limits.storeSessionBytes) {
      return `store(${shownKey(key)}): the session would hold ${formatBytes(total)}; a session's store is limited to ${formatBytes(limits.storeSessionBytes)} (delete keys with store(key, undefined))`;
    }
    this.store.set(key, json);
    this.storeBytes = total;
    this.post({ type: "store", runId: this.request.runId, key, json });
    return undefined;
  }

  private startTimer(delay: number, guestId: number): QuickJSHandle {
    const full = this.timers.size >= this.request.limits.maxTimers;
    // setTimeout throws where it is called: a rejection of its internal promise reached no one,
    // and the callback silently never ran.
    if (full && guestId > 0) throw new RangeError(`setTimeout(): too many pending timers (limit ${this.request.limits.maxTimers} per run)`);
    const deferred = this.context.newPromise();
    if (full) {
      rejectReturned(deferred, this.context.newError({ name: "RangeError", message: `too many pending timers (limit ${this.request.limits.maxTimers} per run)` }));
      return deferred.handle;
    }
    const key = guestId > 0 ? guestId : this.nextInternalTimer--;
    // The run's loop fires it (it sleeps no longer than the next timer); at least 1 ms, as Node's.
    const due = performance.now() + Math.max(1, Math.min(delay, 2 ** 31 - 1));
    this.timers.add(key, { due, order: this.nextTimerOrder++, deferred });
    return deferred.handle;
  }

  /** A cleared timer: its promise never settles (the prelude no longer waits for it). */
  private clearTimer(guestId: number): void {
    this.timers.drop(guestId);
  }

  private flush(): void {
    if (this.pendingText.length === 0 && this.pendingConsole.length === 0) return;
    // One string per flush (the host joins text() pieces with "\n" anyway): a flood of tiny
    // text() calls cost the host's main thread a copy and a write per piece, blocking its timers
    // for seconds (a 5 s run ended at 7 s, and every other run on the host stalled with it).
    const text = this.pendingText.length > 1 ? [this.pendingText.join("\n")] : this.pendingText;
    this.post({ type: "flush", runId: this.request.runId, text, console: this.pendingConsole });
    this.pendingText = [];
    this.pendingTextBytes = 0;
    this.pendingConsole = [];
  }

  /**
   * Release every handle, then the context and runtime; called after the result is posted, off
   * the run's critical path. An instance that cannot tear down cleanly is marked dead.
   */
  teardown(): void {
    if (!this.release()) this.instance.dead = true;
  }

  private release(): boolean {
    this.timers.releaseAll();
    this.inflight.clear();
    this.arrived = [];
    this.stopReason ??= "aborted";
    this.source.dispatch.current = undefined;
    const vm = this.vm;
    this.vm = undefined;
    // A VM never opened (the instance failed first) has nothing to end; a dead instance is not restored.
    if (!vm || this.instance.dead) return vm === undefined;
    return vm.end();
  }
}

/** A store key as an error names it: its head when it is long (a key may be megabytes). */
function shownKey(key: string): string {
  return key.length > 80 ? `${JSON.stringify(headChars(key, 80))}…` : JSON.stringify(key);
}

/** An error's name and message where they are strings; undefined when even reading them fails (out of memory). */
function safeDump(context: QuickJSContext, handle: QuickJSHandle): { name?: string; message?: string } | undefined {
  const read = (key: string): string | undefined => context.getProp(handle, key).consume((value) => (context.typeof(value) === "string" ? readGuestString(context, value) : undefined));
  try {
    return { name: read("name"), message: read("message") };
  } catch {
    return undefined;
  }
}
