// A throwaway thread for one scan: the host terminates it when the scan outlives its time budget
// or the calling program ends, which a regex running on the event loop would never allow.
import { parentPort, workerData } from "node:worker_threads";
import { scan, type ScanRequest } from "./scan.js";

scan(workerData as ScanRequest).then(
  (result) => parentPort!.postMessage({ ok: true, result }),
  (error: unknown) => parentPort!.postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) }),
);
