// Where a run's QuickJS runtime and context come from: a snapshot-restored template (the fast
// path), or a runtime, context and prelude built for the run (the ordinary path, kept for builds
// where snapshots are unsupported and when they are switched off). Both are set up by the same
// function, so a program cannot tell them apart.
import { Scope, type QuickJSContext, type QuickJSHandle, type QuickJSRuntime } from "quickjs-emscripten-core";
import { newGuestString } from "./guest-strings.js";
import type { RunRequest } from "./protocol.js";
import { type InstanceSnapshot, writeRandomState, type MemoryLayout, type TemplateSetup } from "./snapshot.js";
import type { WasmInstance } from "./wasm-instance.js";
import { newHostFunction } from "./host-function.js";

const PRELUDE_FILE = "codemode-prelude.js";

/** The interface the prelude's completion value offers the host. */
export interface PreludeHandles {
  /** Serialises the program's value: "=" + JSON, "!" + why not, or undefined. */
  result: QuickJSHandle;
  /** Describes a thrown value as JSON (name, message, stack, thrown). */
  error: QuickJSHandle;
  /** The pristine JSON.parse. */
  fromJson: QuickJSHandle;
  /** Installs one run's configuration (tools, globals) from its JSON. */
  install: QuickJSHandle;
  /** Settles tool calls with results that arrived as JSON text, many in one call (guest-run.ts). */
  deliver: QuickJSHandle;
  /** Settles one tool call with a value (a decoded result, or an Error to reject with). */
  settle: QuickJSHandle;
}

/** Host calls from the guest go to whichever run owns the VM now (a template's host function outlives runs). */
export type HostCall = (args: QuickJSHandle[]) => QuickJSHandle | undefined;
export interface HostDispatch {
  current: HostCall | undefined;
}

export interface GuestVm {
  readonly runtime: QuickJSRuntime;
  readonly context: QuickJSContext;
  readonly handles: PreludeHandles;
  /** Restored from a snapshot (true) or built for this run. */
  readonly restored: boolean;
  /** The run configuration installed in it (runConfig's text), once installConfig ran. */
  installed?: string;
  /** Math.random's next values follow `seed` (QuickJS's xorshift64*); false when this VM cannot say where its state is. */
  seedRandom(seed: bigint): boolean;
  /**
   * After the run: put the template back (restored VMs) or free the runtime (built ones). False
   * when that failed: the instance must not run again.
   */
  end(): boolean;
}

/** Builds the static part of every run: the host function and the prelude, as its interface's handles. */
export function preludeSetup(prelude: string, dispatch: HostDispatch): TemplateSetup {
  const source = compactPrelude(prelude);
  return ({ context }) => {
    const host = newHostFunction(context, "__codemode_host", (args) => {
      const call = dispatch.current;
      if (!call) throw new Error("no run owns this sandbox instance");
      return call(args);
    });
    context.setProp(context.global, "__codemode_host", host);
    host.dispose();
    const evaluated = context.evalCode(source, PRELUDE_FILE, { type: "global", strict: true });
    if (evaluated.error) {
      const description = context.dump(evaluated.error);
      evaluated.error.dispose();
      throw new Error(`the guest prelude failed to start: ${JSON.stringify(description)}`);
    }
    const face = evaluated.value;
    const handles = {
      result: context.getProp(face, "result"),
      error: context.getProp(face, "error"),
      fromJson: context.getProp(face, "fromJson"),
      install: context.getProp(face, "install"),
      deliver: context.getProp(face, "deliver"),
      settle: context.getProp(face, "settle"),
    };
    face.dispose();
    return handles;
  };
}

/** What the prelude's per-run part installs for a run (tools, globals, replay), as the JSON text install() takes. */
export function runConfig(request: Pick<RunRequest, "tools" | "globals" | "determinism">): string {
  return JSON.stringify({ tools: request.tools, globals: request.globals, determinism: request.determinism });
}

/** Install a run's configuration (runConfig's text) through the prelude; at most once per VM. */
export function installConfig(vm: GuestVm, config: string): void {
  if (vm.installed !== undefined) throw new Error("a run configuration is already installed in this sandbox state");
  const { context } = vm;
  Scope.withScope((scope) => {
    const installed = scope.manage(newGuestString(context, config).consume((json) => context.callFunction(vm.handles.install, context.undefined, json)));
    if (installed.error) throw new Error(`the guest prelude failed to start: ${JSON.stringify(context.dump(installed.error))}`);
  });
  vm.installed = config;
}

/** A runtime, context and prelude built for one run (the ordinary path). */
export function freshVm(instance: WasmInstance, prelude: string, dispatch: HostDispatch, layout: MemoryLayout | undefined): GuestVm {
  const runtime = instance.module.newRuntime();
  let context: QuickJSContext | undefined;
  try {
    context = runtime.newContext();
    const handles = preludeSetup(prelude, dispatch)({ runtime, context }) as unknown as PreludeHandles;
    const built = context;
    return {
      runtime,
      context: built,
      handles,
      restored: false,
      seedRandom: (seed) => {
        if (!layout) return false;
        writeRandomState(instance, layout, built, seed);
        return true;
      },
      end() {
        let clean = true;
        for (const handle of Object.values(handles)) clean = safely(() => handle.alive && handle.dispose()) && clean;
        if (built.alive) clean = safely(() => built.dispose()) && clean;
        if (runtime.alive) clean = safely(() => runtime.dispose()) && clean;
        return clean;
      },
    };
  } catch (error) {
    // Half-built: nothing runs here again, so nothing is freed (freeing could abort the module).
    instance.dead = true;
    throw error;
  }
}

/** The template of a snapshot instance, restored for this run. */
export function restoredVm(snapshot: InstanceSnapshot): GuestVm {
  const { runtime, context, handles } = snapshot.acquire();
  return {
    runtime,
    context,
    handles: handles as unknown as PreludeHandles,
    restored: true,
    seedRandom(seed) {
      writeRandomState(snapshot.instance, snapshot.layout, context, seed);
      return true;
    },
    end() {
      // Nothing is freed in C: the whole memory goes back to the template instead.
      try {
        snapshot.restore();
        return true;
      } catch {
        snapshot.instance.dead = true;
        return false;
      }
    },
  };
}

let compactedFrom: string | undefined;
let compacted = "";

/**
 * The prelude without comment lines and indentation: QuickJS compiles it at about 10 bytes per
 * microsecond, on every run when snapshots are off. (The prelude keeps no string or template
 * across lines, so every line can be trimmed.)
 */
function compactPrelude(source: string): string {
  if (source !== compactedFrom) {
    compacted = source
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("//"))
      .join("\n");
    compactedFrom = source;
  }
  return compacted;
}

function safely(action: () => unknown): boolean {
  try {
    action();
    return true;
  } catch {
    return false;
  }
}
