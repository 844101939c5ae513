// `codemode.json`: the CLI's configuration, read from the working directory or the file --config
// names. Every problem is a ConfigError naming the file, the field and what was expected, so a user
// can fix it in one go. A configuration is trusted (it names processes to start); its paths, the
// defaults included, resolve against the file's own folder, so a trusted file given with --config
// never picks up the agents or state of whatever directory it is run in.
import { dirname, isAbsolute, join, resolve } from "node:path";
import { findNodeAtLocation, parseTree, printParseErrorCode, type Node as JsonNode, type ParseError } from "jsonc-parser";
import { z } from "zod";
import type { Limits } from "../codemode/limits.js";
import type { McpServerConfig } from "../mcp/upstream.js";
import { readRegularFile } from "../safe-fs.js";
import { describeReceived } from "../text.js";
import { closestNames, isCloseName } from "../tools/identifiers.js";
import { configSchema, type RawConfig } from "./config-schema.js";
import { redisUrlProblem } from "../tasks/redis/connection.js";

export type { McpServerConfig, RemoteServerConfig, StdioServerConfig } from "../mcp/upstream.js";

export const CONFIG_FILE = "codemode.json";
/** State (task database, logs, sessions): apart from the agents and the configuration, which are meant to be committed. */
export const DEFAULT_DATA_DIR = join(".codemode", "state");
export const DEFAULT_AGENTS_DIR = join(".codemode", "agents");
const CONFIG_MAX_BYTES = 1024 * 1024;
/** Problems listed from one file; the rest are counted. */
const MAX_PROBLEMS = 10;

/** The `tasks` section: limits of the subagents this configuration's runtime hosts. */
export interface TasksConfig {
  /** Output one task may store, in bytes. */
  maxOutputBytes?: number;
  /** Directories (absolute) a task's `cwd` may be in, besides the working directory. */
  cwdRoots?: string[];
  /** Tasks on a Redis queue (BullMQ) run by `codemode worker` processes; see docs/distributed.md. */
  redis?: string;
  queue?: string;
  /** Tasks running at once: on this host, or with `redis` across every worker of the queue. */
  maxRunning?: number;
  /** How long a worker may go silent before its tasks are lost, in ms. */
  lockMs?: number;
}

export interface CodemodeConfig {
  /** The configuration file (absolute); absent when there is none (defaults on the working directory). */
  file?: string;
  limits: Partial<Limits>;
  /** Absolute. */
  dataDir: string;
  /** Whether the file named its dataDir (the default moved from .codemode to .codemode/state). */
  dataDirGiven: boolean;
  /** Absolute. */
  agentsDir: string;
  mcpServers: Record<string, McpServerConfig>;
  /**
   * The read-only (or, with write: true, writable) workspace toolset; false: none. `root`
   * (absolute) when the file names one; otherwise the command decides (run: the working directory;
   * mcp: the file's folder).
   */
  workspace: false | { write: boolean; root?: string };
  tasks: TasksConfig;
  /** Tool ids (as `codemode tools` lists them) whose every call needs a person's approval (docs/approvals.md). */
  approvals: { required: string[] };
  /** Declarations budgets in bytes (`CodemodeOptions.declarations`); only those the file names. */
  declarations: { prompt?: number; search?: number };
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/**
 * Reads `<cwd>/codemode.json` when it exists (defaults on the working directory otherwise), or the
 * file `--config` names, which must exist. Paths in a configuration, and the defaults of the ones
 * it leaves out, are relative to the file's own directory.
 */
export function loadConfig(cwd: string, explicit?: string): CodemodeConfig {
  const file = explicit === undefined ? join(cwd, CONFIG_FILE) : resolve(cwd, explicit);
  const at = explicit ?? CONFIG_FILE;
  let bytes: Buffer | undefined;
  try {
    // A regular file of sane size (a FIFO or device planted as codemode.json must not hang the CLI).
    bytes = readRegularFile(file, { maxBytes: CONFIG_MAX_BYTES, follow: true });
  } catch (error) {
    throw new ConfigError(`${at} cannot be read: ${(error as Error).message}`);
  }
  if (bytes === undefined) {
    if (explicit !== undefined) throw new ConfigError(`--config: no configuration file at ${file}`);
    return parseConfig(undefined, { base: cwd });
  }
  const text = bytes.toString("utf8");
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(syntaxError(at, text, error as Error));
  }
  return { ...parseConfig(raw, { base: dirname(file), at, text }), file };
}

/**
 * `base`: where the file's paths and the defaults resolve (its directory); `at` names the file in
 * messages; `text`, the file as written, places each problem at its line and column.
 */
export function parseConfig(raw: unknown, where: { base: string; at?: string; text?: string }): CodemodeConfig {
  const { base } = where;
  const at = where.at ?? CONFIG_FILE;
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const locate = locator(where.text);
    const lines = parsed.error.issues.flatMap((issue) => describeIssue(issue, raw ?? {}, [])).map((problem) => `${at}${locate(problem.at)}: ${problem.message}`);
    const shown = lines.slice(0, MAX_PROBLEMS);
    if (lines.length > shown.length) shown.push(`… and ${lines.length - shown.length} more problems in ${at}`);
    throw new ConfigError(shown.join("\n"));
  }
  const redis = parsed.data.tasks?.redis;
  // The URL may carry a password: the message says what is wrong with it, never what it is.
  const redisProblem = redis === undefined ? undefined : redisUrlProblem(redis);
  if (redisProblem) throw new ConfigError(`${at}${locator(where.text)({ path: ["tasks", "redis"] })}: tasks.redis ${redisProblem}`);
  if (parsed.data.tasks?.queue !== undefined && redis === undefined) {
    throw new ConfigError(`${at}${locator(where.text)({ path: ["tasks", "queue"] })}: tasks.queue names a Redis queue: set tasks.redis too, or remove it`);
  }
  return resolveConfig(parsed.data, base);
}

function resolveConfig(config: RawConfig, base: string): CodemodeConfig {
  const path = (value: string) => (isAbsolute(value) ? value : resolve(base, value));
  let workspace: CodemodeConfig["workspace"] = { write: false };
  if (config.workspace === false) workspace = false;
  else if (config.workspace !== undefined) {
    workspace = { write: config.workspace.write ?? false };
    if (config.workspace.root !== undefined) workspace.root = path(config.workspace.root);
  }
  const mcpServers: Record<string, McpServerConfig> = {};
  for (const [name, entry] of Object.entries(config.mcpServers ?? {})) {
    const common = {
      ...(entry.readOnlyTools ? { readOnlyTools: [...entry.readOnlyTools] } : {}),
      ...(entry.startupTimeoutMs !== undefined ? { startupTimeoutMs: entry.startupTimeoutMs } : {}),
    };
    if ("url" in entry) {
      mcpServers[name] = { type: entry.type ?? "http", url: entry.url, headers: { ...entry.headers }, ...common };
    } else {
      // Relative commands and arguments resolve from the configuration's directory.
      mcpServers[name] = { type: "stdio", command: entry.command, args: [...(entry.args ?? [])], env: { ...entry.env }, cwd: path(entry.cwd ?? "."), ...common };
    }
  }
  const tasks: TasksConfig = {};
  if (config.tasks?.maxOutputBytes !== undefined) tasks.maxOutputBytes = config.tasks.maxOutputBytes;
  if (config.tasks?.cwdRoots !== undefined) tasks.cwdRoots = config.tasks.cwdRoots.map(path);
  for (const key of ["redis", "queue", "maxRunning", "lockMs"] as const) {
    if (config.tasks?.[key] !== undefined) (tasks as Record<string, unknown>)[key] = config.tasks[key];
  }
  return {
    limits: { ...config.limits } as Partial<Limits>,
    dataDir: path(config.dataDir ?? DEFAULT_DATA_DIR),
    dataDirGiven: config.dataDir !== undefined,
    agentsDir: path(config.agentsDir ?? DEFAULT_AGENTS_DIR),
    mcpServers,
    workspace,
    tasks,
    declarations: { ...config.declarations },
    approvals: { required: [...(config.approvals?.required ?? [])] },
  };
}

type Path = ReadonlyArray<string | number>;
interface Problem {
  /** Where it is: a value's path, or a property's key (`key: true`). */
  at: { path: Path; key?: boolean };
  message: string;
}

/** `mcpServers.gh.args`, `tasks.cwdRoots[0]`. */
function dotted(path: Path): string {
  return path.map((part, i) => (typeof part === "number" ? `[${part}]` : i === 0 ? part : `.${part}`)).join("");
}

function valueAt(raw: unknown, path: Path): unknown {
  let value = raw;
  for (const part of path) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

/** The schema that validates the value at `path` (records and unions followed along the raw value). */
function schemaAt(path: Path, raw: unknown, keepUnion = false): z.ZodType | undefined {
  let schema: z.ZodType = configSchema;
  for (let i = 0; i <= path.length; i++) {
    schema = unwrap(schema, valueAt(raw, path.slice(0, i)), keepUnion && i === path.length);
    if (i === path.length) return schema;
    const part = path[i]!;
    if (schema instanceof z.ZodObject) schema = (schema.shape as Record<string, z.ZodType>)[part as string]!;
    else if (schema instanceof z.ZodRecord) schema = schema.valueType as z.ZodType;
    else if (schema instanceof z.ZodArray) schema = schema.element as z.ZodType;
    else return undefined;
    if (schema === undefined) return undefined;
  }
  return schema;
}

function unwrap(schema: z.ZodType, value: unknown, keepUnion: boolean): z.ZodType {
  for (;;) {
    if (schema instanceof z.ZodOptional) schema = schema.unwrap() as z.ZodType;
    else if (schema instanceof z.ZodUnion && !keepUnion) schema = schema.options[unionBranch(schema, value)] as z.ZodType;
    else return schema;
  }
}

/** The branch of a union of objects a value was meant for: the one that knows most of its fields. */
function unionBranch(union: z.ZodUnion, value: unknown): number {
  const keys = value !== null && typeof value === "object" && !Array.isArray(value) ? Object.keys(value) : [];
  let best = -1;
  let bestScore = -1;
  union.options.forEach((option, index) => {
    if (!(option instanceof z.ZodObject)) return;
    const shape = option.shape as Record<string, unknown>;
    const score = keys.filter((key) => Object.hasOwn(shape, key)).length;
    if (score > bestScore) [best, bestScore] = [index, score];
  });
  return best === -1 ? 0 : best;
}

function knownFields(path: Path, raw: unknown): string[] {
  const schema = schemaAt(path, raw);
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

function describeIssue(issue: z.core.$ZodIssue, raw: unknown, prefix: Path): Problem[] {
  const path = [...prefix, ...(issue.path as Path)];
  const name = dotted(path);
  switch (issue.code) {
    case "unrecognized_keys":
      return issue.keys.map((key) => {
        const known = knownFields(path, raw);
        const guess = closestNames(key, known, 1)[0];
        const hint = guess !== undefined && isCloseName(key, guess) ? `; did you mean "${guess}"?` : "";
        return { at: { path: [...path, key], key: true }, message: `unknown field "${dotted([...path, key])}"${hint} (known here: ${known.map((k) => `"${k}"`).join(", ")})` };
      });
    case "invalid_key":
      return [
        {
          at: { path, key: true },
          message: `${dotted(path.slice(0, -1))} has the name ${JSON.stringify(String(path.at(-1)))}; ${issue.issues[0]?.message ?? "it is not allowed"} is expected (programs reach its tools as tools.<name>.<tool>)`,
        },
      ];
    case "invalid_union": {
      // The branch the value was meant for says what is wrong inside it; a value that is no
      // branch's kind at all gets the union's own message.
      const union = schemaAt(path, raw, true);
      const value = valueAt(raw, path);
      const inner = union instanceof z.ZodUnion ? issue.errors[unionBranch(union, value)] : undefined;
      if (inner && inner.length > 0 && inner.every((sub) => sub.path.length > 0 || sub.code === "unrecognized_keys")) return inner.flatMap((sub) => describeIssue(sub, raw, path));
      return [{ at: { path }, message: `${name} must be ${issue.message}, got ${describeReceived(value)}` }];
    }
    default: {
      const value = valueAt(raw, path);
      if (value === undefined) return [{ at: { path: path.slice(0, -1) }, message: `${name} is missing: it must be ${issue.message}` }];
      return [{ at: { path }, message: `${path.length === 0 ? "the file" : name} must be ${issue.message}, got ${describeReceived(value)}` }];
    }
  }
}

/** ":line:column" of a problem in the file as written ("" without the text). */
function locator(text: string | undefined): (at: Problem["at"]) => string {
  if (text === undefined) return () => "";
  const root = parseTree(text);
  return (at) => {
    if (!root) return "";
    let node: JsonNode | undefined = at.path.length === 0 ? root : findNodeAtLocation(root, [...at.path]);
    if (node && at.key && node.parent?.type === "property") node = node.parent;
    return node ? `:${position(text, node.offset)}` : "";
  };
}

function position(text: string, offset: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    start = i + 1;
  }
  return `${line}:${offset - start + 1}`;
}

const SYNTAX: Record<string, string> = {
  InvalidNumberFormat: "a malformed number",
  PropertyNameExpected: "a field name in double quotes was expected (JSON has no unquoted names, no comments and no trailing commas)",
  ValueExpected: "a value was expected",
  ColonExpected: 'a ":" was expected after the field name',
  CommaExpected: 'a "," was expected between two entries',
  CloseBraceExpected: 'a "}" was expected',
  CloseBracketExpected: 'a "]" was expected',
  EndOfFileExpected: "nothing may follow the top-level value",
  InvalidCommentToken: "JSON has no comments",
  UnexpectedEndOfString: "a string is not closed",
  InvalidEscapeCharacter: "an invalid escape sequence",
  InvalidCharacter: "a control character inside a string",
};

/** JSON.parse's verdict, placed at a line and column (and said plainly) by jsonc-parser's scanner in strict mode. */
function syntaxError(at: string, text: string, error: Error): string {
  const errors: ParseError[] = [];
  parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  if (!first) return `${at} is not valid JSON: ${error.message}`;
  const code = printParseErrorCode(first.error);
  if (code === "InvalidSymbol") {
    const token = text.slice(first.offset, first.offset + Math.min(first.length, 40));
    return `${at}:${position(text, first.offset)}: not valid JSON: ${JSON.stringify(token)} is not a JSON value (names and strings go in double quotes)`;
  }
  return `${at}:${position(text, first.offset)}: not valid JSON: ${SYNTAX[code] ?? code}`;
}
