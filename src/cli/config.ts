// `codemode.json`: the CLI's configuration, read from the working directory or the file --config
// names. Every problem is a ConfigError naming the file, the field and what was expected, so a user
// can fix it in one go. A configuration is trusted (it names processes to start); its paths, the
// defaults included, resolve against the file's own folder, so a trusted file given with --config
// never picks up the agents or state of whatever directory it is run in.
import { dirname, isAbsolute, join, resolve } from "node:path";
import { checkLimits, type Limits } from "../codemode/limits.js";
import { readRegularFile } from "../safe-fs.js";
import { describeReceived } from "../text.js";

export const CONFIG_FILE = "codemode.json";
export const DEFAULT_DATA_DIR = ".codemode";
const CONFIG_MAX_BYTES = 1024 * 1024;

export interface McpServerConfig {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Working directory of the server process (absolute; default the configuration's directory). */
  cwd: string;
  /** Tools of this server (names as it lists them) that never change anything, besides those it annotates `readOnlyHint`. */
  readOnlyTools?: string[];
}

/** The `tasks` section: limits of the subagents this configuration's runtime hosts. */
export interface TasksConfig {
  /** Output one task may store, in bytes. */
  maxOutputBytes?: number;
  /** Directories (absolute) a task's `cwd` may be in, besides the working directory. */
  cwdRoots?: string[];
}

export interface CodemodeConfig {
  /** The configuration file (absolute); absent when there is none (defaults on the working directory). */
  file?: string;
  limits: Partial<Limits>;
  /** Absolute. */
  dataDir: string;
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
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

const TOP_KEYS = ["$schema", "limits", "dataDir", "agentsDir", "mcpServers", "workspace", "tasks"];
const SERVER_KEYS = ["command", "args", "env", "cwd", "type", "readOnlyTools"];
const SERVER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;

const kind = (value: unknown): string => describeReceived(value, { array: "an array", object: "an object", article: "" });

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function unknownKeys(where: string, value: Record<string, unknown>, known: string[]): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new ConfigError(`${where}: unknown field "${key}"; expected one of ${known.map((k) => `"${k}"`).join(", ")}`);
  }
}

/** A path given in the file, or its default, resolves from the file's directory. */
function pathField(where: string, value: unknown, base: string, fallback: string): string {
  if (value === undefined) return resolve(base, fallback);
  if (typeof value !== "string" || value.trim() === "") throw new ConfigError(`${where} must be a non-empty path string, got ${kind(value)}`);
  return isAbsolute(value) ? value : resolve(base, value);
}

/**
 * Reads `<cwd>/codemode.json` when it exists (defaults on the working directory otherwise), or the
 * file `--config` names, which must exist. Paths in a configuration, and the defaults of the ones
 * it leaves out, are relative to the file's own directory.
 */
export function loadConfig(cwd: string, explicit?: string): CodemodeConfig {
  const file = explicit === undefined ? join(cwd, CONFIG_FILE) : resolve(cwd, explicit);
  const at = explicit ?? CONFIG_FILE;
  let text: Buffer | undefined;
  try {
    // A regular file of sane size (a FIFO or device planted as codemode.json must not hang the CLI).
    text = readRegularFile(file, { maxBytes: CONFIG_MAX_BYTES, follow: true });
  } catch (error) {
    throw new ConfigError(`${at} cannot be read: ${(error as Error).message}`);
  }
  if (text === undefined) {
    if (explicit !== undefined) throw new ConfigError(`--config: no configuration file at ${file}`);
    return parseConfig(undefined, { base: cwd });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text.toString("utf8"));
  } catch (error) {
    throw new ConfigError(`${at} is not valid JSON: ${(error as Error).message}`);
  }
  return { ...parseConfig(raw, { base: dirname(file), at }), file };
}

/** `base`: where the file's paths and the defaults resolve (its directory); `at` names the file in messages. */
export function parseConfig(raw: unknown, where: { base: string; at?: string }): CodemodeConfig {
  const { base } = where;
  const at = where.at ?? CONFIG_FILE;
  if (raw === undefined) raw = {};
  if (!isObject(raw)) throw new ConfigError(`${at} must hold a JSON object, got ${kind(raw)}`);
  unknownKeys(at, raw, TOP_KEYS);

  let limits: Partial<Limits>;
  try {
    limits = checkLimits(raw.limits, `${at}: limits`);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }

  const dataDir = pathField(`${at}: "dataDir"`, raw.dataDir, base, DEFAULT_DATA_DIR);
  const agentsDir = pathField(`${at}: "agentsDir"`, raw.agentsDir, base, join(DEFAULT_DATA_DIR, "agents"));

  let workspace: CodemodeConfig["workspace"] = { write: false };
  if (raw.workspace === false) workspace = false;
  else if (raw.workspace !== undefined) {
    if (!isObject(raw.workspace)) throw new ConfigError(`${at}: "workspace" must be false or an object { "write"?: boolean, "root"?: path }, got ${kind(raw.workspace)}`);
    unknownKeys(`${at}: workspace`, raw.workspace, ["write", "root"]);
    const write = raw.workspace.write ?? false;
    if (typeof write !== "boolean") throw new ConfigError(`${at}: "workspace.write" must be true or false, got ${kind(write)}`);
    workspace = { write };
    if (raw.workspace.root !== undefined) workspace.root = pathField(`${at}: "workspace.root"`, raw.workspace.root, base, ".");
  }

  const mcpServers: Record<string, McpServerConfig> = {};
  if (raw.mcpServers !== undefined) {
    if (!isObject(raw.mcpServers)) throw new ConfigError(`${at}: "mcpServers" must be an object { "<name>": { "command", "args"?, "env"? } }, got ${kind(raw.mcpServers)}`);
    for (const [name, entry] of Object.entries(raw.mcpServers)) {
      const where = `${at}: mcpServers.${name}`;
      if (!SERVER_NAME.test(name)) {
        throw new ConfigError(`${at}: mcpServers has the server name ${JSON.stringify(name)}; names must be 1–64 letters, digits, "_" or "-" (programs reach its tools as tools.<name>.<tool>)`);
      }
      if (!isObject(entry)) throw new ConfigError(`${where} must be an object { "command", "args"?, "env"? }, got ${kind(entry)}`);
      if (entry.url !== undefined) throw new ConfigError(`${where}: "url" servers are not supported; give a stdio server as { "command", "args"?, "env"? }`);
      unknownKeys(where, entry, SERVER_KEYS);
      if (entry.type !== undefined && entry.type !== "stdio") throw new ConfigError(`${where}: "type" must be "stdio" (the only transport supported), got ${kind(entry.type)}`);
      if (typeof entry.command !== "string" || entry.command.trim() === "") throw new ConfigError(`${where}: "command" must be a non-empty string (the program to start), got ${kind(entry.command)}`);
      const args = entry.args ?? [];
      if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) throw new ConfigError(`${where}: "args" must be an array of strings, got ${kind(args)}`);
      const env = entry.env ?? {};
      if (!isObject(env)) throw new ConfigError(`${where}: "env" must be an object of string values, got ${kind(env)}`);
      for (const [key, value] of Object.entries(env)) {
        if (typeof value !== "string") throw new ConfigError(`${where}: "env.${key}" must be a string, got ${kind(value)}`);
      }
      // Relative commands and arguments resolve from the configuration's directory.
      const server: McpServerConfig = { command: entry.command, args: [...args] as string[], env: { ...(env as Record<string, string>) }, cwd: pathField(`${where}: "cwd"`, entry.cwd, base, ".") };
      if (entry.readOnlyTools !== undefined) {
        if (!Array.isArray(entry.readOnlyTools) || !entry.readOnlyTools.every((tool) => typeof tool === "string" && tool !== "")) {
          throw new ConfigError(`${where}: "readOnlyTools" must be an array of the server's tool names, got ${kind(entry.readOnlyTools)}`);
        }
        server.readOnlyTools = [...(entry.readOnlyTools as string[])];
      }
      mcpServers[name] = server;
    }
  }

  const tasks: TasksConfig = {};
  if (raw.tasks !== undefined) {
    if (!isObject(raw.tasks)) throw new ConfigError(`${at}: "tasks" must be an object { "maxOutputBytes"?, "cwdRoots"? }, got ${kind(raw.tasks)}`);
    unknownKeys(`${at}: tasks`, raw.tasks, ["maxOutputBytes", "cwdRoots"]);
    const max = raw.tasks.maxOutputBytes;
    if (max !== undefined) {
      if (typeof max !== "number" || !Number.isSafeInteger(max) || max < 4096) throw new ConfigError(`${at}: "tasks.maxOutputBytes" must be a whole number of bytes, at least 4096, got ${kind(max)}`);
      tasks.maxOutputBytes = max;
    }
    const roots = raw.tasks.cwdRoots;
    if (roots !== undefined) {
      if (!Array.isArray(roots)) throw new ConfigError(`${at}: "tasks.cwdRoots" must be an array of directory paths, got ${kind(roots)}`);
      tasks.cwdRoots = roots.map((root, i) => pathField(`${at}: "tasks.cwdRoots[${i}]"`, root, base, "."));
    }
  }

  return { limits, dataDir, agentsDir, mcpServers, workspace, tasks };
}
