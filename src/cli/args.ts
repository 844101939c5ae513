// A small argv parser with errors that name the flag and what it expects (exit code 2).
import { closestNames } from "../tools/identifiers.js";

export class UsageError extends Error {
  override readonly name = "UsageError";
}

export interface FlagSpec {
  type: "boolean" | "string";
  /** What the value is, for messages: "<ms>", "<name>". */
  value?: string;
  repeat?: boolean;
}

export interface Parsed {
  flags: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export function parseArgs(command: string, argv: readonly string[], spec: Record<string, FlagSpec>): Parsed {
  const flags: Parsed["flags"] = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = (eq === -1 ? arg : arg.slice(0, eq)).replace(/^--?/, "");
    const flag = spec[name];
    if (!flag || !arg.startsWith("--")) {
      const known = Object.keys(spec).map((key) => `--${key}`);
      const hint = known.length ? `; did you mean ${closestNames(`--${name}`, known, 1)[0]}? (known: ${known.join(", ")})` : `; it takes no flags`;
      throw new UsageError(`${command}: unknown flag "${eq === -1 ? arg : arg.slice(0, eq)}"${hint}`);
    }
    let value: string | boolean;
    if (flag.type === "boolean") {
      if (eq !== -1) throw new UsageError(`${command}: --${name} is a switch and takes no value, got "${arg}"`);
      value = true;
    } else if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) throw new UsageError(`${command}: --${name} needs a value ${flag.value ?? "<value>"}`);
      value = next;
      i++;
    }
    if (flag.repeat) {
      const list = (flags[name] as string[] | undefined) ?? [];
      list.push(...String(value).split(",").filter((part) => part !== ""));
      flags[name] = list;
    } else {
      if (flags[name] !== undefined) throw new UsageError(`${command}: --${name} given twice`);
      flags[name] = value;
    }
  }
  return { flags, positionals };
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
