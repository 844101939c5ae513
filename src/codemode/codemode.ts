// `createCodemode()`: the library's front door. It owns the sandbox engine, the tool set (the
// host's tools plus the runtime's own), per-session stores, and turns every program outcome into
// a RunResult. It rejects only for misuse of the API.
import { randomUUID } from "node:crypto";
import { join, resolve } from "node:path";
import type { Tracer } from "@opentelemetry/api";
import { SandboxEngine } from "../engine/engine.js";
import {
  describeTool,
  errorResult,
  invokeTool,
  renderDeclarations,
  toIdentifier,
  toolInfoTool,
  toolSearchTool,
  TOOL_SEARCH_TOOL,
  toTool,
  ToolError,
  type ResultView,
  type Tool,
  type ToolCallResult,
  type ToolDescriptor,
  type ToolHooks,
} from "../tools/index.js";
import { AgentRegistry, createTaskStore, TaskHost, type AgentDefinition, type AgentInput } from "../tasks/index.js";
import { ensurePrivateDir, PrivateTempDir } from "../safe-fs.js";
import { keepRuntimeFilesOut } from "../workspace/index.js";
import { childToolProvider, codemodeScriptRunner, ptcTools } from "../ptc/index.js";
import { WORKSPACE_READ_ONLY_TOOLS } from "../workspace/index.js";
import { ptcWorkflowTool } from "../workflow/index.js";
import { checkLimits, mergeLimits, type Limits } from "./limits.js";
import { describeReceived as describe } from "../text.js";
import { executeRun } from "./run.js";
import { SESSION_NAME, SessionStores } from "./sessions.js";
import type { RunResult } from "./run-result.js";
import { runCodeTool, RUN_CODE_TOOL } from "./run-code-tool.js";
import { spillingBound } from "./output.js";
import { isTracer, RunTrace, traceScope, type TraceScope } from "../tracing.js";

export interface CodemodeOptions {
  /** Host tools: `defineTool(...)` results or plain `{ name, description, execute }` objects. */
  tools?: readonly unknown[];
  /** Subagents registered in code; they win over agent files with the same name. */
  agents?: ReadonlyArray<AgentInput | AgentDefinition>;
  /** Where agent files are found, in order; default `<cwd>/.codemode/agents` and `~/.codemode/agents`. */
  agentDirs?: readonly string[];
  /** Task database, output logs and spilled text; absent: in-memory task records and a temp dir. */
  dataDir?: string;
  /** Working directory for agents (and the default place agent files are found). */
  cwd?: string;
  /**
   * Background subagents: running at once per host (default 8), waiting at once (1,000), deepest
   * nesting (3), SIGTERM→SIGKILL grace (5000 ms), output kept per task (16 MiB), longest stdout
   * line of a line protocol (4 MiB), and the directories a task's `cwd` may be in (default: `cwd`).
   */
  tasks?: { maxRunning?: number; maxQueued?: number; maxDepth?: number; killGraceMs?: number; maxOutputBytes?: number; maxLineBytes?: number; cwdRoots?: readonly string[] };
  /**
   * Full paths of host tools that never change anything (default: the workspace's read-only
   * tools). Read-only agents reach only these; an upstream MCP tool counts only when listed here
   * (connectUpstreams' `readOnlyTools` lists those its servers declare read-only).
   */
  readOnlyTools?: readonly string[];
  limits?: Partial<Limits>;
  hooks?: ToolHooks;
  /** Check every view projection against the compact ⊆ full rule at run time. */
  development?: boolean;
  /**
   * Records runs, tool calls and tasks as OpenTelemetry spans (docs/tracing.md). Default: the
   * global provider's tracer; with no provider registered nothing is recorded, at no cost.
   */
  tracer?: Tracer;
  /** Sandbox worker threads: at most `max` runs at once (default 16), `min` kept warm (default 1). */
  workers?: {
    max?: number;
    min?: number;
    /** Warm session instances each worker keeps between runs (default 4). */
    idleSessions?: number;
    /** Memory a worker may keep for its warm sessions after runs (default 8 MiB); past it the worker is replaced, freeing it. */
    idleBytes?: number;
  };
  /**
   * Bytes of TypeScript declarations per reader: `prompt`, what ptc_run_code's description carries
   * and cm.declarations() gives by default (8,000); `search`, what one tool_search answer with
   * `declarations: true` may carry (24,000). Past a budget tools are listed by name and one line.
   */
  declarations?: { prompt?: number; search?: number };
  /**
   * Top-level names of tools that could not be bound, each with why (connectUpstreams'
   * `unavailable`: servers that failed to start): a program calling `tools.<name>…` gets that
   * reason instead of "not a tool".
   */
  unavailableTools?: Readonly<Record<string, string>>;
}

/** The smallest declarations budget: room for the notes and a few tools. */
export const MIN_DECLARATIONS_BUDGET = 256;

/** The default declarations budgets (bytes) per reader; see `CodemodeOptions.declarations`. */
export const DEFAULT_DECLARATIONS_BUDGETS: Readonly<{ prompt: number; search: number }> = Object.freeze({ prompt: 8_000, search: 24_000 });

export interface RunOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Runs of one session share `store`/`load` values and may share a WASM instance; others never do. */
  session?: string;
  /** Default `result_view` for calls to tools with views that do not choose one. */
  resultView?: ResultView;
  limits?: Partial<Limits>;
}

/** What the runtime needs to run a program on behalf of a task (script agents). */
export interface InternalRunOptions extends RunOptions {
  depth?: number;
  taskId?: string;
  globals?: Record<string, unknown>;
  /** Restrict the program to these tool paths. */
  allowTools?: (path: string, tool: Tool) => boolean;
  /** The session lives for this run only (a task's own): never read from or written to disk, dropped after. */
  ephemeralSession?: boolean;
  /** Where the run's span goes (a task's run span, the ptc_run_code call's); default the runtime's tracer under the active context. */
  trace?: TraceScope;
  /** Sees the program's text() output as it is flushed during the run (ptc_run_code's progress). */
  onOutput?: (chunks: readonly string[]) => void;
}

const DEFAULT_SESSION = "default";

export class Codemode {
  private closed = false;
  private readonly hostTools: Tool[] = [];
  private readonly runtimeTools: Tool[] = [];
  private toolPaths = new Map<string, Tool>();
  /** The tools a task's run may call (its agent's allow-list), while it runs: what tool_info and tool_search show it. */
  private readonly taskFilters = new Map<string, (path: string, tool: Tool) => boolean>();

  /** @internal use createCodemode() */
  constructor(
    private readonly engine: SandboxEngine,
    private readonly limits: Limits,
    private readonly options: CodemodeOptions,
    /** Where run output past the budget is spilled: `<dataDir>/spill`, or a private temp dir removed on close. */
    private readonly spill: string | PrivateTempDir,
    /** The background subagents this runtime hosts (what `ptc_*` tools act on). */
    readonly tasks: TaskHost,
    private readonly sessions: SessionStores,
  ) {}

  private get spillDir(): string {
    return typeof this.spill === "string" ? this.spill : this.spill.path;
  }

  /** @internal */
  addTools(tools: readonly Tool[], kind: "host" | "runtime"): void {
    (kind === "host" ? this.hostTools : this.runtimeTools).push(...tools);
    const paths = new Map<string, Tool>();
    for (const tool of this.toolList()) {
      if (tool.name === RUN_CODE_TOOL) continue; // a program does not start programs; it spawns subagents
      const path = toolPath(tool);
      const clash = paths.get(path);
      if (clash) throw new TypeError(`options.tools: two tools are reached as tools.${path} ("${clash.id}" and "${tool.id}"); rename one`);
      paths.set(path, tool);
    }
    this.toolPaths = paths;
  }

  /** @internal every tool a model can call, the runtime's own first. */
  toolList(): Tool[] {
    return [...this.runtimeTools, ...this.hostTools];
  }

  /** @internal the tools a call can see: all of them, or for a task's run what its agent allows. */
  visibleTools(ctx: { taskId?: string }): Tool[] {
    const filter = ctx.taskId === undefined ? undefined : this.taskFilters.get(ctx.taskId);
    return filter ? this.toolList().filter((tool) => tool.name !== RUN_CODE_TOOL && filter(toolPath(tool), tool)) : this.toolList();
  }

  /** Descriptors of every tool a model can call, the runtime's own included. */
  get tools(): ToolDescriptor[] {
    return this.toolList().map(describeTool);
  }

  async run(code: string, options: RunOptions = {}): Promise<RunResult> {
    return this.runInternal(code, checkRunOptions(options, "options"));
  }

  /** @internal the same as run(), for the runtime's own callers (script agents, ptc_run_code). */
  async runInternal(code: string, options: InternalRunOptions): Promise<RunResult> {
    this.assertOpen();
    if (typeof code !== "string") throw new TypeError(`code must be a string of JavaScript, got ${describe(code)}`);
    const limits = mergeLimits(this.limits, options.limits ?? {}, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
    const session = options.session ?? DEFAULT_SESSION;
    const store = options.ephemeralSession ? new Map<string, string>() : this.sessions.get(session);
    let tools: ReadonlyMap<string, Tool> = this.toolPaths;
    if (options.allowTools) {
      const allowed = new Map<string, Tool>();
      for (const [path, tool] of this.toolPaths) if (options.allowTools(path, tool)) allowed.set(path, tool);
      tools = allowed;
    }
    let stored = false;
    const runId = randomUUID();
    const parentTrace = options.trace ?? traceScope(this.options.tracer);
    const traced = parentTrace && RunTrace.start(parentTrace, { runId, session, depth: options.depth ?? 0, ...(options.taskId !== undefined ? { taskId: options.taskId } : {}) });
    // What the program spawns in the background is recorded under its run, for ptc_task_wait's default.
    this.tasks.beginRun(runId);
    const filtered = options.allowTools !== undefined && options.taskId !== undefined;
    if (filtered) this.taskFilters.set(options.taskId!, options.allowTools!);
    const result = await executeRun(
      {
        engine: this.engine,
        tools,
        hooks: this.options.hooks,
        development: this.options.development ?? false,
        spillDir: this.spillDir,
        store,
        onStored: () => {
          stored = true;
        },
        ...(traced ? { trace: traced.scope } : {}),
        ...(options.onOutput ? { onOutput: options.onOutput } : {}),
        ...(this.options.unavailableTools ? { unavailable: this.options.unavailableTools as Record<string, string> } : {}),
      },
      {
        runId,
        code,
        limits,
        session,
        signal: options.signal,
        resultView: options.resultView,
        depth: options.depth ?? 0,
        taskId: options.taskId,
        globals: options.globals ?? {},
      },
    ).catch((error: unknown) => {
      traced?.fail(error);
      throw error;
    }).finally(() => {
      this.tasks.endRun(runId);
      if (filtered) this.taskFilters.delete(options.taskId!);
    });
    if (stored && !options.ephemeralSession) {
      // The program ran and its calls took effect: a failed save is reported, not thrown.
      try {
        await this.sessions.save(session);
      } catch (error) {
        result.details.warnings.push(`the session "${session}" could not be saved: ${(error as Error).message}`);
      }
    }
    traced?.end(result);
    return result;
  }

  /**
   * Call a tool directly, as a model would, and get its three channels. Failures are `isError`
   * results. `progress` hears what the tool reports while it runs (`ctx.progress`).
   */
  async callTool(name: string, input: unknown = {}, options: { signal?: AbortSignal; progress?: (message: string) => void } = {}): Promise<ToolCallResult> {
    this.assertOpen();
    if (typeof name !== "string") throw new TypeError(`name must be a tool name string, got ${describe(name)}`);
    if (options.progress !== undefined && typeof options.progress !== "function") throw new TypeError(`options.progress must be a function (message: string) => void, got ${describe(options.progress)}`);
    const tool = this.toolList().find((candidate) => candidate.id === name || candidate.name === name);
    // Content over the budget is cut like run output: head and tail, and the whole text in a spill file.
    const boundOutput = spillingBound(this.spillDir, this.limits.maxSpillBytes);
    if (!tool) {
      return errorResult(new ToolError("tool_not_found", `no tool named "${name}"; available: ${this.toolList().map((t) => t.id).join(", ")}`), { outputBudget: this.limits.outputBudget, boundOutput });
    }
    try {
      const signal = options.signal ?? new AbortController().signal;
      const result = await invokeTool(tool, input, {
        ctx: { signal, callId: `direct:${Date.now().toString(36)}`, runId: "direct", depth: 0, ...(options.progress ? { progress: options.progress } : {}) },
        hooks: this.options.hooks,
        outputBudget: this.limits.outputBudget,
        boundOutput,
        development: this.options.development ?? false,
        trace: traceScope(this.options.tracer),
      });
      // A program that failed is an error result for the model, though the tool itself worked.
      if (tool.name === RUN_CODE_TOOL && (result.structuredContent as { status?: string } | undefined)?.status === "error") result.isError = true;
      return result;
    } catch (error) {
      return errorResult(error, { outputBudget: this.limits.outputBudget, boundOutput });
    }
  }

  /**
   * TypeScript declarations of the `tools` namespace a program sees, for a model's prompt (within
   * the `prompt` budget unless `budgetBytes` says otherwise; Infinity for all of them). Order of
   * precedence for the budget: tool_search and tool_info (small, and how every other tool's types
   * are found), then the host's tools (what this runtime was set up for), then the runtime's
   * others (described by the binding contract, and listed to an MCP client directly).
   */
  declarations(options: { budgetBytes?: number } = {}): string {
    const reachable = [...this.toolPaths.values()];
    const host = new Set(this.hostTools);
    const finders = reachable.filter((tool) => !host.has(tool) && (tool.name === TOOL_SEARCH_TOOL || tool.name === "tool_info"));
    const ordered = [...finders, ...reachable.filter((tool) => host.has(tool)), ...reachable.filter((tool) => !host.has(tool) && !finders.includes(tool))];
    return renderDeclarations(ordered, { budgetBytes: options.budgetBytes ?? this.budgets.prompt });
  }

  /** @internal the declarations budgets in force. */
  get budgets(): { prompt: number; search: number } {
    const given = this.options.declarations ?? {};
    return { prompt: given.prompt ?? DEFAULT_DECLARATIONS_BUDGETS.prompt, search: given.search ?? DEFAULT_DECLARATIONS_BUDGETS.search };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Tasks first: stopping them may still need the engine for their last words.
    try {
      await this.tasks.close();
    } finally {
      await this.engine.close();
      this.tasks.store.close();
      if (typeof this.spill !== "string") this.spill.remove();
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("this codemode instance is closed; create a new one with createCodemode()");
  }
}

export function toolPath(tool: Tool): string {
  return tool.namespace ? `${toIdentifier(tool.namespace)}.${toIdentifier(tool.name)}` : toIdentifier(tool.name);
}

export async function createCodemode(options: CodemodeOptions = {}): Promise<Codemode> {
  if (options === null || typeof options !== "object") throw new TypeError(`options must be an object, got ${describe(options)}`);
  const limits = mergeLimits(checkLimits(options.limits, "options.limits"));
  if (options.tools !== undefined && !Array.isArray(options.tools)) throw new TypeError(`options.tools must be an array of tools, got ${describe(options.tools)}`);
  const tools = (options.tools ?? []).map((tool, index) => {
    try {
      return toTool(tool);
    } catch (error) {
      throw new TypeError(`options.tools[${index}]: ${(error as Error).message}`);
    }
  });
  for (const key of ["dataDir", "cwd"] as const) {
    if (options[key] !== undefined && (typeof options[key] !== "string" || options[key] === "")) {
      throw new TypeError(`options.${key} must be a non-empty path string, got ${describe(options[key])}`);
    }
  }
  if (options.hooks !== undefined) {
    if (options.hooks === null || typeof options.hooks !== "object") throw new TypeError(`options.hooks must be an object of hook functions, got ${describe(options.hooks)}`);
    for (const [key, hook] of Object.entries(options.hooks)) {
      if (!["preCall", "postCall", "postError"].includes(key)) throw new TypeError(`options.hooks.${key} is not a hook; known hooks: preCall, postCall, postError`);
      if (hook !== undefined && typeof hook !== "function") throw new TypeError(`options.hooks.${key} must be a function, got ${describe(hook)}`);
    }
  }
  if (options.development !== undefined && typeof options.development !== "boolean") throw new TypeError(`options.development must be a boolean, got ${describe(options.development)}`);
  if (options.tracer !== undefined && !isTracer(options.tracer)) {
    throw new TypeError(`options.tracer must be an OpenTelemetry Tracer (e.g. trace.getTracer("my-app") from @opentelemetry/api), got ${describe(options.tracer)}`);
  }
  checkDeclarationBudgets(options.declarations);
  const unavailable = options.unavailableTools;
  if (unavailable !== undefined && (unavailable === null || typeof unavailable !== "object" || Array.isArray(unavailable) || Object.values(unavailable).some((why) => typeof why !== "string"))) {
    throw new TypeError(`options.unavailableTools must be an object { "<name>": "<why it is not bound>" }, got ${describe(unavailable)}`);
  }
  const workers = options.workers ?? {};
  for (const key of ["max", "min"] as const) {
    const value = workers[key];
    if (value !== undefined && (!Number.isInteger(value) || value < (key === "max" ? 1 : 0) || value > 256)) {
      throw new RangeError(`options.workers.${key} must be an integer from ${key === "max" ? 1 : 0} to 256, got ${describe(value)}`);
    }
  }
  if (options.agentDirs !== undefined && (!Array.isArray(options.agentDirs) || options.agentDirs.some((dir) => typeof dir !== "string"))) {
    throw new TypeError(`options.agentDirs must be an array of directory paths, got ${describe(options.agentDirs)}`);
  }
  if (options.agents !== undefined && !Array.isArray(options.agents)) throw new TypeError(`options.agents must be an array of agent definitions, got ${describe(options.agents)}`);
  if (options.readOnlyTools !== undefined && (!Array.isArray(options.readOnlyTools) || options.readOnlyTools.some((path) => typeof path !== "string"))) {
    throw new TypeError(`options.readOnlyTools must be an array of tool paths, got ${describe(options.readOnlyTools)}`);
  }
  const cwd = resolve(options.cwd ?? process.cwd());
  const dataDir = options.dataDir === undefined ? undefined : resolve(cwd, options.dataDir);
  const agents = new AgentRegistry({ agents: options.agents ? [...options.agents] : undefined, dirs: options.agentDirs ? [...options.agentDirs] : undefined, cwd });
  // The data dir is the runtime's own: a real directory of this user, 0700 (see safe-fs.ts).
  if (dataDir) ensurePrivateDir(dataDir);
  const spill = dataDir ? join(dataDir, "spill") : new PrivateTempDir("codemode-spill");
  // Workspace tools among the host's never reach the runtime's state nor write its agent files.
  keepRuntimeFilesOut(tools, { hide: dataDir ? [dataDir] : [], protect: agents.searched });

  // Script agents run programs on this very runtime; the runner exists once the runtime does.
  let runScript: ReturnType<typeof codemodeScriptRunner> | undefined;
  let childTools: ReturnType<typeof childToolProvider> | undefined;
  const store = createTaskStore({ dataDir });
  const tasks = new TaskHost({
    store,
    agents,
    cwd,
    dataDir,
    maxRunning: options.tasks?.maxRunning,
    maxQueued: options.tasks?.maxQueued,
    maxDepth: options.tasks?.maxDepth,
    killGraceMs: options.tasks?.killGraceMs,
    maxOutputBytes: options.tasks?.maxOutputBytes,
    maxLineBytes: options.tasks?.maxLineBytes,
    cwdRoots: options.tasks?.cwdRoots,
    tracer: options.tracer,
    scriptRunner: (code, runOptions) => runScript!(code, runOptions),
    childTools: { list: () => childTools!.list(), call: (name, args, ctx) => childTools!.call(name, args, ctx) },
  });
  for (const [key, min, max] of [["idleSessions", 0, 64], ["idleBytes", 0, 16 * 1024 * 1024 * 1024]] as const) {
    const value = workers[key];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < min || value > max)) {
      throw new RangeError(`options.workers.${key} must be an integer from ${min} to ${max}, got ${describe(value)}`);
    }
  }
  const engine = new SandboxEngine({
    maxWorkers: workers.max,
    minWorkers: workers.min,
    defaultMemoryBytes: limits.memoryBytes,
    ...(workers.idleSessions !== undefined ? { idleSessions: workers.idleSessions } : {}),
    ...(workers.idleBytes !== undefined ? { idleBytes: workers.idleBytes } : {}),
  });
  try {
    await engine.start();
  } catch (error) {
    await tasks.close();
    store.close();
    throw error;
  }
  const cm = new Codemode(engine, limits, options, spill, tasks, new SessionStores(dataDir ? join(dataDir, "sessions") : undefined));
  try {
    const workflow = ptcWorkflowTool({ host: tasks, tools: () => cm.toolList(), hooks: options.hooks, development: options.development ?? false, limits });
    const searchable = (ctx: { taskId?: string }) => cm.visibleTools(ctx).filter((tool) => tool.name !== RUN_CODE_TOOL);
    cm.addTools([...ptcTools(tasks), workflow, toolInfoTool((ctx) => cm.visibleTools(ctx)), toolSearchTool(searchable, { declarationsBudget: cm.budgets.search })], "runtime");
    cm.addTools(tools, "host");
    // Last, so its description can carry the declarations of every tool a program can reach.
    cm.addTools([runCodeTool(cm, cm.declarations())], "runtime");
  } catch (error) {
    // A bad tool set must not leave a warm worker or an open task database behind.
    await cm.close();
    throw error;
  }
  const readOnlyTools = options.readOnlyTools ? [...WORKSPACE_READ_ONLY_TOOLS, ...options.readOnlyTools] : undefined;
  runScript = codemodeScriptRunner(cm, readOnlyTools ? { readOnlyTools } : {});
  childTools = childToolProvider(cm.toolList().filter((tool) => tool.name !== RUN_CODE_TOOL), {
    hooks: options.hooks,
    boundOutput: spillingBound(typeof spill === "string" ? spill : spill.path, limits.maxSpillBytes),
    ...(readOnlyTools ? { readOnlyTools } : {}),
  });
  return cm;
}

function checkDeclarationBudgets(value: CodemodeOptions["declarations"]): void {
  if (value === undefined) return;
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new TypeError(`options.declarations must be an object { prompt?, search? } of byte budgets, got ${describe(value)}`);
  for (const [key, bytes] of Object.entries(value)) {
    if (key !== "prompt" && key !== "search") throw new TypeError(`options.declarations.${key} is not a declarations budget; known: prompt, search`);
    if (bytes !== undefined && bytes !== Infinity && (!Number.isInteger(bytes) || bytes < MIN_DECLARATIONS_BUDGET)) {
      throw new RangeError(`options.declarations.${key} must be an integer number of bytes ≥ ${MIN_DECLARATIONS_BUDGET} (or Infinity), got ${describe(bytes)}`);
    }
  }
}

function checkRunOptions(options: RunOptions, where: string): InternalRunOptions {
  if (options === null || typeof options !== "object") throw new TypeError(`${where} must be an object, got ${describe(options)}`);
  const known = new Set(["timeoutMs", "signal", "session", "resultView", "limits"]);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw new TypeError(`${where}.${key} is not a run option; known: ${[...known].join(", ")}`);
  }
  if (options.timeoutMs !== undefined) checkLimits({ timeoutMs: options.timeoutMs }, where);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new TypeError(`${where}.signal must be an AbortSignal, got ${describe(options.signal)}`);
  if (options.session !== undefined && (typeof options.session !== "string" || !SESSION_NAME.test(options.session))) {
    throw new TypeError(`${where}.session must be 1–200 characters of letters, digits, "_", ".", ":", "@" or "-", got ${describe(options.session)}`);
  }
  if (options.resultView !== undefined && options.resultView !== "compact" && options.resultView !== "full") {
    throw new TypeError(`${where}.resultView must be "compact" or "full", got ${describe(options.resultView)}`);
  }
  return { ...options, limits: checkLimits(options.limits, `${where}.limits`) };
}
