// Entry point of a sandbox worker thread. A worker runs one program at a time, so the host can
// terminate it when a program is stuck inside a long builtin without hurting anyone else.
//
// It keeps QuickJS instances warm between runs: one per isolation key (session), never shared
// across keys, plus a fresh spare so a new session does not wait for instantiation. An instance
// that trapped is dropped.
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from "node:worker_threads";
import { GuestRun } from "./guest-run.js";
import { newWasmInstance, pagesFor, type WasmInstance } from "./wasm-instance.js";
import type { HostToWorker, RunRequest, SettleMessage, WorkerToHost } from "./protocol.js";

interface WorkerConfig {
  prelude: string;
  abortBuffer: SharedArrayBuffer;
  /** Instances kept per worker; the least recently used is dropped past this. */
  maxInstances: number;
  defaultMemoryBytes: number;
  /** Tool results arrive here, apart from run and abort messages, so a waiting run can poll for them. */
  settlePort: MessagePort;
}

const config = workerData as WorkerConfig;
const port = parentPort!;
const abortFlag = new Int32Array(config.abortBuffer);
const instances = new Map<string, WasmInstance>();
let spare: Promise<WasmInstance> | undefined;
let current: GuestRun | undefined;

function post(message: WorkerToHost): void {
  port.postMessage(message);
}

function instanceKey(session: string, maxPages: number): string {
  return `${maxPages}:${session}`;
}

function prepareSpare(maxPages: number): void {
  spare = newWasmInstance(maxPages);
  // A failed spare is retried lazily by the next run.
  spare.catch(() => (spare = undefined));
}

async function instanceFor(request: RunRequest): Promise<WasmInstance> {
  const maxPages = pagesFor(request.limits.memoryBytes);
  const key = instanceKey(request.session, maxPages);
  const existing = instances.get(key);
  if (existing && !existing.dead) {
    // Re-insert to keep the map in least-recently-used order.
    instances.delete(key);
    instances.set(key, existing);
    return existing;
  }
  instances.delete(key);
  let instance: WasmInstance | undefined;
  if (spare) {
    const candidate = await spare.catch(() => undefined);
    spare = undefined;
    if (candidate && candidate.maxPages === maxPages) instance = candidate;
  }
  instance ??= await newWasmInstance(maxPages);
  instances.set(key, instance);
  while (instances.size > config.maxInstances) {
    const oldest = instances.keys().next().value as string;
    instances.delete(oldest);
  }
  return instance;
}

async function run(request: RunRequest): Promise<void> {
  let instance: WasmInstance;
  try {
    instance = await instanceFor(request);
  } catch (error) {
    post({
      type: "done",
      runId: request.runId,
      ok: false,
      error: { kind: "sandbox", message: `could not start a sandbox instance: ${(error as Error).message}` },
      warnings: [],
      pendingCalls: [],
      instanceDiscarded: true,
    });
    return;
  }
  const guest = new GuestRun(instance, request, config.prelude, abortFlag, post, pollSettles);
  current = guest;
  const done = await guest.execute();
  current = undefined;
  post(done);
  guest.teardown();
  instance.runs++;
  if (instance.dead) {
    for (const [key, value] of instances) if (value === instance) instances.delete(key);
  }
  // Replenish the spare after answering, off the critical path of the run that just ended.
  setImmediate(() => {
    if (!spare) prepareSpare(pagesFor(config.defaultMemoryBytes));
  });
}

function onSettle(message: SettleMessage): void {
  if (current?.runId === message.runId) current.settle(message);
}

/** Take the tool results already queued, without waiting for the event loop; true if there were any. */
function pollSettles(): boolean {
  let received = false;
  for (let next = receiveMessageOnPort(config.settlePort); next; next = receiveMessageOnPort(config.settlePort)) {
    onSettle(next.message as SettleMessage);
    received = true;
  }
  return received;
}

config.settlePort.on("message", onSettle);

port.on("message", (message: HostToWorker) => {
  switch (message.type) {
    case "run":
      void run(message);
      break;
    case "abort":
      if (current?.runId === message.runId) current.abort();
      break;
  }
});

prepareSpare(pagesFor(config.defaultMemoryBytes));
spare!.then(
  () => post({ type: "ready" }),
  () => post({ type: "ready" }),
);
