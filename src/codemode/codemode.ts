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
import { AgentRegistry, createTaskStore, TaskHost, type AgentDefinition, type AgentInput, type TaskStore, type WorkerInfo } from "../tasks/index.js";
import { queueNameProblem, redisUrlProblem } from "../tasks/redis/connection.js";
import type { RemoteQueue } from "../tasks/remote.js";
import { ensurePrivateDir, PrivateTempDir } from "../safe-fs.js";
import { keepRuntimeFilesOut } from "../workspace/index.js";
import { childToolProvider, codemodeScriptRunner, ptcTools } from "../ptc/index.js";
import { WORKSPACE_READ_ONLY_TOOLS } from "../workspace/index.js";
import { ptcWorkflowTool } from "../workflow/index.js";
import { checkLimits, mergeLimits, type Limits } from "./limits.js";
import { describeReceived as describe } from "../text.js";
import { executeRun, type ApprovalAsker, type Resumption, type RunApprovals } from "./run.js";
import { checkAnswers, RememberedApprovals, type ApprovalAnswerInput, type RememberedApproval } from "./approvals.js";
import { codeDigest, ContinuationError, ContinuationVault, type PendingApproval } from "./continuation.js";
import type { ApprovalGate } from "../tools/index.js";
import { declarationsOf } from "../tools/declarations.js";
import { SESSION_NAME, SessionStores } from "./sessions.js";
import { addLateWarning, type RunResult } from "./run-result.js";
import { runCodeTool } from "./run-code-tool.js";
import { ToolSet, toolMapFacts, type ToolFilter, type ToolKind } from "./tool-set.js";
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
  tasks?: {
    maxRunning?: number;
    maxQueued?: number;
    maxDepth?: number;
    killGraceMs?: number;
    maxOutputBytes?: number;
    maxLineBytes?: number;
    cwdRoots?: readonly string[];
    /**
     * A Redis server (`redis://[user:password@]host:port[/db]`; a password may instead come from
     * CODEMODE_REDIS_PASSWORD): task records and logs live there, and script, command and openai
     * tasks are queued for `codemode worker` processes (BullMQ). Absent: the embedded store.
     */
    redis?: string;
    /** The queue's name on that server (default "codemode-tasks"). */
    queue?: string;
    /** How long a worker may go silent before its tasks are lost (default 30000 ms). */
    lockMs?: number;
    /** This runtime is a queue worker (set by `codemode worker`): the tasks it claims name it. */
    worker?: WorkerInfo;
  };
  /**
   * Full paths of host tools that never change anything (default: the workspace's read-only
   * tools). Read-only agents reach only these; an upstream MCP tool counts only when listed here
   * (connectUpstreams' `readOnlyTools` lists those its servers declare read-only).
   */
  readOnlyTools?: readonly string[];
  limits?: Partial<Limits>;
  hooks?: ToolHooks;
  /**
   * Continuations of runs interrupted for an approval (docs/approvals.md): signed with `key` (≥ 32
   * bytes) and carrying the run's state, or, without a key, kept in the data dir (in memory
   * without one); usable once, for `ttlMs` (default 24 hours).
   */
  approvals?: { key?: string | Buffer; ttlMs?: number };
  /** Check every view projection against the compact ⊆ full rule at run time. */
  development?: boolean;
  /**
   * Records runs, tool calls and tasks as OpenTelemetry spans (docs/tracing.md). Default: the
   * global provider's tracer; with no provider registered nothing is recorded, at no cost.
   */
  tracer?: Tracer;
  /** Sandbox worker threads: at most `max` runs at once (default 16), `min` kept warm (default 2, or 1 on a one-core machine). */
  workers?: {
    max?: number;
    min?: number;
    /** Warm session instances each worker keeps between runs (default 8). */
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
  /**
   * Asks a person about calls that need approval while the program waits (a terminal, an MCP
   * client's elicitation): answers by approval_id; undefined (or no answer for a call) interrupts
   * the run instead, with a continuation.
   */
  askApproval?: (pending: PendingApproval[], signal: AbortSignal) => Promise<Record<string, ApprovalAnswerInput> | undefined>;
}

export interface ResumeOptions {
  /** The person's answers, by approval_id: "allow", "deny", or { decision, remember: true } to remember it for the session. */
  approvals?: Record<string, ApprovalAnswerInput>;
  /** The program, if the caller sends it again: it must be the one that was interrupted. */
  code?: string;
  signal?: AbortSignal;
  askApproval?: RunOptions["askApproval"];
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
  /** A resumed run: the state it continues and the answers. */
  resume?: Resumption;
  /** How an interrupted result tells its reader to resume (default: the library call). */
  resumeHint?: RunApprovals["resumeHint"];
}

/** The gate of a direct call: the person is asked when it needs them; no answer refuses it (nothing can be resumed). */
function directApproval(ask: NonNullable<RunOptions["askApproval"]>, signal: AbortSignal): ApprovalGate {
  return async (request) => {
    if (!request.required) return "allow";
    const id = "call_1";
    const answers = await ask([{ approval_id: id, tool: request.tool.id, input: request.input, digest: request.digest }], signal).catch(() => undefined);
    const answer = answers?.[id];
    const decision = typeof answer === "string" ? answer : answer?.decision;
    if (decision === "allow") return "allow";
    if (decision === "deny") return { deny: `tool "${request.tool.id}" call denied: the person asked to approve it said no; the tool did not run` };
    return { deny: `tool "${request.tool.id}" needs a person's approval before it runs, and nobody answered; the tool did not run`, reason: "approval_required" };
  };
}

/** The library's way to resume, as an interrupted run's content states it. */
function libraryResumeHint(_continuation: string, pending: readonly PendingApproval[]): string {
  return `cm.resume(result.structuredContent.continuation, { approvals: { ${pending.map((p) => `${JSON.stringify(p.approval_id)}: "allow"`).join(", ")} } })`;
}

const DEFAULT_SESSION = "default";

export class Codemode {
  private closed = false;
  private readonly toolSet = new ToolSet();
  /** The tools a task's run may call (its agent's allow-list), while it runs: what tool_info and tool_search show it. */
  private readonly taskFilters = new Map<string, ToolFilter>();

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
    private readonly remembered: RememberedApprovals,
    private readonly vault: ContinuationVault,
  ) {}

  /** Approvals remembered per session (by approval digest): list them, revoke them. */
  get approvals(): { list(filter?: { session?: string }): RememberedApproval[]; revoke(filter: { session?: string; digest?: string }): number } {
    return { list: (filter) => this.remembered.list(filter), revoke: (filter) => this.remembered.revoke(filter) };
  }

  /**
   * Continue a run that stopped for approvals (docs/approvals.md): the program runs again from
   * the start, its completed calls answered from the run's ledger, the answered calls allowed
   * or denied. Rejects with a ContinuationError (code "continuation_invalid") for an unknown,
   * tampered, expired or used continuation, a changed program, or a replay that diverged.
   */
  async resume(continuation: string, options: ResumeOptions = {}): Promise<RunResult> {
    this.assertOpen();
    if (options === null || typeof options !== "object") throw new TypeError(`options must be an object { approvals?, code?, signal?, askApproval? }, got ${describe(options)}`);
    for (const key of Object.keys(options))
      if (!["approvals", "code", "signal", "askApproval"].includes(key)) throw new TypeError(`options.${key} is not a resume option; known: approvals, code, signal, askApproval`);
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new TypeError(`options.signal must be an AbortSignal, got ${describe(options.signal)}`);
    if (options.askApproval !== undefined && typeof options.askApproval !== "function") throw new TypeError(`options.askApproval must be a function, got ${describe(options.askApproval)}`);
    return this.resumeInternal(continuation, options, {});
  }

  /** @internal resume() for ptc_run_code, with its own hint and progress. */
  async resumeInternal(
    continuation: string,
    options: ResumeOptions & { session?: string },
    internal: Pick<InternalRunOptions, "resumeHint" | "onOutput" | "depth" | "taskId" | "trace">,
  ): Promise<RunResult> {
    const state = this.vault.peek(continuation);
    if (options.code !== undefined && codeDigest(options.code) !== state.code_digest) {
      throw new ContinuationError(
        "program_changed",
        "the program is not the one that was interrupted: a resumed run replays the same program (send it unchanged, or leave code out); a changed program must be run anew",
      );
    }
    if (options.session !== undefined && options.session !== state.session) {
      throw new ContinuationError("session_mismatch", `this continuation belongs to session "${state.session}", not "${options.session}"; leave session out when resuming`);
    }
    const answers = checkAnswers(options.approvals, "approvals");
    for (const id of answers.keys()) {
      if (!state.pending.some((p) => p.approval_id === id)) {
        throw new TypeError(`approvals["${id}"]: no call of this run waits for that approval; waiting: ${state.pending.map((p) => JSON.stringify(p.approval_id)).join(", ")}`);
      }
    }
    this.vault.claim(state);
    return this.runInternal(state.code, {
      session: state.session,
      limits: state.options.limits,
      ...(state.options.resultView ? { resultView: state.options.resultView } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.askApproval ? { askApproval: options.askApproval } : {}),
      ...internal,
      resume: { state, answers },
    });
  }

  private get spillDir(): string {
    return typeof this.spill === "string" ? this.spill : this.spill.path;
  }

  /** @internal see ToolSet.add. */
  addTools(tools: readonly Tool[], kind: ToolKind): void {
    this.toolSet.add(tools, kind);
  }

  /** @internal every tool a model can call, the runtime's own first. */
  toolList(): Tool[] {
    return this.toolSet.all();
  }

  /** @internal the tools a program reaches (never an entry point such as ptc_run_code); for a task's run, those its agent allows. */
  programTools(ctx: { taskId?: string } = {}): Tool[] {
    return [...this.toolSet.allowed(this.taskFilter(ctx)).values()];
  }

  /** @internal the tools a call can see: all of them, or for a task's run what its agent allows. */
  visibleTools(ctx: { taskId?: string }): Tool[] {
    return this.toolSet.visible(this.taskFilter(ctx));
  }

  private taskFilter(ctx: { taskId?: string }): ToolFilter | undefined {
    return ctx.taskId === undefined ? undefined : this.taskFilters.get(ctx.taskId);
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
    // Its worker wakes while this layer sets the run up.
    this.engine.nudge(session);
    const sessionStore = options.ephemeralSession ? new Map<string, string>() : this.sessions.get(session);
    const tools = this.toolSet.allowed(options.allowTools);
    let stored = false;
    // Only a top-level program can stop for a person; a task's run refuses such calls (tools/invoke.ts).
    const topLevel = (options.depth ?? 0) === 0 && options.taskId === undefined;
    const gated = topLevel && (this.options.hooks?.approve !== undefined || toolMapFacts(tools).approvalPolicy);
    const approvals: RunApprovals | undefined = gated
      ? { remembered: this.remembered, vault: this.vault, resumeHint: options.resumeHint ?? libraryResumeHint, ...(options.askApproval ? { ask: options.askApproval as ApprovalAsker } : {}) }
      : undefined;
    // A run that may stop for an approval writes to a copy: an interrupted run leaves the session
    // as it found it, so its resume (which stores the same values again) replays from the same state.
    const before = approvals ? new Map(sessionStore) : undefined;
    const store = before ? new Map(before) : sessionStore;
    const runId = randomUUID();
    const parentTrace = options.trace ?? traceScope(this.options.tracer);
    const traced = parentTrace && RunTrace.start(parentTrace, { runId, session, depth: options.depth ?? 0, ...(options.taskId !== undefined ? { taskId: options.taskId } : {}) });
    // What the program spawns in the background is recorded under its run, for ptc_task_wait's default.
    this.tasks.beginRun(runId);
    const filtered = options.allowTools !== undefined && options.taskId !== undefined;
    if (filtered) this.taskFilters.set(options.taskId!, options.allowTools!);
    let result: RunResult;
    try {
      result = await executeRun(
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
          ...(approvals ? { approvals } : {}),
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
          ...(options.resume ? { resume: options.resume } : {}),
        },
      );
    } catch (error) {
      traced?.fail(error);
      throw error;
    } finally {
      this.tasks.endRun(runId);
      if (filtered) this.taskFilters.delete(options.taskId!);
    }
    if (before && stored) {
      if (result.structuredContent.status === "interrupted") stored = false;
      else
        for (const key of new Set([...before.keys(), ...store.keys()])) {
          const json = store.get(key);
          if (json === before.get(key)) continue;
          if (json === undefined) sessionStore.delete(key);
          else sessionStore.set(key, json);
        }
    }
    if (stored && !options.ephemeralSession) {
      // The program ran and its calls took effect: a failed save is reported, not thrown.
      try {
        await this.sessions.save(session);
      } catch (error) {
        // The content is already rendered: the model must still read that its values are gone.
        addLateWarning(result, `the session "${session}" could not be saved, so what this run stored is not kept for the next run: ${(error as Error).message}`);
      }
    }
    traced?.end(result);
    return result;
  }

  /**
   * Call a tool directly, as a model would, and get its three channels. Failures are `isError`
   * results. `progress` hears what the tool reports while it runs (`ctx.progress`).
   */
  async callTool(name: string, input: unknown = {}, options: { signal?: AbortSignal; progress?: (message: string) => void; askApproval?: RunOptions["askApproval"] } = {}): Promise<ToolCallResult> {
    this.assertOpen();
    if (typeof name !== "string") throw new TypeError(`name must be a tool name string, got ${describe(name)}`);
    if (options.progress !== undefined && typeof options.progress !== "function")
      throw new TypeError(`options.progress must be a function (message: string) => void, got ${describe(options.progress)}`);
    const tool = this.toolSet.find(name);
    // Content over the budget is cut like run output: head and tail, and the whole text in a spill file.
    const boundOutput = spillingBound(this.spillDir, this.limits.maxSpillBytes);
    if (!tool) {
      return errorResult(
        new ToolError(
          "tool_not_found",
          `no tool named "${name}"; available: ${this.toolList()
            .map((t) => t.id)
            .join(", ")}`,
        ),
        { outputBudget: this.limits.outputBudget, boundOutput },
      );
    }
    try {
      const signal = options.signal ?? new AbortController().signal;
      const result = await invokeTool(tool, input, {
        ctx: {
          signal,
          callId: `direct:${Date.now().toString(36)}`,
          runId: "direct",
          depth: 0,
          ...(options.progress ? { progress: options.progress } : {}),
          ...(options.askApproval ? { askApproval: options.askApproval } : {}),
        },
        hooks: this.options.hooks,
        outputBudget: this.limits.outputBudget,
        boundOutput,
        development: this.options.development ?? false,
        // Called directly, a call that needs a person is asked when someone can be (an MCP client's elicitation).
        ...(options.askApproval ? { approval: directApproval(options.askApproval, signal) } : {}),
        trace: traceScope(this.options.tracer),
      });
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
    return this.declarationsLater(options)();
  }

  /**
   * @internal cm.declarations() of the tools there are now, checked now (it throws what that
   * throws) and rendered at the first call, once: what ptc_run_code's description carries.
   */
  declarationsLater(options: { budgetBytes?: number } = {}): () => string {
    const reachable = this.toolSet.programTools();
    const host = (tool: Tool): boolean => this.toolSet.isHost(tool);
    const finders = reachable.filter((tool) => !host(tool) && (tool.name === TOOL_SEARCH_TOOL || tool.name === "tool_info"));
    const ordered = [...finders, ...reachable.filter(host), ...reachable.filter((tool) => !host(tool) && !finders.includes(tool))];
    return declarationsOf(ordered, { budgetBytes: options.budgetBytes ?? this.budgets.prompt });
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
      if (!["approve", "preCall", "postCall", "postError"].includes(key)) throw new TypeError(`options.hooks.${key} is not a hook; known hooks: approve, preCall, postCall, postError`);
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
  if (options.approvals !== undefined) {
    if (options.approvals === null || typeof options.approvals !== "object") throw new TypeError(`options.approvals must be an object { key?, ttlMs? }, got ${describe(options.approvals)}`);
    for (const key of Object.keys(options.approvals)) if (key !== "key" && key !== "ttlMs") throw new TypeError(`options.approvals.${key} is not an approvals option; known: key, ttlMs`);
  }
  const vault = new ContinuationVault({ ...options.approvals, ...(dataDir ? { dir: join(dataDir, "continuations") } : {}) });
  const spill = dataDir ? join(dataDir, "spill") : new PrivateTempDir("codemode-spill");
  // Workspace tools among the host's never reach the runtime's state nor write its agent files.
  keepRuntimeFilesOut(tools, { hide: dataDir ? [dataDir] : [], protect: agents.searched });

  for (const [key, min, max] of [
    ["idleSessions", 0, 64],
    ["idleBytes", 0, 16 * 1024 * 1024 * 1024],
  ] as const) {
    const value = workers[key];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < min || value > max)) {
      throw new RangeError(`options.workers.${key} must be an integer from ${min} to ${max}, got ${describe(value)}`);
    }
  }
  // The sandbox worker first: its thread boots while the rest is set up (awaited below).
  const engine = new SandboxEngine({
    maxWorkers: workers.max,
    minWorkers: workers.min,
    defaultMemoryBytes: limits.memoryBytes,
    ...(workers.idleSessions !== undefined ? { idleSessions: workers.idleSessions } : {}),
    ...(workers.idleBytes !== undefined ? { idleBytes: workers.idleBytes } : {}),
  });
  const engineStarted = engine.start();
  let tasks: TaskHost;
  try {
    const { store, remote } = await openTaskBackend(options.tasks, dataDir);
    tasks = new TaskHost({
      store,
      ...(remote ? { remote } : {}),
      ...(options.tasks?.worker ? { worker: options.tasks.worker } : {}),
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
    });
  } catch (error) {
    await engine.close();
    throw error;
  }
  const cm = new Codemode(engine, limits, options, spill, tasks, new SessionStores(dataDir ? join(dataDir, "sessions") : undefined), new RememberedApprovals(dataDir), vault);
  try {
    const workflow = ptcWorkflowTool({ host: tasks, tools: () => cm.toolList(), hooks: options.hooks, development: options.development ?? false, limits });
    // A search finds what a program can call: never an entry point.
    cm.addTools([...ptcTools(tasks), workflow, toolInfoTool((ctx) => cm.visibleTools(ctx)), toolSearchTool((ctx) => cm.programTools(ctx), { declarationsBudget: cm.budgets.search })], "runtime");
    cm.addTools(tools, "host");
    // Last, so its description can carry the declarations of every tool a program can reach:
    // those tools are fixed and checked here; the text is rendered when the description is read.
    cm.addTools([runCodeTool(cm, cm.declarationsLater())], "entry");
    await engineStarted;
  } catch (error) {
    // A bad tool set (or a worker that failed to start) must not leave a warm worker or an open task database behind.
    await cm.close();
    throw error;
  }
  // The composition's last step: script agents run their programs on this very runtime, and
  // openai agents call its program tools, so the task host gets both once the runtime exists.
  const readOnlyTools = options.readOnlyTools ? [...WORKSPACE_READ_ONLY_TOOLS, ...options.readOnlyTools] : undefined;
  tasks.attach({
    scriptRunner: codemodeScriptRunner(cm, readOnlyTools ? { readOnlyTools } : {}),
    childTools: childToolProvider(cm.programTools(), {
      hooks: options.hooks,
      boundOutput: spillingBound(typeof spill === "string" ? spill : spill.path, limits.maxSpillBytes),
      ...(readOnlyTools ? { readOnlyTools } : {}),
    }),
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

const RUN_OPTIONS: ReadonlySet<string> = new Set(["timeoutMs", "signal", "session", "resultView", "limits", "askApproval"]);

function checkRunOptions(options: RunOptions, where: string): InternalRunOptions {
  if (options === null || typeof options !== "object") throw new TypeError(`${where} must be an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) {
    if (!RUN_OPTIONS.has(key)) throw new TypeError(`${where}.${key} is not a run option; known: ${[...RUN_OPTIONS].join(", ")}`);
  }
  if (options.timeoutMs !== undefined) checkLimits({ timeoutMs: options.timeoutMs }, where);
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new TypeError(`${where}.signal must be an AbortSignal, got ${describe(options.signal)}`);
  if (options.session !== undefined && (typeof options.session !== "string" || !SESSION_NAME.test(options.session))) {
    throw new TypeError(`${where}.session must be 1–200 characters of letters, digits, "_", ".", ":", "@" or "-", got ${describe(options.session)}`);
  }
  if (options.askApproval !== undefined && typeof options.askApproval !== "function")
    throw new TypeError(`${where}.askApproval must be a function (pending, signal) => Promise<answers | undefined>, got ${describe(options.askApproval)}`);
  if (options.resultView !== undefined && options.resultView !== "compact" && options.resultView !== "full") {
    throw new TypeError(`${where}.resultView must be "compact" or "full", got ${describe(options.resultView)}`);
  }
  // A copy, then the field: a spread followed by more fields takes V8's slow path (~1 µs a run).
  const checked: InternalRunOptions = { ...options };
  checked.limits = checkLimits(options.limits, `${where}.limits`);
  return checked;
}

/** The embedded store (SQLite in the data dir, else memory), or Redis and its queue when configured. */
async function openTaskBackend(tasks: CodemodeOptions["tasks"], dataDir: string | undefined): Promise<{ store: TaskStore; remote?: RemoteQueue }> {
  if (tasks?.redis === undefined) return { store: createTaskStore({ dataDir }) };
  const urlProblem = redisUrlProblem(tasks.redis);
  // The URL may hold a password: the message says what is wrong with it, never what it is.
  if (urlProblem) throw new TypeError(`options.tasks.redis ${urlProblem}`);
  if (tasks.queue !== undefined && queueNameProblem(tasks.queue)) throw new TypeError(`options.tasks.queue ${queueNameProblem(tasks.queue)}, got ${describe(tasks.queue)}`);
  if (tasks.lockMs !== undefined && (!Number.isSafeInteger(tasks.lockMs) || tasks.lockMs < 1000))
    throw new RangeError(`options.tasks.lockMs must be an integer of at least 1000 ms, got ${describe(tasks.lockMs)}`);
  // BullMQ, ioredis and the store's thread load only for a runtime that uses them.
  const [{ BullRemoteQueue }, { RedisTaskStore, redisTarget }] = await Promise.all([import("../tasks/redis/queue.js"), import("../tasks/redis/store.js")]);
  const target = redisTarget({ url: tasks.redis, ...(tasks.queue !== undefined ? { queue: tasks.queue } : {}), ...(tasks.lockMs !== undefined ? { lockMs: tasks.lockMs } : {}) });
  const store = new RedisTaskStore(target);
  // Connection trouble of the queue reaches the host's warnings, as the store's own does.
  return { store, remote: new BullRemoteQueue(target, (message) => store.warn(message)) };
}
