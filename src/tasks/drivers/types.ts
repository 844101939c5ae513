import type { AgentDefinition, DriverEvent } from "../agents.js";
import type { TaskRecord } from "../types.js";

/** What a child may call: the host's tools, as offered to script and openai children. */
export interface ChildToolDescriptor {
  name: string;
  description: string;
  /** JSON Schema of the input. */
  parameters: Record<string, unknown>;
  /** Read-only agents only ever see tools marked read-only. */
  readOnly: boolean;
}

export interface ChildToolProvider {
  list(): ChildToolDescriptor[];
  /** Calls a tool for a child task; resolves to the text a model should read. */
  call(name: string, args: unknown, ctx: { signal: AbortSignal; depth: number; taskId: string }): Promise<string>;
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
  childTools?: ChildToolProvider;
}

export interface DriverResult {
  exitCode: number;
  error?: string;
}

export type Driver = (ctx: DriverContext) => Promise<DriverResult>;

export { messageOf as errorMessage } from "../../text.js";
