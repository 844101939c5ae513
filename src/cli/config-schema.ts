// The one schema of `codemode.json`: what loadConfig validates a file against, and what the
// published JSON Schema (schema/codemode.schema.json, for editors' completion and checks) is
// generated from. Every leaf carries the phrase its error message uses ("must be <error>") and a
// description for the JSON Schema, so the two never drift apart.
import { z } from "zod";
import { DEFAULT_DECLARATIONS_BUDGETS, MIN_DECLARATIONS_BUDGET } from "../codemode/codemode.js";
import { LIMIT_RANGES, type Limits } from "../codemode/limits.js";

/** Where the published schema lives; `codemode init` points `$schema` at it. */
export const CONFIG_SCHEMA_URL = "https://raw.githubusercontent.com/codemode-runtime/codemode-runtime/main/schema/codemode.schema.json";

export const SERVER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;
/** Start-up deadline of one upstream server: connecting and listing every page of its tools. */
export const STARTUP_TIMEOUT_RANGE = [100, 600_000] as const;
export const MIN_TASK_OUTPUT_BYTES = 4096;
/** A declarations budget in the file: at least what the library accepts, at most 1 MB (a prompt, not a dump). */
export const DECLARATIONS_BUDGET_RANGE = [MIN_DECLARATIONS_BUDGET, 1_000_000] as const;

const LIMIT_TEXT: Record<keyof Limits, string> = {
  timeoutMs: "Wall-clock deadline of a run, in milliseconds (default 30000).",
  memoryBytes: "Memory of a program's sandbox, in bytes (default 64 MiB).",
  stackBytes: "Stack of a program's sandbox, in bytes (default 1 MiB).",
  maxToolCalls: "Tool calls one run may make (default 1000).",
  maxInFlight: "Tool calls running at once per run; further calls wait in order (default 16).",
  maxCrossingBytes: "Largest argument or result crossing the sandbox wall, in bytes (default 8 MiB).",
  outputBudget: "Bytes of a run's output the model sees; past it the middle is cut and the whole text spilled to a file (default 40000).",
  maxSpillBytes: "Largest spill file of a run's full output, in bytes (default 64 MiB).",
  storeValueBytes: "Largest store() value, in bytes (default 256 KiB).",
  storeSessionBytes: "All store() values of one session, in bytes (default 1 MiB).",
  maxTimers: "Pending timers per run (default 10000).",
};

function integer(min: number, max: number, description: string) {
  const error = `an integer from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error }).describe(description);
}

const path = (description: string) => z.string({ error: "a non-empty path string" }).trim().min(1, { error: "a non-empty path string" }).describe(description);

const limits = z
  .strictObject(
    Object.fromEntries(Object.entries(LIMIT_RANGES).map(([key, [min, max]]) => [key, integer(min, max, LIMIT_TEXT[key as keyof Limits]).optional()])) as Record<
      keyof Limits,
      z.ZodOptional<ReturnType<typeof integer>>
    >,
    {
      error: "an object of limits",
    },
  )
  .describe("Limits of every program run (docs/limits.md); each is optional.");

const stringMap = (what: string, description: string) => z.record(z.string(), z.string({ error: "a string" }), { error: `an object of ${what}` }).describe(description);

const common = {
  readOnlyTools: z
    .array(z.string({ error: "a tool name" }).min(1, { error: "a tool name" }), { error: "an array of the server's tool names" })
    .optional()
    .describe("Tools of this server (names as it lists them) that never change anything, besides those it annotates readOnlyHint: read-only agents may call them."),
  startupTimeoutMs: integer(
    ...STARTUP_TIMEOUT_RANGE,
    "How long the server may take to start and list its tools, in milliseconds (default 20000); past it the server counts as failed and its tools are not bound.",
  ).optional(),
};

const stdioServer = z
  .strictObject({
    type: z.literal("stdio", { error: 'one of "stdio", "http" or "sse"' }).optional().describe("stdio (the default when there is no url): a process the runtime starts."),
    command: z
      .string({ error: "a non-empty string (the program to start)" })
      .trim()
      .min(1, { error: "a non-empty string (the program to start)" })
      .describe("The program to start; relative paths resolve from the configuration's folder."),
    args: z
      .array(z.string({ error: "a string" }), { error: "an array of strings" })
      .optional()
      .describe("Its arguments."),
    env: stringMap("string values", "Environment variables for the server, besides PATH, HOME and the like.").optional(),
    cwd: path("Working directory of the server process (default the configuration's folder).").optional(),
    ...common,
  })
  .describe("An MCP server the runtime starts and speaks to over stdio.");

const remoteServer = z
  .strictObject({
    type: z.enum(["http", "sse"], { error: 'one of "stdio", "http" or "sse"' }).optional().describe("http (Streamable HTTP, the default with a url) or sse (the older HTTP+SSE transport)."),
    // Checked as written: a variable may stand for the host (the URL is parsed once expanded).
    url: z
      .string({ error: "an http:// or https:// URL" })
      .regex(/^(?:https?:\/\/|\$\{)\S+$/i, { error: "an http:// or https:// URL" })
      .describe("The server's endpoint. ${VAR} and ${VAR:-default} are replaced by environment variables when the server is started."),
    headers: stringMap(
      "header values",
      'HTTP headers sent with every request, e.g. { "Authorization": "Bearer ${GITHUB_TOKEN}" }. ${VAR} and ${VAR:-default} are replaced by environment variables; the values are never printed.',
    ).optional(),
    ...common,
  })
  .describe("An MCP server reached over HTTP (Streamable HTTP, or SSE).");

export const serverSchema = z.union([stdioServer, remoteServer], { error: 'an object { "command", "args"?, "env"? } or { "url", "headers"? }' });

const workspace = z
  .union(
    [
      z.literal(false),
      z
        .strictObject(
          {
            write: z.boolean({ error: "true or false" }).optional().describe("Bind write_file and the other writing tools too (default false)."),
            root: path("The workspace's root (default: the working directory; for codemode mcp, the configuration's folder).").optional(),
          },
          { error: 'false or an object { "write"?, "root"? }' },
        )
        .describe("The workspace toolset."),
    ],
    { error: 'false or an object { "write"?, "root"? }' },
  )
  .describe("The file tools programs get (list_files, read_file, search_files, and with write: true the writing ones); false: none.");

const tasks = z
  .strictObject(
    {
      maxOutputBytes: z
        .number({ error: `a whole number of bytes, at least ${MIN_TASK_OUTPUT_BYTES}` })
        .int({ error: `a whole number of bytes, at least ${MIN_TASK_OUTPUT_BYTES}` })
        .min(MIN_TASK_OUTPUT_BYTES, { error: `a whole number of bytes, at least ${MIN_TASK_OUTPUT_BYTES}` })
        .max(Number.MAX_SAFE_INTEGER, { error: `a whole number of bytes, at least ${MIN_TASK_OUTPUT_BYTES}` })
        .optional()
        .describe("Output one subagent task may keep, in bytes (default 16 MiB)."),
      cwdRoots: z.array(path("A directory."), { error: "an array of directory paths" }).optional().describe("Directories a task's cwd may be in, besides the working directory."),
      redis: z
        .string({ error: "a redis://host:port URL" })
        .optional()
        .describe(
          "A Redis server (redis://[user:password@]host:port[/db], or rediss:// for TLS): task records and logs live there, and script, command and openai tasks are queued for `codemode worker` processes. A password may instead come from CODEMODE_REDIS_PASSWORD. See docs/distributed.md.",
        ),
      queue: z
        .string({ error: "1 to 64 letters, digits, '-' or '_'" })
        .regex(/^[A-Za-z0-9_-]{1,64}$/, { error: "1 to 64 letters, digits, '-' or '_'" })
        .optional()
        .describe('The Redis queue\'s name (default "codemode-tasks"); needs "redis".'),
      maxRunning: integer(
        1,
        1_000_000,
        'Tasks running at once: on this host (default 8), or with "redis" across every worker of the queue (default: no cap but each worker\'s --concurrency).',
      ).optional(),
      lockMs: integer(1000, 3_600_000, 'With "redis": how long a worker may go silent (dead, or cut off from Redis) before its tasks are marked lost, in ms (default 30000).').optional(),
    },
    { error: 'an object { "maxOutputBytes"?, "cwdRoots"?, "redis"?, "queue"?, "maxRunning"?, "lockMs"? }' },
  )
  .describe("Limits of the subagent tasks this configuration's runtime hosts.");

const declarations = z
  .strictObject(
    {
      prompt: integer(
        ...DECLARATIONS_BUDGET_RANGE,
        `Bytes of TypeScript declarations in ptc_run_code's description (codemode mcp) and the library's cm.declarations() (default ${DEFAULT_DECLARATIONS_BUDGETS.prompt}); past it tools are listed by name and one line. codemode mcp --declarations-budget overrides it.`,
      ).optional(),
      search: integer(...DECLARATIONS_BUDGET_RANGE, `Bytes of declarations one tool_search answer with declarations: true may carry (default ${DEFAULT_DECLARATIONS_BUDGETS.search}).`).optional(),
    },
    { error: 'an object { "prompt"?, "search"? } of byte budgets' },
  )
  .describe("How many bytes of tool declarations each reader gets: the model's prompt, and tool_search answers.");

const approvals = z
  .strictObject(
    {
      required: z
        .array(z.string({ error: "a tool id" }).min(1, { error: "a tool id" }), { error: 'an array of tool ids (such as "write_file" or "github.create_issue")' })
        .optional()
        .describe(
          "Tool ids (as codemode tools lists them) whose every call waits for a person's approval: asked on the terminal, through an MCP client's elicitation, or answered with codemode resume.",
        ),
    },
    { error: 'an object { "required"?: [tool ids] }' },
  )
  .describe("Calls that need a person's approval (docs/approvals.md).");

export const configSchema = z
  .strictObject(
    {
      $schema: z.string({ error: "a string (the URL or path of this schema)" }).optional().describe("The JSON Schema of this file, for editors."),
      limits: limits.optional(),
      dataDir: path("Where task records, task logs and sessions are kept (default .codemode/state). Not meant to be committed.").optional(),
      agentsDir: path("Where agent files (*.md) are found (default .codemode/agents); ~/.codemode/agents is searched after it.").optional(),
      workspace: workspace.optional(),
      mcpServers: z
        .record(z.string().regex(SERVER_NAME, { error: 'a name of 1–64 letters, digits, "_" or "-"' }), serverSchema, { error: 'an object { "<name>": { "command", … } | { "url", … } }' })
        .optional()
        .describe("Upstream MCP servers: programs reach their tools as tools.<name>.<tool>."),
      tasks: tasks.optional(),
      declarations: declarations.optional(),
      approvals: approvals.optional(),
    },
    { error: "a JSON object" },
  )
  .describe("Configuration of the codemode CLI (codemode run, tasks, task, tools, workflow, mcp). Paths are relative to this file's folder.");

export type RawConfig = z.output<typeof configSchema>;
export type RawServer = z.output<typeof serverSchema>;

/** The published JSON Schema (what schema/codemode.schema.json holds). */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: "input", target: "draft-2020-12" }) as Record<string, unknown>;
  return { $schema: schema.$schema, $id: CONFIG_SCHEMA_URL, title: "codemode.json", ...schema };
}
