// The worker end of bench/run.ts's transport measure: echoes every message, through the bridge's
// ring or through postMessage.
import { parentPort, workerData } from "node:worker_threads";
import { WorkerBridge } from "../src/engine/ring.js";

if (workerData.mode === "ring") {
  const bridge = new WorkerBridge(workerData.init);
  for (;;) {
    const message = bridge.receive();
    if (message === undefined) {
      bridge.wait(1, performance.now() + 60_000, workerData.spinMs);
      continue;
    }
    if (message === "stop") break;
    bridge.send(message);
  }
} else {
  parentPort!.on("message", (message: unknown) => {
    if (message === "stop") process.exit(0);
    parentPort!.postMessage(message);
  });
}
