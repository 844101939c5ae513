// The signals that end a long-running command (`run`, `workflow run`, `mcp`): SIGINT (Ctrl-C),
// SIGTERM (kill, a supervisor, a container stop) and SIGHUP (the terminal closed). Node's default
// for each is to exit at once, leaving the command's subagents running and their records
// `running`; instead the first one asks the command to stop (it aborts its program, stops its
// tasks with the usual kill grace, prints what it had), and a second one exits at once.
import { constants } from "node:os";

export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

export interface StopSignals {
  /** The first stop signal received, if any. */
  readonly received: StopSignal | undefined;
  /** Sets what the first stop signal does; called at once if it already came. */
  onStop(stop: (signal: StopSignal) => void): void;
  /**
   * The exit code for a command that would exit with `code`: 128 + the signal's number after
   * SIGTERM or SIGHUP (as a process those signals killed reports), `code` otherwise. A Ctrl-C
   * keeps the command's own code unless `interruptCode` says so (a program aborted by Ctrl-C
   * failed, and says why).
   */
  exitCode(code: number, options?: { interruptCode?: boolean }): number;
  /** Stops listening: the signals' defaults apply again. */
  dispose(): void;
}

/** 128 + the signal's number: how a shell reports a process that signal ended. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/**
 * Listens for the stop signals until disposed: the first calls `stop` (or what `onStop` set) with
 * its name; a second (of any of them) exits at once with 128 + its number.
 */
export function onStopSignals(stop?: (signal: StopSignal) => void): StopSignals {
  let received: StopSignal | undefined;
  let onStop = stop;
  const handlers = STOP_SIGNALS.map((signal) => {
    const handler = (): void => {
      if (received !== undefined) process.exit(signalExitCode(signal));
      received = signal;
      onStop?.(signal);
    };
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  return {
    get received() {
      return received;
    },
    onStop(stop) {
      onStop = stop;
      if (received !== undefined) stop(received);
    },
    exitCode(code, options = {}) {
      if (received === undefined || (received === "SIGINT" && options.interruptCode !== true)) return code;
      return signalExitCode(received);
    },
    dispose() {
      for (const [signal, handler] of handlers) process.off(signal, handler);
    },
  };
}

/** How a stop signal is named to a person: Ctrl-C for SIGINT, else the signal. */
export function signalName(signal: StopSignal): string {
  return signal === "SIGINT" ? "Ctrl-C" : signal;
}
