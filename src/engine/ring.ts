// A bridge between the host thread and a sandbox worker without a thread wake-up per message.
// Waking a sleeping thread with postMessage costs the sender 11-14 µs each time; a tool call
// round trip through two of them is most of a sequential call's cost. Here each direction is a
// ring of frames in a SharedArrayBuffer:
//
//   - the worker sleeps in Atomics.wait, bounded by the deadline or its next timer, and is woken
//     by the host only when it said it is asleep (and always on abort);
//   - the host is rung (Atomics.waitAsync on a doorbell word) only when it said it is asleep;
//     while a run is active it polls through setImmediate for a while after every message (its
//     event loop keeps running, and no thread spins unbounded), and between runs it sleeps;
//   - the worker spins for a while before it sleeps, and spins less while its waits are far
//     longer than the spin (a slow tool): on a busy machine a thread that slept is scheduled
//     again only after hundreds of microseconds, so both sides stay awake while the other answers
//     within the window, and a sequential loop of fast calls wakes no thread at all;
//   - a value larger than the ring, or one that finds the ring full, goes through a MessagePort
//     instead; every message carries a sequence number, so the two paths deliver in order.
//
// Memory layout of the SharedArrayBuffer (Int32 words, then two rings):
//   0 host→worker head, 1 host→worker tail, 2 worker→host head, 3 worker→host tail,
//   4 worker asleep (0/1), 5 worker wake word, 6 host asleep (0/1), 7 host doorbell word,
//   8 abort word (the host stores the number of the run to stop), 9 host→worker and 10
//   worker→host messages posted to the overflow port (so the reader asks the port only then:
//   receiveMessageOnPort costs microseconds), 11 the worker's waits and 12 how many of them
//   went to sleep in Atomics.wait, 13 the times the worker rang the host (counts for stats()),
//   14 worker between runs and sure to read the ring before its event loop waits: watching it
//   (idleWait) or finishing a run's after-work (willLook/look) (0/1), 15 a run is on its way to a
//   watching worker (nudge): 1 the host asked it to wake, 2 it is awake and spinning for it.
// A frame: length word (bit 31: text), sequence word, the payload, padding to 4 bytes. A frame
// never wraps: a length word of -1 means "continue at the start".
import { MessageChannel, receiveMessageOnPort, type MessagePort } from "node:worker_threads";

const HEADER_WORDS = 16;
const W = {
  toWorkerHead: 0,
  toWorkerTail: 1,
  toHostHead: 2,
  toHostTail: 3,
  workerAsleep: 4,
  workerWake: 5,
  hostAsleep: 6,
  hostBell: 7,
  abort: 8,
  toWorkerPosted: 9,
  toHostPosted: 10,
  workerWaits: 11,
  workerSleeps: 12,
  hostRings: 13,
  workerIdle: 14,
  nudge: 15,
} as const;
const WRAP = -1;
const TEXT_FLAG = 0x80000000;
const FRAME_HEADER = 8;
/**
 * Spinning and polling adapt to what they achieve: a window in which the other side answered
 * doubles (up to its maximum), one that ended in sleep halves (down to this floor). On a quiet
 * machine both sides stay awake for the whole window and no thread is woken; on one where other
 * processes take the cores, a spinning thread only delays the thread it waits for (on 2 cores
 * with a third busy process, a host rung while its worker spun 0.2 ms answered after 320 µs, and
 * after 20 µs when the worker slept at once), so the windows shrink and threads sleep instead.
 */
const MIN_WINDOW_MS = 0.02;
/** Uses at the floor before a window opens to its maximum once to look again, and the most it waits. */
const FIRST_PROBE_AFTER = 8;
const MAX_PROBE_AFTER = 64;

/**
 * One spin or poll window that adapts to what it achieves (see MIN_WINDOW_MS). At the floor a
 * window can only catch answers faster than the floor, so a loaded minute would otherwise leave
 * it there after the load has gone; so every so often a window at the floor is opened to its
 * maximum once. A probe that catches the answer restores the maximum; one that misses goes back
 * to the floor and doubles the uses before the next probe, so probing costs little while the
 * machine stays busy.
 */
export class AdaptiveWindow {
  private value: number | undefined;
  private probing = false;
  private sinceProbe = 0;
  private probeAfter = FIRST_PROBE_AFTER;

  /** The window now (undefined: never used, the maximum). */
  get current(): number | undefined {
    return this.value;
  }

  /** The window for the next use, at most `max`. */
  next(max: number): number {
    const value = Math.min(max, this.value ?? max);
    this.probing = value <= MIN_WINDOW_MS && max > MIN_WINDOW_MS && ++this.sinceProbe >= this.probeAfter;
    if (!this.probing) return value;
    this.sinceProbe = 0;
    return max;
  }

  /** The other side answered within the window `used`. */
  caught(max: number, used: number): void {
    if (this.probing) this.probeAfter = FIRST_PROBE_AFTER;
    this.value = this.probing ? max : Math.min(max, Math.max(MIN_WINDOW_MS, used) * 2);
    this.probing = false;
  }

  /** The window `used` ended before the answer; `slow`: the answer took far longer than any window. */
  missed(used: number, slow = false): void {
    if (this.probing) this.probeAfter = Math.min(MAX_PROBE_AFTER, this.probeAfter * 2);
    this.value = this.probing || slow ? MIN_WINDOW_MS : Math.max(MIN_WINDOW_MS, used / 2);
    this.probing = false;
  }
}

/**
 * How long the host polls for a run's first message after sending the run. A warm short run
 * answers in well under this (0.3-1.2 ms from the send on the shared machine, more after idle):
 * polling, the host takes the answer within a turn of its event loop; asleep, it waited for the
 * worker's ring and a waitAsync turn (~100-150 µs). Fixed, not the adaptive call window: a run
 * answers later than a tool call does, so that window had shrunk to its floor and every warm
 * run's answer rang a sleeping host. Longer runs cost the host this much polling once.
 */
const RUN_POLL_MS = 2;
/**
 * The host polls for a run's answer only when the run follows the worker's last one within this.
 * A worker idle for longer sleeps on a core gone idle, and the kernel tends to wake it onto the
 * waker's core: a host polling there kept it off the CPU (a warm run after 50 ms idle took 2-3.5
 * ms with the host polling against ~1.1 without). Back to back, the worker is still on its own
 * core, and polling caught the answer a waitAsync turn sooner.
 */
const WARM_GAP_MS = 1;
/**
 * How long a worker woken by a nudge (HostBridge.nudge) spins for the run it announces. The host
 * nudges as a run begins and offers it once its own part of the set-up is done (~100-250 µs after
 * an idle pause, when every cache is cold); the worker's wake-up takes about as long, so the two
 * overlap instead of following one another. Bounded: a run that never comes costs this once.
 */
const NUDGE_SPIN_MS = 1;

/** A count of spinning threads shared by a pool's workers: a spin goes ahead only when acquire() says so. */
export interface SpinGate {
  acquire(): boolean;
  release(): void;
}

/** A gate that lets at most `max` threads spin at once, counted in the first word of `count` (shared between them). */
export function countingGate(count: Int32Array, max: number): SpinGate {
  return {
    acquire() {
      if (Atomics.add(count, 0, 1) < max) return true;
      Atomics.sub(count, 0, 1);
      return false;
    },
    release() {
      Atomics.sub(count, 0, 1);
    },
  };
}

/** A wait longer than this many maximum spins was a slow answer (a slow tool): spinning for it was useless. */
const SLOW_ANSWER_SPINS = 4;

/**
 * A message: text or bytes (through the ring when they fit), or any structured-clonable value
 * wrapped as `{ posted }`, which always goes through the port (copying a large string there is a
 * memcpy; encoding it into the ring as text, or as JSON, costs far more).
 */
export type BridgeMessage = Uint8Array | string | Posted;
export interface Posted {
  posted: unknown;
}

/** What a worker needs to open its side: pass in workerData, with `transfer` in the transferList. */
export interface BridgeInit {
  buffer: SharedArrayBuffer;
  ringBytes: number;
  /** Overflow: host → worker. */
  toWorker: MessagePort;
  /** Overflow: worker → host. */
  toHost: MessagePort;
  /** How long a nudged worker spins for its run (default NUDGE_SPIN_MS). */
  nudgeSpinMs?: number;
}

interface Overflow {
  seq: number;
  payload: BridgeMessage;
}

/** One direction: a single-producer, single-consumer ring of frames plus its overflow port. */
class Lane {
  private readonly words: Int32Array;
  private readonly bytes: Uint8Array;
  private readonly data: Int32Array;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();
  private sendSeq = 0;
  private receiveSeq = 0;
  /** Messages taken from the port ahead of their turn. */
  private readonly early = new Map<number, BridgeMessage>();
  /** Port messages taken so far (the sender counts the ones it posted in a shared word). */
  private taken = 0;
  overflowed = 0;

  constructor(
    buffer: SharedArrayBuffer,
    offset: number,
    private readonly capacity: number,
    private readonly head: number,
    private readonly tail: number,
    private readonly posted: number,
    private readonly port: MessagePort,
  ) {
    this.words = new Int32Array(buffer, 0, HEADER_WORDS);
    this.bytes = new Uint8Array(buffer, offset, capacity);
    this.data = new Int32Array(buffer, offset, capacity / 4);
  }

  /**
   * Write one message; through the port when it does not fit. A Uint8Array that owns its whole
   * ArrayBuffer is transferred there, not copied (it is left detached).
   */
  send(payload: BridgeMessage): void {
    const seq = this.sendSeq++ >>> 0;
    if (!isFramable(payload) || !this.write(payload, seq)) {
      this.overflowed++;
      const message: Overflow = { seq, payload };
      if (payload instanceof Uint8Array && payload.byteOffset === 0 && payload.byteLength === payload.buffer.byteLength && !(payload.buffer instanceof SharedArrayBuffer)) {
        this.port.postMessage(message, [payload.buffer as ArrayBuffer]);
      } else this.port.postMessage(message);
      Atomics.add(this.words, this.posted, 1);
    }
  }

  private write(payload: Uint8Array | string, seq: number): boolean {
    const isText = typeof payload === "string";
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const maxLength = isText ? payload.length * 3 : payload.byteLength;
    const frame = FRAME_HEADER + align4(maxLength);
    if (frame + 4 > this.capacity) return false;
    const head = Atomics.load(this.words, this.head) >>> 0;
    const tail = Atomics.load(this.words, this.tail) >>> 0;
    const free = this.capacity - ((head - tail) >>> 0);
    let at = head % this.capacity;
    let skip = 0;
    if (at + frame > this.capacity) {
      // The frame goes at the start; the rest of the ring is skipped.
      skip = this.capacity - at;
      if (skip + frame > free) return false;
      this.data[at >> 2] = WRAP;
      at = 0;
    } else if (frame > free) return false;
    let length: number;
    if (isText) length = this.encoder.encodeInto(payload, this.bytes.subarray(at + FRAME_HEADER, at + frame)).written;
    else {
      this.bytes.set(payload, at + FRAME_HEADER);
      length = payload.byteLength;
    }
    this.data[at >> 2] = length | (isText ? TEXT_FLAG : 0) | 0;
    this.data[(at >> 2) + 1] = seq | 0;
    // Publishing the head makes the frame visible to the reader (the data writes happen before it).
    Atomics.store(this.words, this.head, (head + skip + FRAME_HEADER + align4(length)) | 0);
    return true;
  }

  /** The next message in order, if it has arrived. */
  receive(): BridgeMessage | undefined {
    const expected = this.receiveSeq;
    const early = this.early.get(expected);
    if (early !== undefined) {
      this.early.delete(expected);
      this.receiveSeq = (expected + 1) >>> 0;
      return early;
    }
    const framed = this.peekFrame();
    if (framed && framed.seq === expected) {
      this.consumeFrame(framed);
      this.receiveSeq = (expected + 1) >>> 0;
      return framed.payload;
    }
    // The message in turn went through the port (the frame in the ring, if any, comes later).
    if (Atomics.load(this.words, this.posted) === this.taken) return undefined;
    for (let next = receiveMessageOnPort(this.port); next; next = receiveMessageOnPort(this.port)) {
      this.taken++;
      const { seq, payload } = next.message as Overflow;
      if (seq === expected) {
        this.receiveSeq = (expected + 1) >>> 0;
        return payload;
      }
      this.early.set(seq, payload);
    }
    return undefined;
  }

  /** Something is waiting: a frame in the ring, or a message posted to the port and not yet taken. */
  hasFrame(): boolean {
    return this.early.size > 0 || Atomics.load(this.words, this.head) !== Atomics.load(this.words, this.tail) || Atomics.load(this.words, this.posted) !== this.taken;
  }

  private frame?: { seq: number; payload: BridgeMessage; next: number };

  private peekFrame(): { seq: number; payload: BridgeMessage; next: number } | undefined {
    if (this.frame) return this.frame;
    let tail = Atomics.load(this.words, this.tail) >>> 0;
    const head = Atomics.load(this.words, this.head) >>> 0;
    if (head === tail) return undefined;
    let at = tail % this.capacity;
    let word = this.data[at >> 2];
    if (word === WRAP) {
      tail = (tail + (this.capacity - at)) >>> 0;
      at = 0;
      word = this.data[0];
    }
    const isText = (word & TEXT_FLAG) !== 0;
    const length = word & ~TEXT_FLAG;
    const seq = this.data[(at >> 2) + 1] >>> 0;
    const view = this.bytes.subarray(at + FRAME_HEADER, at + FRAME_HEADER + length);
    // Copied out, so the ring space can be given back at once.
    const payload = isText ? this.decoder.decode(view) : view.slice();
    this.frame = { seq, payload, next: (tail + FRAME_HEADER + align4(length)) >>> 0 };
    return this.frame;
  }

  private consumeFrame(frame: { next: number }): void {
    this.frame = undefined;
    Atomics.store(this.words, this.tail, frame.next | 0);
  }

  close(): void {
    this.port.close();
  }
}

// Node 20 has it; TypeScript's ES2023 library does not declare it yet.
const waitAsync = (Atomics as unknown as { waitAsync(array: Int32Array, index: number, value: number): { async: false; value: string } | { async: true; value: Promise<string> } }).waitAsync;

function isFramable(payload: BridgeMessage): payload is Uint8Array | string {
  return typeof payload === "string" || payload instanceof Uint8Array;
}

function align4(value: number): number {
  return (value + 3) & ~3;
}

type LaneArgs = [SharedArrayBuffer, number, number, number, number, number, MessagePort];

function lanes(init: BridgeInit): { toWorker: LaneArgs; toHost: LaneArgs } {
  const base = HEADER_WORDS * 4;
  return {
    toWorker: [init.buffer, base, init.ringBytes, W.toWorkerHead, W.toWorkerTail, W.toWorkerPosted, init.toWorker],
    toHost: [init.buffer, base + init.ringBytes, init.ringBytes, W.toHostHead, W.toHostTail, W.toHostPosted, init.toHost],
  };
}

// ---- the host side -------------------------------------------------------------------------------

export interface HostBridgeOptions {
  /** Bytes of each ring (a multiple of 4; default 256 KiB). */
  ringBytes?: number;
  /** How long the host keeps polling after a message, while a run is active, before it sleeps (default 1 ms). */
  pollMs?: number;
  /** How long a worker nudged between runs spins for the run before it sleeps again (default NUDGE_SPIN_MS). */
  nudgeSpinMs?: number;
}

export interface BridgeStats {
  /** Times the host woke the sleeping worker. */
  workerWakes: number;
  /** Times the worker rang the sleeping host. */
  hostRings: number;
  /** Messages to the worker that went through the port (too large for the ring, or it was full). */
  overflowToWorker: number;
  /** Times the worker waited for a message (spinning first where it may). */
  workerWaits: number;
  /** Of those, the ones that went to sleep in Atomics.wait (the rest ended while spinning). */
  workerSleeps: number;
  /** Times the host stopped polling and slept on its doorbell. */
  hostSleeps: number;
}

/** The host's end: send to the worker, get the worker's messages delivered, abort a run. */
export class HostBridge {
  readonly init: BridgeInit;
  /** Put the ports of `init` in the worker's transferList. */
  readonly transfer: MessagePort[];
  private readonly words: Int32Array;
  private readonly out: Lane;
  private readonly in: Lane;
  private readonly pollMs: number;
  private handler: ((message: BridgeMessage) => void) | undefined;
  private pollingUntil = 0;
  /** The poll window: adapted within `pollMs` (see AdaptiveWindow). */
  private readonly window = new AdaptiveWindow();
  /** The poll window the host is in now (what a catch or a ring is judged against). */
  private polled = 0;
  /** The host rang its own doorbell to end its sleep (not a message from the worker). */
  private selfRung = false;
  /** No run is active: deliver what comes, then sleep at once (nothing more is expected). */
  private resting = false;
  /**
   * Polling for a run's first message (see expect()): its window is the run's, not a tool
   * call's, so neither catching nor missing it adapts the call window.
   */
  private expecting = false;
  /** The last run offered found its worker awake, spinning for it after a nudge. */
  private offeredAwake = false;
  /** When the last run ended (performance.now()): see WARM_GAP_MS. */
  private restedAt = -Infinity;
  private scheduled = false;
  private sleeping = false;
  private closed = false;
  private readonly hostPorts: MessagePort[];
  workerWakes = 0;
  private hostSleeps = 0;

  constructor(options: HostBridgeOptions = {}) {
    const ringBytes = options.ringBytes ?? 256 * 1024;
    if (ringBytes < 64 || ringBytes % 4 !== 0) throw new RangeError(`ringBytes must be a multiple of 4 of at least 64, got ${ringBytes}`);
    this.pollMs = options.pollMs ?? 1;
    this.polled = this.pollMs;
    const buffer = new SharedArrayBuffer(HEADER_WORDS * 4 + 2 * ringBytes);
    const toWorker = new MessageChannel();
    const toHost = new MessageChannel();
    // Only receiveMessageOnPort reads these: no listener, and nothing keeps the process alive.
    toWorker.port1.unref();
    toHost.port1.unref();
    this.hostPorts = [toWorker.port1, toHost.port1];
    this.init = { buffer, ringBytes, toWorker: toWorker.port2, toHost: toHost.port2, ...(options.nudgeSpinMs === undefined ? {} : { nudgeSpinMs: options.nudgeSpinMs }) };
    this.transfer = [toWorker.port2, toHost.port2];
    this.words = new Int32Array(buffer, 0, HEADER_WORDS);
    const layout = lanes({ ...this.init, toWorker: toWorker.port1, toHost: toHost.port1 });
    this.out = new Lane(...layout.toWorker);
    this.in = new Lane(...layout.toHost);
  }

  /** Messages from the worker, delivered in order from the host's event loop. */
  onMessage(handler: (message: BridgeMessage) => void): void {
    this.handler = handler;
    this.schedule();
  }

  send(message: BridgeMessage): void {
    this.sendAll([message]);
  }

  /**
   * Messages that go together (the tool results of one turn): written first, then the worker is
   * woken once, so it takes them in one delivery instead of waking for the first and again for
   * each one that arrives while it settles the others.
   */
  sendAll(messages: readonly BridgeMessage[]): void {
    if (messages.length === 0) return;
    for (const message of messages) this.out.send(message);
    this.wakeWorker(false);
    // An answer is usually followed by the worker's next message: look for it for a while.
    this.pollFor();
  }

  /**
   * A run started on the worker: poll for its messages from now on, so the first of them (often
   * its end) does not have to ring a host that went to sleep.
   */
  expect(): void {
    const sinceRest = performance.now() - this.restedAt;
    this.resting = false;
    this.expecting = true;
    // A worker that was awake for the run (nudged, spinning) is on a core of its own: polling
    // there keeps nobody off the CPU, as back to back.
    const awake = this.offeredAwake;
    this.offeredAwake = false;
    this.pollFor(sinceRest <= WARM_GAP_MS || awake ? RUN_POLL_MS : 0);
  }

  /**
   * A run is on its way: wake a worker watching the ring now, so its wake-up overlaps the host's
   * part of the run's set-up; it spins for the run (NUDGE_SPIN_MS) instead of sleeping again.
   * Nothing for a worker that is busy, or already nudged.
   */
  nudge(): void {
    if (Atomics.load(this.words, W.workerIdle) !== 1 || Atomics.compareExchange(this.words, W.nudge, 0, 1) !== 0) return;
    this.wakeWorker(true);
  }

  /** No run is active any more: stop polling once what has arrived is delivered. */
  rest(): void {
    this.restedAt = performance.now();
    this.resting = true;
    this.expecting = false;
    this.pollingUntil = 0;
  }

  private pollFor(windowMs?: number): void {
    this.pollingUntil = performance.now() + (windowMs ?? this.pollWindow());
    // No window: stay asleep, the worker rings.
    if (windowMs === 0 && this.sleeping) return;
    if (this.sleeping) {
      this.selfRung = true;
      // Asleep on the doorbell: ring it ourselves, so the pending wait ends and polling starts
      // (abandoning the wait instead would leave one waiter behind per run). Awake from now on
      // as far as the worker can tell: its message meanwhile need not ring again.
      Atomics.store(this.words, W.hostAsleep, 0);
      Atomics.add(this.words, W.hostBell, 1);
      Atomics.notify(this.words, W.hostBell);
      return;
    }
    this.schedule();
  }

  /**
   * Offer a message to a worker between runs: written to the ring, and the worker woken if it
   * is watching the ring (idle in Atomics.wait, see WorkerBridge.idleWait; a worker still
   * finishing its last run's after-work reads the ring at its end, see willLook). False when not:
   * its event loop must be told to look (by a message on its port), or the message waits there.
   */
  offer(message: BridgeMessage): boolean {
    this.out.send(message);
    // A nudged worker spinning for it sees the frame itself; an unanswered nudge is withdrawn (the
    // wake below, or the port message, reaches that worker).
    this.offeredAwake = Atomics.exchange(this.words, W.nudge, 0) === 2;
    // It reads the ring once more before it stops spinning (it clears the word first).
    if (this.offeredAwake) return true;
    // Read after writing, as the worker reads the ring after clearing the flag: one of the two sees the other.
    if (Atomics.load(this.words, W.workerIdle) !== 1) return false;
    this.wakeWorker(true);
    return true;
  }

  /** Stop run number `run`: the worker sees the abort word at its next check, and is woken if asleep. */
  abort(run: number): void {
    Atomics.store(this.words, W.abort, run);
    this.wakeWorker(true);
  }

  /** The host stopped polling and sleeps on its doorbell. */
  get asleep(): boolean {
    return this.sleeping;
  }

  /** Where the last nudge is: none (answered by an offer, or over), asked (the worker not awake yet), or spinning (awake, waiting for its run). */
  get nudgeState(): "none" | "asked" | "spinning" {
    return (["none", "asked", "spinning"] as const)[Atomics.load(this.words, W.nudge)] ?? "none";
  }

  /** The worker is between runs and will read the ring before its event loop waits (watching it, or finishing a run's after-work). */
  get workerWatching(): boolean {
    return Atomics.load(this.words, W.workerIdle) === 1;
  }

  /** The worker has sent something the host has not taken yet (the host is behind, not the worker). */
  get hasMessages(): boolean {
    return this.in.hasFrame();
  }

  /** The worker said it is asleep in Atomics.wait. */
  get workerAsleep(): boolean {
    return Atomics.load(this.words, W.workerAsleep) === 1;
  }

  get stats(): BridgeStats {
    return {
      workerWakes: this.workerWakes,
      hostRings: Atomics.load(this.words, W.hostRings),
      overflowToWorker: this.out.overflowed,
      workerWaits: Atomics.load(this.words, W.workerWaits),
      workerSleeps: Atomics.load(this.words, W.workerSleeps),
      hostSleeps: this.hostSleeps,
    };
  }

  close(): void {
    this.closed = true;
    // A pending waitAsync does not keep the process alive; wake it so it sees the close.
    Atomics.add(this.words, W.hostBell, 1);
    Atomics.notify(this.words, W.hostBell);
    for (const port of this.hostPorts) port.close();
  }

  private wakeWorker(always: boolean): void {
    if (always || Atomics.load(this.words, W.workerAsleep) === 1) {
      this.workerWakes++;
      Atomics.add(this.words, W.workerWake, 1);
      Atomics.notify(this.words, W.workerWake);
    }
  }

  private schedule(): void {
    if (this.scheduled || this.sleeping || this.closed || !this.handler) return;
    this.scheduled = true;
    setImmediate(() => this.pump());
  }

  /** The poll window the host uses now (for tests and stats). */
  get pollWindowMs(): number {
    return this.window.current ?? this.pollMs;
  }

  /** Opens the next poll window and remembers its length. */
  private pollWindow(): number {
    this.polled = this.window.next(this.pollMs);
    return this.polled;
  }

  /**
   * Deliver what arrived; keep polling while within the poll window (or while more has arrived);
   * otherwise sleep on the doorbell. `rung`: the worker's ring woke the host (the window missed).
   */
  private pump(rung = false): void {
    this.scheduled = false;
    if (this.closed) return;
    // One message per turn of the event loop, as a port would deliver them: what the handler
    // started (a tool's promise chain) runs before the next message (say the run's end) is seen.
    const message = this.in.receive();
    const delivered = message !== undefined;
    if (delivered) {
      // Found while polling: the window paid for itself.
      if (!rung && !this.resting && !this.expecting) this.window.caught(this.pollMs, this.polled);
      this.expecting = false;
      this.handler!(message);
      if (this.closed) return;
    }
    const now = performance.now();
    if (delivered && !this.resting) this.pollingUntil = now + this.pollWindow();
    // After a run's last message, one more turn before sleeping: the handler's promise callbacks
    // (run after this) often send the session's next run at once, and a host asleep by then
    // would be woken by its own bell, a waitAsync turn later.
    if (now < this.pollingUntil || (delivered && (this.resting || this.in.hasFrame()))) {
      this.schedule();
      return;
    }
    this.sleep();
  }

  private sleep(): void {
    const bell = Atomics.load(this.words, W.hostBell);
    Atomics.store(this.words, W.hostAsleep, 1);
    // Checked after saying so: a message written (to the ring or the port) before the worker saw
    // the flag is not missed.
    const early = this.in.receive();
    if (early !== undefined) {
      Atomics.store(this.words, W.hostAsleep, 0);
      this.handler!(early);
      if (!this.resting) this.pollingUntil = performance.now() + this.pollWindow();
      this.schedule();
      return;
    }
    this.sleeping = true;
    this.hostSleeps++;
    const waited = waitAsync(this.words, W.hostBell, bell);
    const wake = () => {
      this.sleeping = false;
      Atomics.store(this.words, W.hostAsleep, 0);
      const rung = !this.selfRung;
      this.selfRung = false;
      // The worker had to ring: the window was too short to be worth its core, or nothing was coming.
      if (rung && !this.resting && !this.expecting) this.window.missed(this.polled);
      // Straight on: the wait's own task is the turn; another setImmediate would cost one more.
      if (!this.scheduled) this.pump(rung);
    };
    if (waited.async) void waited.value.then(wake);
    else {
      // The bell moved between reading it and waiting: look again on the next turn.
      this.sleeping = false;
      Atomics.store(this.words, W.hostAsleep, 0);
      this.schedule();
    }
  }
}

// ---- the worker side -----------------------------------------------------------------------------

export type WaitOutcome = "message" | "timeout" | "aborted";

/** The worker's end: send to the host, take the host's messages, sleep until one comes. */
export class WorkerBridge {
  private readonly words: Int32Array;
  private readonly out: Lane;
  private readonly in: Lane;
  hostRings = 0;
  private readonly nudgeSpinMs: number;

  constructor(init: BridgeInit) {
    this.words = new Int32Array(init.buffer, 0, HEADER_WORDS);
    this.nudgeSpinMs = init.nudgeSpinMs ?? NUDGE_SPIN_MS;
    const layout = lanes(init);
    this.in = new Lane(...layout.toWorker);
    this.out = new Lane(...layout.toHost);
  }

  send(message: BridgeMessage): void {
    this.out.send(message);
    if (Atomics.load(this.words, W.hostAsleep) === 1) {
      // Cleared here so a burst of messages rings once.
      Atomics.store(this.words, W.hostAsleep, 0);
      this.hostRings++;
      Atomics.add(this.words, W.hostRings, 1);
      Atomics.add(this.words, W.hostBell, 1);
      Atomics.notify(this.words, W.hostBell);
    }
  }

  /** The next message from the host, if one has arrived. */
  receive(): BridgeMessage | undefined {
    if (this.held !== undefined) {
      const message = this.held;
      this.held = undefined;
      return message;
    }
    return this.in.receive();
  }

  /** A message taken from the port while checking before sleep, handed out by the next receive. */
  private held: BridgeMessage | undefined;

  get overflowed(): number {
    return this.out.overflowed;
  }

  /** The abort word names run `run`. */
  aborted(run: number): boolean {
    return Atomics.load(this.words, W.abort) === run;
  }

  /** How long the next wait spins (see AdaptiveWindow). */
  private readonly spinWindow = new AdaptiveWindow();

  /**
   * Block until a message from the host, an abort of run `run`, or `untilMs` (a performance.now()
   * time: the deadline or the next timer). Spins for up to `spinMs` first: a fast tool answers
   * sooner than a sleeping thread is scheduled again. The spin adapts within that maximum: it
   * doubles after an answer that came while spinning and halves after one that did not (to the
   * floor after a slow tool's).
   */
  wait(run: number, untilMs: number, spinMs = 0): WaitOutcome {
    Atomics.add(this.words, W.workerWaits, 1);
    const start = performance.now();
    const window = spinMs > 0 ? this.spinWindow.next(spinMs) : 0;
    const spinUntil = Math.min(untilMs, start + window);
    while (performance.now() < spinUntil) {
      if (this.aborted(run)) return "aborted";
      if (this.in.hasFrame()) {
        if (spinMs > 0) this.spinWindow.caught(spinMs, window);
        return "message";
      }
    }
    Atomics.add(this.words, W.workerSleeps, 1);
    const outcome = this.sleep(run, untilMs);
    if (spinMs > 0 && outcome === "message") this.spinWindow.missed(window, performance.now() - start > SLOW_ANSWER_SPINS * spinMs);
    return outcome;
  }

  /**
   * Between runs: watch the ring for up to `ms`, asleep in Atomics.wait, with the flag that lets
   * the host wake this thread instead of its event loop (a futex wake costs far less than a
   * message to a sleeping event loop). True if a message is there.
   */
  idleWait(ms: number, spin?: SpinGate): boolean {
    const wake = Atomics.load(this.words, W.workerWake);
    Atomics.store(this.words, W.workerIdle, 1);
    try {
      if (this.in.hasFrame()) return true;
      if (Atomics.load(this.words, W.nudge) !== 1) Atomics.wait(this.words, W.workerWake, wake, ms);
      if (Atomics.load(this.words, W.nudge) === 1 && !this.in.hasFrame()) this.spinForNudged(spin);
    } finally {
      Atomics.store(this.words, W.workerIdle, 0);
    }
    // Checked after clearing the flag: a message the host wrote while it still saw the flag set is not missed.
    return this.in.hasFrame();
  }

  /**
   * The host nudged: a run is on its way. Spin for it, awake, while the host finishes its part of
   * the set-up (word 2 tells the host it need not wake this thread and may poll for the answer).
   * Only as the gate allows (spinning threads never take every core): otherwise back to sleep.
   */
  private spinForNudged(spin: SpinGate | undefined): void {
    if (spin && !spin.acquire()) {
      Atomics.compareExchange(this.words, W.nudge, 1, 0);
      return;
    }
    try {
      if (Atomics.compareExchange(this.words, W.nudge, 1, 2) !== 1) return;
      const until = performance.now() + this.nudgeSpinMs;
      while (!this.in.hasFrame() && performance.now() < until);
      // Cleared before the caller's last look at the ring: a run the host offered while it saw 2 is found there.
      Atomics.compareExchange(this.words, W.nudge, 2, 0);
    } finally {
      spin?.release();
    }
  }

  /**
   * A run just ended: this thread will read the ring before its event loop next waits (at the
   * end of the run's after-work, see `look()`), so the host may write the next run there and
   * skip the message to the port that would otherwise tell the event loop to look.
   */
  willLook(): void {
    Atomics.store(this.words, W.workerIdle, 1);
  }

  /**
   * The after-work is done: stop promising to look, then look. True if a message is there.
   * Read after clearing the flag, as in idleWait: a run the host wrote while it still saw the
   * flag set is found here, and one written after it was cleared comes with a port message.
   */
  look(): boolean {
    Atomics.store(this.words, W.workerIdle, 0);
    return this.in.hasFrame();
  }

  /** The spin the next wait starts with (for tests and stats). */
  get spinMs(): number | undefined {
    return this.spinWindow.current;
  }

  private sleep(run: number, untilMs: number): WaitOutcome {
    for (;;) {
      const wake = Atomics.load(this.words, W.workerWake);
      Atomics.store(this.words, W.workerAsleep, 1);
      try {
        // Checked after saying so, as the host checks the flag after writing.
        if (this.aborted(run)) return "aborted";
        if (this.in.hasFrame()) return "message";
        if (this.held === undefined) this.held = this.in.receive();
        if (this.held !== undefined) return "message";
        const remaining = untilMs - performance.now();
        if (remaining <= 0) return "timeout";
        Atomics.wait(this.words, W.workerWake, wake, remaining);
      } finally {
        Atomics.store(this.words, W.workerAsleep, 0);
      }
      if (this.aborted(run)) return "aborted";
      if (this.in.hasFrame()) return "message";
    }
  }
}
