// What travels over the shared-memory bridge (ring.ts) between the host and a sandbox worker.
//
// Host → worker: one frame per tool result, `<run>.<callId>.<0|1><json>` (the run's abort number,
// so results of an ended run are told apart), text that the worker never parses beyond the prefix;
// and, to a worker idle between runs, the next run: bytes, a header no result has (run and call
// 0xffffffff) and the request in V8's serialisation (what postMessage would have copied: bigints,
// undefined and -0 survive, as they do there).
// Worker → host: a batch of the run's messages (protocol.ts), as JSON text when small; a batch
// that carries large strings goes as a structured-clone `{ posted }` message instead, since the
// port copies strings and JSON would escape every quote of them.
import { deserialize, serialize } from "node:v8";
import type { BridgeMessage } from "./ring.js";
import type { RunMessage, WorkerToHost } from "./protocol.js";
import { BJSON_HEADROOM } from "./bjson.js";

/** A batch of the run's messages past this many characters is sent at once, through the port. */
export const SEND_NOW_CHARS = 64 * 1024;

export interface BridgeSettle {
  abortSeq: number;
  callId: number;
  ok: boolean;
  /** JSON text, or (results only) the value in QuickJS's binary format (bjson.ts). */
  json: string | Uint8Array;
}

/** A result in QuickJS's binary format: 4 bytes run, 4 bytes call, then the encoding (its own buffer, so the port can transfer it). */
/** The run and call words: exactly the room every encoding leaves in front of itself. */
const BINARY_HEADER = BJSON_HEADROOM;

export function formatSettle(abortSeq: number, callId: number, ok: boolean, json: string | Uint8Array): BridgeMessage {
  if (typeof json === "string") return `${abortSeq}.${callId}.${ok ? 1 : 0}${json}`;
  // An encoding that owns its buffer and left the header's room free (bjson.ts) becomes the
  // frame in place: a 1 MB result is not copied once more on its way.
  if (json.byteOffset === BJSON_HEADROOM && json.buffer.byteLength === BJSON_HEADROOM + json.byteLength && !(json.buffer instanceof SharedArrayBuffer)) {
    const frame = new Uint8Array(json.buffer);
    writeHeader(frame, abortSeq, callId);
    return frame;
  }
  return binaryFrame(abortSeq, callId, json);
}

function writeHeader(frame: Uint8Array, first: number, second: number): void {
  const view = new DataView(frame.buffer, frame.byteOffset, BINARY_HEADER);
  view.setUint32(0, first, true);
  view.setUint32(4, second, true);
}

/** Two header words, then the body, in a buffer of its own (so the port can transfer it). */
function binaryFrame(first: number, second: number, body: Uint8Array): Uint8Array {
  const frame = new Uint8Array(BINARY_HEADER + body.length);
  writeHeader(frame, first, second);
  frame.set(body, BINARY_HEADER);
  return frame;
}

const RUN_MARK = 0xffffffff;

/** A run request as a frame for a worker between runs. */
export function formatRun(request: RunMessage): Uint8Array {
  return binaryFrame(RUN_MARK, RUN_MARK, serialize(request));
}

/** The run request a frame carries, or undefined for any other frame (a tool result). */
export function parseRun(message: BridgeMessage): RunMessage | undefined {
  if (!(message instanceof Uint8Array) || message.byteLength < BINARY_HEADER) return undefined;
  const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
  if (view.getUint32(0, true) !== RUN_MARK || view.getUint32(4, true) !== RUN_MARK) return undefined;
  return deserialize(message.subarray(BINARY_HEADER)) as RunMessage;
}

export function parseSettle(message: BridgeMessage): BridgeSettle {
  if (message instanceof Uint8Array) {
    const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
    return { abortSeq: view.getUint32(0, true), callId: view.getUint32(4, true), ok: true, json: message.subarray(BINARY_HEADER) };
  }
  if (typeof message !== "string") throw new TypeError("the bridge expected a tool result");
  const first = message.indexOf(".");
  const second = message.indexOf(".", first + 1);
  return {
    abortSeq: Number(message.slice(0, first)),
    callId: Number(message.slice(first + 1, second)),
    ok: message.charCodeAt(second + 1) === 0x31,
    json: message.slice(second + 2),
  };
}

/** Characters of the strings a message carries: what its batch costs to encode. */
export function runMessageChars(message: WorkerToHost): number {
  switch (message.type) {
    case "call":
      return message.args.length + 64;
    case "flush": {
      let chars = 64;
      for (const piece of message.text) chars += piece.length;
      for (const line of message.console) chars += line.text.length;
      return chars;
    }
    case "store":
      return (message.json?.length ?? 0) + message.key.length + 64;
    case "done": {
      let chars = 256 + (message.valueJson?.length ?? 0);
      for (const piece of message.text ?? []) chars += piece.length;
      for (const line of message.console ?? []) chars += line.text.length;
      for (const warning of message.warnings) chars += warning.length;
      return chars;
    }
    default:
      return 64;
  }
}

/**
 * Separates the fields of a batch made only of tool calls: a control character JSON text never
 * holds raw (JSON.stringify escapes them), and one no run id or tool path may hold here.
 */
const CALLS_MARK = "\u0001";

/**
 * A batch of the run's messages as one text. A batch of tool calls (a loop's, a Promise.all's)
 * is written as its fields between CALLS_MARKs, not as JSON: JSON would escape every quote of
 * each call's argument text, and reading it back costs the host's event loop a JSON.parse per
 * call. Anything else, or a field holding the mark, is JSON.
 */
export function formatBatch(batch: readonly WorkerToHost[]): string {
  let text = "";
  for (const message of batch) {
    if (message.type !== "call" || message.runId.includes(CALLS_MARK) || message.path.includes(CALLS_MARK) || message.args.includes(CALLS_MARK)) return JSON.stringify(batch);
    text += `${CALLS_MARK}${message.runId}${CALLS_MARK}${message.callId}${CALLS_MARK}${message.path}${CALLS_MARK}${message.args}`;
  }
  return text;
}

/** The messages of one batch from the worker. */
export function parseBatch(message: BridgeMessage): WorkerToHost[] {
  if (typeof message === "string" && message.startsWith(CALLS_MARK)) {
    const fields = message.split(CALLS_MARK);
    const calls: WorkerToHost[] = [];
    for (let i = 1; i + 3 < fields.length; i += 4) calls.push({ type: "call", runId: fields[i]!, callId: Number(fields[i + 1]), path: fields[i + 2]!, args: fields[i + 3]! });
    return calls;
  }
  if (typeof message === "string") return JSON.parse(message) as WorkerToHost[];
  if (message instanceof Uint8Array) throw new TypeError("the bridge expected a batch of messages, got bytes");
  return message.posted as WorkerToHost[];
}
