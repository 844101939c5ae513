// Command-line flags: node:util's parseArgs reads the argv (long and short flags, `--flag=value`,
// grouped short flags, `--`), and this module turns what it found into errors that name the flag
// and what it expects (exit code 2), and renders each command's help from the same flag table.
import { parseArgs as parseArgv } from "node:util";
import { closestNames } from "../tools/identifiers.js";

export class UsageError extends Error {
  override readonly name = "UsageError";
}

export interface FlagSpec {
  type: "boolean" | "string";
  /** What the value is, for messages and help: "<ms>", "<name>". */
  value?: string;
  /** May be given more than once; each value is kept whole (`--input a=1,2 --input b=3`). */
  repeat?: boolean;
  /** May be given more than once, each value a comma-separated list (`--status failed,lost`). */
  list?: boolean;
  /** A one-letter alias: -j for --json. */
  short?: string;
  /** One line (or a few) for the help; a flag without one is not listed. */
  description?: string;
}

export type FlagTable = Record<string, FlagSpec>;

export interface Parsed {
  flags: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/** Flags every command takes. */
export const HELP_FLAG: FlagSpec = { type: "boolean", short: "h", description: "print this help" };
export const CONFIG_FLAG: FlagSpec = { type: "string", value: "<file>", short: "c", description: "the configuration to use instead of ./codemode.json" };

export function parseArgs(command: string, argv: readonly string[], spec: FlagTable): Parsed {
  const options: Record<string, { type: "boolean" | "string"; short?: string; multiple?: boolean }> = {};
  for (const [name, flag] of Object.entries(spec)) options[name] = { type: flag.type, ...(flag.short ? { short: flag.short } : {}), ...(flag.repeat || flag.list ? { multiple: true } : {}) };
  // Not strict: unknown flags and missing values come back as tokens, for messages of our own.
  const { tokens } = parseArgv({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const flags: Parsed["flags"] = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") {
      positionals.push(token.value);
      continue;
    }
    if (token.kind === "option-terminator") continue;
    const flag = spec[token.name];
    const raw = token.rawName;
    if (!flag) {
      const known = Object.keys(spec).map((key) => `--${key}`);
      const hint = known.length ? `; did you mean ${closestNames(raw.startsWith("--") ? raw : `--${token.name}`, known, 1)[0]}? (known: ${known.join(", ")})` : `; it takes no flags`;
      throw new UsageError(`${command}: unknown flag "${raw}"${hint}`);
    }
    const name = token.name;
    let value: string | boolean;
    if (flag.type === "boolean") {
      if (token.value !== undefined) throw new UsageError(`${command}: --${name} is a switch and takes no value, got "${raw}=${token.value}"`);
      value = true;
    } else {
      // A value that is itself a flag (`--timeout --json`) means the value was left out.
      if (token.value === undefined || (!token.inlineValue && token.value.startsWith("--") && token.value.length > 2)) {
        throw new UsageError(`${command}: --${name} needs a value ${flag.value ?? "<value>"}`);
      }
      value = token.value;
    }
    if (flag.repeat || flag.list) {
      const values = (flags[name] as string[] | undefined) ?? [];
      if (flag.list)
        values.push(
          ...String(value)
            .split(",")
            .filter((part) => part !== ""),
        );
      else values.push(String(value));
      flags[name] = values;
    } else {
      if (flags[name] !== undefined) throw new UsageError(`${command}: --${name} given twice`);
      flags[name] = value;
    }
  }
  return { flags, positionals };
}

/** `[--json] [--timeout <duration>] [--status <s,…>]…`: the flags of a usage line. */
export function usageFlags(spec: FlagTable): string {
  return Object.entries(spec)
    .filter(([name]) => name !== "help")
    .map(([name, flag]) => `[--${name}${flag.type === "string" ? ` ${flag.value ?? "<value>"}` : ""}]${flag.repeat || flag.list ? "…" : ""}`)
    .join(" ");
}

const HELP_WIDTH = 100;

/**
 * The flags section of a command's help, from its flag table: each flag with its short alias and
 * value, its description wrapped beside it.
 */
export function flagHelp(spec: FlagTable): string {
  const rows = Object.entries(spec)
    .filter(([, flag]) => flag.description !== undefined)
    .map(([name, flag]) => [`${flag.short ? `-${flag.short}, ` : "    "}--${name}${flag.type === "string" ? ` ${flag.value ?? "<value>"}` : ""}`, flag.description!] as const);
  const width = Math.min(32, Math.max(...rows.map(([left]) => left.length)));
  const lines: string[] = [];
  for (const [left, text] of rows) {
    const wrapped = wrap(text, HELP_WIDTH - width - 4);
    if (left.length > width) lines.push(`  ${left}`, ...wrapped.map((part) => `${" ".repeat(width + 4)}${part}`));
    else lines.push(...wrapped.map((part, i) => (i === 0 ? `  ${left.padEnd(width)}  ${part}` : `${" ".repeat(width + 4)}${part}`)));
  }
  return lines.join("\n");
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let current = "";
  for (const word of text.split(/\s+/)) {
    if (current !== "" && current.length + 1 + word.length > width) {
      lines.push(current);
      current = word;
    } else current = current === "" ? word : `${current} ${word}`;
  }
  if (current !== "") lines.push(current);
  return lines;
}

/** A command's help: usage lines, what it does, its flags (generated from the table), and notes after them. */
export function commandHelp(parts: { usage: string | string[]; about: string; flags: FlagTable; notes?: string }): string {
  const usage = Array.isArray(parts.usage) ? parts.usage : [parts.usage];
  const lines = usage.map((line, i) => `${i === 0 ? "Usage: " : "       "}${line}`);
  return `${lines.join("\n")}\n\n${parts.about.trim()}\n\n${flagHelp(parts.flags)}\n${parts.notes ? `\n${parts.notes.trim()}\n` : ""}`;
}

/** `5000`, `5000ms`, `30s`, `2m` → milliseconds; at most 600 s like the runtime's own deadline cap. */
export function parseDuration(command: string, flag: string, raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim());
  const ms = m ? Math.round(Number(m[1]) * (m[2] === "s" ? 1000 : m[2] === "m" ? 60_000 : 1)) : NaN;
  if (!Number.isFinite(ms) || ms < 1 || ms > 600_000) {
    throw new UsageError(`${command}: --${flag} must be a duration from 1ms to 600s, like 5000, 5000ms, 30s or 2m; got "${raw}"`);
  }
  return ms;
}
