// What a driver is given and returns: the contract between the task host and its four drivers.
import type { AgentDefinition, DriverEvent } from "../agents.js";
import type { TaskProcessGroup, TaskRecord } from "../types.js";
import type { TraceScope } from "../../tracing.js";

/** A host tool as an openai child may call it (a script child reaches tools through its program's `tools`). */
export interface ChildToolDescriptor {
  /**
   * The tool's full path as programs reach it ("read_file", "github.create_issue"): what an
   * agent's `tools` list names. Never a bare name, so an upstream server's `read_file` is not
   * the workspace's.
   */
  path: string;
  /** The function name a model calls it by (letters, digits, "_" and "-": the path with "__" for "."). */
  name: string;
  description: string;
  /** JSON Schema of the input. */
  parameters: Record<string, unknown>;
  /** Read-only agents only ever see tools marked read-only. */
  readOnly: boolean;
}

export interface ChildToolProvider {
  list(): ChildToolDescriptor[];
  /** Calls a tool (by its path) for a child task; resolves to the text a model should read. */
  call(path: string, args: unknown, ctx: { signal: AbortSignal; depth: number; taskId: string; trace?: TraceScope }): Promise<string>;
}

export interface DriverContext {
  task: TaskRecord;
  agent: AgentDefinition;
  /** Aborted when the task is stopped. */
  signal: AbortSignal;
  emit: (event: DriverEvent) => void;
  /** How long a stopped child gets between SIGTERM and SIGKILL. */
  killGraceMs: number;
  cwd: string;
  /** Longest line a line protocol (jsonl, claude-stream-json) keeps. */
  maxLineBytes: number;
  /** A command driver reports the process group it started, for stops by a later host. */
  onProcess?: (group: TaskProcessGroup) => void;
  childTools?: ChildToolProvider;
  /** Where the driver's spans go (the task's run span): a script child's run, a command's TRACEPARENT. */
  trace?: TraceScope;
}

export interface DriverResult {
  exitCode: number;
  error?: string;
}

export type Driver = (ctx: DriverContext) => Promise<DriverResult>;
