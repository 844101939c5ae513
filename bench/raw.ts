// The engine floor: quickjs-emscripten used the plain way, on the calling thread, with no isolation
// beyond QuickJS itself — a fresh runtime and context per run, one host `__call` that returns
// `newPromise().handle`, JSON strings both ways, jobs pumped until the program's promise settles.
// codemode-runtime's ratios to this are the benchmark's headline numbers.
import { newQuickJSWASMModuleFromVariant, type QuickJSSyncVariant, type QuickJSWASMModule } from "quickjs-emscripten";
import releaseSyncImport from "@jitl/quickjs-wasmfile-release-sync";

const releaseSync = releaseSyncImport as unknown as QuickJSSyncVariant;

export type HostTool = (args: unknown) => Promise<unknown>;

const TOOLS_PRELUDE = `globalThis.tools = new Proxy({}, { get: (_, name) => async (args) => JSON.parse(await __call(name, JSON.stringify(args ?? {}))) });`;

export class RawQuickJS {
  private constructor(private readonly module: QuickJSWASMModule) {}

  static async create(): Promise<RawQuickJS> {
    return new RawQuickJS(await newQuickJSWASMModuleFromVariant(releaseSync));
  }

  /** Run `code` (top-level await allowed) and return what it printed with text(). */
  async run(code: string, tools: Record<string, HostTool> = {}): Promise<string[]> {
    const runtime = this.module.newRuntime();
    const context = runtime.newContext();
    const output: string[] = [];
    let pending = 0;
    let wake: (() => void) | undefined;
    try {
      const text = context.newFunction("text", (value) => {
        output.push(context.getString(value));
      });
      context.setProp(context.global, "text", text);
      text.dispose();
      const call = context.newFunction("__call", (nameHandle, argsHandle) => {
        const name = context.getString(nameHandle);
        const args = JSON.parse(context.getString(argsHandle)) as unknown;
        const deferred = context.newPromise();
        pending++;
        tools[name](args).then(
          (value) => {
            pending--;
            if (!context.alive) return;
            const json = context.newString(JSON.stringify(value));
            deferred.resolve(json);
            json.dispose();
            deferred.dispose();
            wake?.();
          },
          (error: unknown) => {
            pending--;
            if (!context.alive) return;
            const thrown = context.newError(String(error));
            deferred.reject(thrown);
            thrown.dispose();
            deferred.dispose();
            wake?.();
          },
        );
        return deferred.handle;
      });
      context.setProp(context.global, "__call", call);
      call.dispose();
      context.unwrapResult(context.evalCode(TOOLS_PRELUDE)).dispose();
      const promise = context.unwrapResult(context.evalCode(`(async () => {${code}\n})()`));
      try {
        for (;;) {
          const jobs = runtime.executePendingJobs();
          if (jobs.error) {
            const error = context.dump(jobs.error);
            jobs.error.dispose();
            throw new Error(`a job failed: ${JSON.stringify(error)}`);
          }
          const state = context.getPromiseState(promise);
          if (state.type === "fulfilled") {
            if (!state.notAPromise) state.value.dispose();
            return output;
          }
          if (state.type === "rejected") {
            const error = context.dump(state.error);
            state.error.dispose();
            throw new Error(`the program failed: ${JSON.stringify(error)}`);
          }
          if (runtime.hasPendingJob()) continue;
          if (pending === 0) throw new Error("the program waits for nothing");
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      } finally {
        promise.dispose();
      }
    } finally {
      context.dispose();
      runtime.dispose();
    }
  }
}
