// What a command reads and writes, so every command is a function of its arguments and streams;
// and the one sanitiser every write to a person's terminal goes through.
//
// Much of what the CLI prints comes from elsewhere: labels and task text a program chose, error
// text, reports, upstream servers' tool descriptions and stderr, a program's own output. On a
// terminal a control character or escape sequence in any of it is an instruction (set the
// clipboard with OSC 52, retitle the window, hide or rewrite lines), so none reaches the terminal
// raw: `write` shows them as `\u001b`-style escapes, `writeOutput` does so when the stream is a
// terminal (a pipe gets the bytes as they are), and only renderers that sanitise every field
// themselves (task-view.ts) use `writeStyled` to keep their own colours.
import type { Readable, Writable } from "node:stream";

export interface Io {
  cwd: string;
  stdin: Readable;
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean; columns?: number };
  env: NodeJS.ProcessEnv;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
/** `codemode run` / `resume` exit code when the program stopped for an approval: resume it with the printed continuation. */
export const EXIT_INTERRUPTED = 3;

/**
 * C0 controls but tab and newline (a carriage return only when it ends a CRLF line is kept), DEL,
 * C1 controls (a lone 0x9B is CSI to some terminals) and the bidirectional overrides and isolates
 * that make text display in another order than it reads.
 */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every character a terminal would act on shown as a `\u001b`-style escape instead.
 * JSON stays valid JSON of the same value (such an escape is JSON's own), so it is safe for
 * `--json` output too.
 */
export function forTerminal(text: string): string {
  return text.replace(UNSAFE, (ch: string, offset: number) => (ch === "\r" && text[offset + 1] === "\n" ? ch : `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`));
}

function send(stream: Writable, text: string): Promise<void> {
  if (text === "") return Promise.resolve();
  return new Promise((resolve, reject) => stream.write(text, (error) => (error ? reject(error) : resolve())));
}

/** Writes text meant for a person (messages, tables, warnings, JSON): control characters are made visible. */
export function write(stream: Writable, text: string): Promise<void> {
  return send(stream, forTerminal(text));
}

/** Writes a program's or task's own output: sanitised on a terminal, the exact text into a pipe or file. */
export function writeOutput(stream: Writable & { isTTY?: boolean }, text: string): Promise<void> {
  return send(stream, stream.isTTY ? forTerminal(text) : text);
}

/** Writes text whose every foreign part was already passed through forTerminal, keeping the caller's own styling. */
export function writeStyled(stream: Writable, text: string): Promise<void> {
  return send(stream, text);
}

/**
 * Whether to colour what goes to `stream`: FORCE_COLOR set (to anything but 0 or false) forces it
 * on and wins, as in Node itself; NO_COLOR set to anything turns it off; otherwise only on a
 * terminal that is not "dumb".
 */
export function useColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== "0" && force.toLowerCase() !== "false";
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return stream.isTTY === true && env.TERM !== "dumb";
}

export function line(text: string): string {
  return text.endsWith("\n") ? text : `${text}\n`;
}
