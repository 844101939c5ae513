// Runs a scan in its own worker thread with a time budget, so a model's backtracking regex or
// pathological glob costs at most that budget and never freezes the host.
import { Worker } from "node:worker_threads";
import { ToolError } from "../tools/index.js";
import { compiledEntry } from "../package-files.js";
import type { ListRequest, ListResult, ScanRequest, SearchRequest, SearchResult } from "./scan.js";

export function runScan(request: ListRequest, budgetMs: number, signal: AbortSignal): Promise<ListResult>;
export function runScan(request: SearchRequest, budgetMs: number, signal: AbortSignal): Promise<SearchResult>;
export function runScan(request: ScanRequest, budgetMs: number, signal: AbortSignal): Promise<ListResult | SearchResult> {
  const tool = request.op === "list" ? "list_files" : "search_files";
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new ToolError("tool_aborted", `${tool} was cancelled before it started`));
      return;
    }
    const worker = new Worker(compiledEntry("workspace/scan-worker"), { workerData: request });
    let settled = false;
    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      void worker.terminate();
      outcome();
    };
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(
            new ToolError(
              "tool_failed",
              request.op === "search"
                ? `search_files gave up after ${budgetMs} ms: the pattern may backtrack catastrophically or the glob match too much; use a simpler regular expression or a narrower glob`
                : `list_files gave up after ${budgetMs} ms: narrow the pattern (e.g. "src/**/*.ts")`,
              { reason: "scan_timeout" },
            ),
          ),
        ),
      budgetMs,
    );
    const onAbort = (): void => finish(() => reject(new ToolError("tool_aborted", `${tool} was cancelled`)));
    signal.addEventListener("abort", onAbort, { once: true });
    worker.once("message", (message: { ok: true; result: ListResult | SearchResult } | { ok: false; message: string }) =>
      finish(() => (message.ok ? resolve(message.result) : reject(new ToolError("tool_failed", `${tool} failed: ${message.message}`)))),
    );
    worker.once("error", (error) => finish(() => reject(new ToolError("tool_failed", `${tool} failed: ${error.message}`))));
    worker.once("exit", (code) => finish(() => reject(new ToolError("tool_failed", `${tool} stopped unexpectedly (exit code ${code})`))));
  });
}
