// Agent definitions: what a task runs. An agent is a Markdown file with YAML front matter (found in
// `<cwd>/.codemode/agents/` and `~/.codemode/agents/`) or a definition registered in code; both are
// validated by one zod schema into an AgentDefinition, and the AgentRegistry finds them by name
// (code first, then the directories in order). docs/tasks.md#agents-and-drivers.
import { closeSync, existsSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { closestNames, isCloseName } from "../tools/identifiers.js";
import { TaskError } from "./errors.js";
import { yamlLibrary } from "../yaml-library.js";
import { openRegular, readAt, readRegularFile, UnsafeFileError } from "../safe-fs.js";
import { formatBytes, formatBytesOver } from "../text.js";
import type { DriverKind } from "./types.js";
import type { TraceScope } from "../tracing.js";

export type CommandProtocol = "text" | "jsonl" | "claude-stream-json";

/** What a `function` agent runs: an in-process async function. */
export type FunctionAgent = (input: {
  task: string;
  taskId: string;
  signal: AbortSignal;
  emit: (event: DriverEvent) => void;
  /** Where the function's own spans go (OpenTelemetry: the task's run span); absent when nothing is traced. */
  trace?: TraceScope;
}) => Promise<string | void>;

/** Events a driver reports to the host; the host, not the child, turns them into usage. */
export type DriverEvent =
  | { type: "text"; text: string }
  | { type: "usage"; input: number; output: number; cost?: number }
  | { type: "turn" }
  | { type: "report"; report: unknown }
  | { type: "error"; message: string };

/** USD per million tokens, used to price the host's own token count. */
export interface Prices {
  input: number;
  output: number;
}

export interface AgentDefinition {
  name: string;
  description: string;
  driver: DriverKind;
  model?: string;
  /**
   * Models a program may choose with `ptc_subagent({ model })` besides `model`. Absent: a
   * program cannot choose one (a request for another model is refused).
   */
  models?: string[];
  /** Full tool paths the child may reach (script and openai drivers); absent = none beyond its own. */
  tools?: string[];
  readOnly: boolean;
  /** false = the agent opted out of reporting. */
  report: boolean;
  maxTurns?: number;
  /**
   * On a Redis queue: how many times a task whose worker was lost (it died or lost Redis) is
   * queued again for another worker. Absent or 0: never — at most once, the task becomes lost.
   * Opting in says the agent's work is safe to run again. No effect on one host (docs/tasks.md).
   */
  retries?: number;
  /** The Markdown body: a system prompt or instructions. */
  prompt: string;
  /** "code" or the file the definition came from. */
  source: string;
  // script driver
  script?: string;
  scriptCode?: string;
  // command driver
  command?: string[];
  stdin?: boolean;
  protocol?: CommandProtocol;
  env?: Record<string, string>;
  // openai driver
  baseUrl?: string;
  apiKeyEnv?: string;
  prices?: Prices;
  temperature?: number;
  // function driver
  run?: FunctionAgent;
}

const NAME = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "must be letters, digits, '_', '.' or '-', starting with a letter or digit");
/** A task re-queued more often than this is a crash loop, not bad luck. */
export const MAX_RETRIES = 10;
const RETRIES = z.number().int().min(0).max(MAX_RETRIES).optional();
const PRICES = z.strictObject({ input: z.number().nonnegative(), output: z.number().nonnegative() });
const DRIVER_FIELDS_HINT = "script (script), command (command, stdin, protocol, env), openai (base_url, api_key_env, prices, temperature)";

const frontMatterSchema = z.strictObject({
  name: NAME.optional(),
  description: z.string().min(1),
  driver: z.enum(["script", "command", "openai"]),
  model: z.string().min(1).optional(),
  models: z.array(z.string().min(1)).optional(),
  tools: z.array(z.string().min(1)).optional(),
  read_only: z.boolean().optional(),
  report: z.boolean().optional(),
  max_turns: z.number().int().positive().optional(),
  retries: RETRIES,
  script: z.string().min(1).optional(),
  command: z.union([z.string().min(1), z.array(z.string()).min(1)]).optional(),
  stdin: z.boolean().optional(),
  protocol: z.enum(["text", "jsonl", "claude-stream-json"]).optional(),
  env: z.record(z.string(), z.string()).optional(),
  base_url: z.string().url().optional(),
  api_key_env: z.string().min(1).optional(),
  prices: PRICES.optional(),
  temperature: z.number().min(0).max(2).optional(),
});

const codeAgentSchema = z.strictObject({
  name: NAME,
  description: z.string().min(1),
  driver: z.enum(["script", "command", "openai", "function"]),
  model: z.string().min(1).optional(),
  models: z.array(z.string().min(1)).optional(),
  tools: z.array(z.string().min(1)).optional(),
  readOnly: z.boolean().optional(),
  report: z.boolean().optional(),
  maxTurns: z.number().int().positive().optional(),
  retries: RETRIES,
  prompt: z.string().optional(),
  source: z.string().optional(),
  script: z.string().min(1).optional(),
  scriptCode: z.string().min(1).optional(),
  command: z.array(z.string()).min(1).optional(),
  stdin: z.boolean().optional(),
  protocol: z.enum(["text", "jsonl", "claude-stream-json"]).optional(),
  env: z.record(z.string(), z.string()).optional(),
  baseUrl: z.string().url().optional(),
  apiKeyEnv: z.string().min(1).optional(),
  prices: PRICES.optional(),
  temperature: z.number().min(0).max(2).optional(),
  run: z.custom<FunctionAgent>((v) => typeof v === "function", "must be an async function").optional(),
});

export type AgentInput = z.input<typeof codeAgentSchema>;

/** Where a front-matter field is in its file: `line 5: ` (empty when unknown, e.g. agents from code). */
type FieldLine = (path: readonly PropertyKey[], key?: boolean) => string;

function issueText(where: string, issues: readonly z.core.$ZodIssue[], line: FieldLine = () => "", fields: readonly string[] = []): string {
  const parts = issues.map((issue) => {
    if (issue.code === "unrecognized_keys") {
      return issue.keys
        .map((k) => {
          const guess = closestNames(k, fields, 1)[0];
          const hint = guess !== undefined && isCloseName(k, guess) ? `; did you mean "${guess}"?` : "";
          return `${line([...issue.path, k], true)}unknown field "${[...issue.path, k].join(".")}"${hint} (driver fields: ${DRIVER_FIELDS_HINT})`;
        })
        .join("; ");
    }
    const field = issue.path.length ? issue.path.join(".") : "(front matter)";
    return `${line(issue.path)}field "${field}" ${issue.message.replace(/^Invalid (input|option): /, "")}`;
  });
  return `${where}: ${parts.join("; ")}`;
}

/** Per-driver requirements the schema cannot express field by field. */
function checkDriverFields(where: string, def: AgentDefinition, line: FieldLine = () => ""): void {
  const fail = (msg: string, field?: string): never => {
    throw new TaskError("agent_invalid", `${where}: ${field ? line([field]) : ""}${msg}`);
  };
  switch (def.driver) {
    case "script":
      if (!def.script && !def.scriptCode) fail(`field "script" is required for driver "script" (a path to the program, relative to the agent file)`);
      break;
    case "command":
      if (!def.command?.length) fail(`field "command" is required for driver "command" (an argv list; "{task}" is replaced by the task)`);
      // The first element is the program: a task there would choose what runs.
      if (def.command![0]!.includes("{task}")) fail(`field "command" must not put "{task}" in its first element (the program to run); pass the task as a later argument, after "--"`, "command");
      break;
    case "openai":
      if (!def.model) fail(`field "model" is required for driver "openai"`);
      break;
    case "function":
      if (!def.run) fail(`field "run" is required for driver "function" (an async function)`);
      break;
  }
}

/** Validates an agent registered in code. */
export function defineAgent(input: AgentInput): AgentDefinition {
  const where = `agent ${typeof (input as { name?: unknown })?.name === "string" ? `"${(input as { name: string }).name}"` : "(registered in code)"}`;
  const parsed = codeAgentSchema.safeParse(input);
  if (!parsed.success) throw new TaskError("agent_invalid", issueText(where, parsed.error.issues));
  const v = parsed.data;
  const def: AgentDefinition = {
    ...stripUndefined({ ...v, readOnly: undefined, report: undefined, prompt: undefined, source: undefined }),
    name: v.name,
    description: v.description,
    driver: v.driver,
    readOnly: v.readOnly ?? false,
    report: v.report ?? true,
    prompt: v.prompt ?? "",
    source: v.source ?? "code",
  } as AgentDefinition;
  checkDriverFields(where, def);
  return def;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/** Line (1-based) of an offset in `text`, counting from `first`. */
function lineAt(text: string, offset: number, first: number): number {
  let line = first;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

/** The largest agent file read (docs/limits.md): front matter and a prompt, not a data file. */
export const AGENT_FILE_MAX_BYTES = 1024 * 1024;

/**
 * An agent file's text, read as the host reads its configuration: a regular file (a link is
 * followed to one) of at most AGENT_FILE_MAX_BYTES. A FIFO, a device or a huge file planted
 * among the agents is refused at once rather than hanging or exhausting every command.
 */
function readAgentFile(path: string, where: string): string {
  let bytes: Buffer | undefined;
  try {
    bytes = readRegularFile(path, { maxBytes: AGENT_FILE_MAX_BYTES, follow: true });
  } catch (err) {
    if (!(err instanceof UnsafeFileError)) throw err;
    if (err.reason === "not_regular_file") throw new TaskError("agent_invalid", `${where}: is ${err.found}, not a regular file; an agent file must be a regular file`);
    if (err.reason === "too_large") {
      if (typeof err.found !== "number") throw new TaskError("agent_invalid", `${where}: grew while it was read, past the ${formatBytes(AGENT_FILE_MAX_BYTES)} an agent file may be`);
      const [size, max] = formatBytesOver(err.found, AGENT_FILE_MAX_BYTES);
      throw new TaskError("agent_invalid", `${where}: is ${size}, larger than the ${max} an agent file may be`);
    }
    throw err;
  }
  if (bytes === undefined) throw new TaskError("agent_invalid", `${where}: no such file`);
  return bytes.toString("utf8");
}

/**
 * Parses one agent file: YAML front matter (the `yaml` package's document, so every problem is
 * placed at its line in the file) and a Markdown body.
 */
export function parseAgentFile(path: string, text?: string): AgentDefinition {
  const where = `agent file "${path}"`;
  const source = text ?? readAgentFile(path, where);
  const m = FRONT_MATTER.exec(source);
  if (!m) throw new TaskError("agent_invalid", `${where}: must start with YAML front matter between "---" lines (name, description, driver, …)`);
  const front = m[1]!;
  // The front matter starts on the file's second line, after the opening "---".
  const FIRST_LINE = 2;
  const doc = yamlLibrary().parseDocument(front, { prettyErrors: false });
  const error = doc.errors[0];
  if (error) {
    const line = lineAt(front, error.pos[0], FIRST_LINE);
    const message = error.message.replace(/ at line \d+, column \d+:?[\s\S]*$/, "").split("\n")[0]!;
    throw new TaskError("agent_invalid", `${where}: line ${line}: front matter is not valid YAML: ${message}`);
  }
  const data: unknown = doc.toJS();
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new TaskError("agent_invalid", `${where}: front matter must be a YAML mapping of fields (name, description, driver, …)`);
  }
  const fieldLine: FieldLine = (fieldPath, key) => {
    let node: unknown;
    if (key) {
      const parent = fieldPath.length > 1 ? doc.getIn(fieldPath.slice(0, -1), true) : doc.contents;
      const items = (parent as { items?: Array<{ key?: { value?: unknown; range?: number[] } }> } | null)?.items;
      node = items?.find((pair) => pair.key?.value === fieldPath.at(-1))?.key;
    } else {
      node = fieldPath.length === 0 ? undefined : doc.getIn(fieldPath, true);
    }
    const range = (node as { range?: number[] } | undefined)?.range;
    return range ? `line ${lineAt(front, range[0]!, FIRST_LINE)}: ` : "";
  };
  const parsed = frontMatterSchema.safeParse(data);
  if (!parsed.success) throw new TaskError("agent_invalid", issueText(where, parsed.error.issues, fieldLine, Object.keys(frontMatterSchema.shape)));
  const f = parsed.data;
  const fileName = path.split(/[\\/]/).pop()!.replace(/\.md$/i, "");
  const name = f.name ?? fileName;
  if (!NAME.safeParse(name).success) {
    throw new TaskError("agent_invalid", `${where}: field "name" is missing and the file name "${fileName}" is not a valid agent name; add a "name:" field`);
  }
  const def: AgentDefinition = {
    name,
    description: f.description,
    driver: f.driver,
    readOnly: f.read_only ?? false,
    report: f.report ?? true,
    prompt: source.slice(m[0].length).trim(),
    source: path,
    ...stripUndefined({
      model: f.model,
      models: f.models,
      tools: f.tools,
      maxTurns: f.max_turns,
      retries: f.retries,
      // The script path is relative to the agent file, so agents can ship with their programs.
      script: f.script === undefined ? undefined : isAbsolute(f.script) ? f.script : resolve(dirname(path), f.script),
      command: typeof f.command === "string" ? [f.command] : f.command,
      stdin: f.stdin,
      protocol: f.protocol,
      env: f.env,
      baseUrl: f.base_url,
      apiKeyEnv: f.api_key_env,
      prices: f.prices,
      temperature: f.temperature,
    }),
  };
  checkDriverFields(where, def, fieldLine);
  return def;
}

/** An agent file that could not be loaded: skipped, and reported. */
export interface AgentProblem {
  /** The agent's name as far as it could be read (its `name:` field, else the file name). */
  name: string;
  file: string;
  message: string;
}

/**
 * Loads every `*.md` agent in a directory (a missing directory holds no agents). A file that
 * does not parse, or repeats a name, is skipped and listed in `problems`: one broken file must not
 * stop every command that never uses it.
 */
export function loadAgentDir(dir: string): { agents: AgentDefinition[]; problems: AgentProblem[] } {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return { agents: [], problems: [] };
  const agents: AgentDefinition[] = [];
  const problems: AgentProblem[] = [];
  const seen = new Map<string, string>();
  for (const entry of readdirSync(dir).sort()) {
    if (!entry.toLowerCase().endsWith(".md")) continue;
    const file = join(dir, entry);
    let def: AgentDefinition;
    try {
      def = parseAgentFile(file);
    } catch (err) {
      problems.push({ name: declaredName(file) ?? entry.replace(/\.md$/i, ""), file, message: err instanceof TaskError ? err.message : `agent file "${file}": ${(err as Error).message}` });
      continue;
    }
    const prev = seen.get(def.name);
    if (prev) {
      problems.push({ name: def.name, file, message: `agent file "${file}": field "name" "${def.name}" is already used by "${prev}"; rename one of them (this one is skipped)` });
      continue;
    }
    seen.set(def.name, def.source);
    agents.push(def);
  }
  return { agents, problems };
}

/**
 * The `name:` a broken file declares, read line by line (its YAML may not parse) in its first
 * 64 KiB; undefined for anything but a regular file (opened as parseAgentFile opens it: never
 * waiting on a FIFO).
 */
function declaredName(file: string): string | undefined {
  try {
    const opened = openRegular(file, { follow: true });
    if (!opened) return undefined;
    let head: string;
    try {
      head = readAt(opened.fd, 0, 64 * 1024).toString("utf8");
    } finally {
      closeSync(opened.fd);
    }
    return /^name:[ \t]*["']?([A-Za-z0-9][A-Za-z0-9_.-]*)["']?[ \t]*$/m.exec(head)?.[1];
  } catch {
    return undefined;
  }
}

export function defaultAgentDirs(cwd: string): string[] {
  return [join(cwd, ".codemode", "agents"), join(homedir(), ".codemode", "agents")];
}

export interface AgentRegistryOptions {
  /** Agents registered in code; they win over files with the same name. */
  agents?: Array<AgentInput | AgentDefinition>;
  /** Directories searched in order (earlier wins); default `<cwd>/.codemode/agents`, `~/.codemode/agents`. */
  dirs?: string[];
  cwd?: string;
}

export class AgentRegistry {
  private readonly byName = new Map<string, AgentDefinition>();
  private readonly broken = new Map<string, AgentProblem>();
  readonly searched: readonly string[];
  /** Agent files that were skipped, each with why (see loadAgentDir). */
  readonly problems: readonly AgentProblem[];

  constructor(options: AgentRegistryOptions = {}) {
    if (options.agents !== undefined && !Array.isArray(options.agents)) throw new TaskError("invalid_argument", `"agents" must be an array of agent definitions`);
    if (options.dirs !== undefined && (!Array.isArray(options.dirs) || options.dirs.some((d) => typeof d !== "string"))) {
      throw new TaskError("invalid_argument", `"dirs" must be an array of directory paths`);
    }
    const cwd = options.cwd ?? process.cwd();
    this.searched = (options.dirs ?? defaultAgentDirs(cwd)).map((d) => resolve(cwd, d));
    for (const a of options.agents ?? []) this.register(a);
    const problems: AgentProblem[] = [];
    for (const dir of this.searched) {
      const loaded = loadAgentDir(dir);
      for (const def of loaded.agents) if (!this.byName.has(def.name) && !this.broken.has(def.name)) this.byName.set(def.name, def);
      // A broken file hides the same name in later directories: running another agent than the one meant is worse than none.
      for (const problem of loaded.problems) if (!this.byName.has(problem.name) && !this.broken.has(problem.name)) this.broken.set(problem.name, problem);
      problems.push(...loaded.problems);
    }
    this.problems = problems;
  }

  register(input: AgentInput | AgentDefinition): AgentDefinition {
    const def = defineAgent(input as AgentInput);
    if (this.byName.has(def.name)) throw new TaskError("agent_invalid", `agent "${def.name}" is registered twice; give each agent a unique name`);
    this.byName.set(def.name, def);
    return def;
  }

  list(): AgentDefinition[] {
    return [...this.byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): AgentDefinition {
    const def = this.byName.get(name);
    if (def) return def;
    const broken = this.broken.get(name);
    if (broken) throw new TaskError("agent_invalid", `agent "${name}" cannot be used: its file does not load. ${broken.message}`);
    const where = ["code", ...this.searched].join(", ");
    const known = this.list().map((a) => a.name);
    const message = known.length
      ? `unknown agent "${name}"; known agents: ${known.join(", ")} (loaded from ${where}). Use one of them, or add ${name}.md to one of those directories`
      : `unknown agent "${name}": no agents are defined (searched ${where}). Add ${name}.md with YAML front matter to one of those directories, or register the agent in code`;
    throw new TaskError("agent_unknown", message);
  }
}
