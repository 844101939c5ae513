// The tasks module's public face: the task host, agents, drivers' types and the stores, and the
// factories that pick a store for a data dir (SQLite) or none (in memory). It imports no engine
// and no tool code: the runtime plugs a script runner and child tools in from outside.
import { MemoryTaskStore, type TaskStore } from "./store.js";
import { SqliteTaskStore } from "./sqlite-store.js";
import { invalidArgument } from "./errors.js";

export * from "./types.js";
export * from "./errors.js";
export { canTransition, assertTransition } from "./status.js";
export { currentOwner, isPidOwnerAlive, sameOwner } from "./owner.js";
export type { TaskStore, ListFilter, ListPage } from "./store.js";
export { MemoryTaskStore } from "./store.js";
export { SqliteTaskStore } from "./sqlite-store.js";
export {
  OUTPUT_TAIL_BYTES,
  OUTPUT_TAIL_LINES,
  PREVIEW_BYTES,
  SMALL_OUTPUT_BYTES,
  previewString,
  headPreview,
  type OutputPage,
} from "./output.js";
export {
  AgentRegistry,
  defineAgent,
  parseAgentFile,
  loadAgentDir,
  defaultAgentDirs,
  type AgentDefinition,
  type AgentInput,
  type AgentRegistryOptions,
  type CommandProtocol,
  type DriverEvent,
  type FunctionAgent,
  type Prices,
} from "./agents.js";
export { parseReport, extractPromptJsonReport, type ReportBody } from "./report.js";
export type { ScriptRunner } from "./drivers/script.js";
export type { ChildToolDescriptor, ChildToolProvider, Driver, DriverContext, DriverResult } from "./drivers/types.js";
export { buildArgv } from "./drivers/command.js";
export { ClaudeStreamAdapter } from "./drivers/claude-stream.js";
export { jsonlLineToEvents } from "./drivers/jsonl.js";
export { allowedChildTools } from "./drivers/openai.js";
export {
  TaskHost,
  DEFAULT_LIST_LIMIT,
  MAX_LIST_LIMIT,
  type TaskHostOptions,
  type SpawnRequest,
  type SpawnContext,
  type StopResult,
  type ListOptions,
} from "./host.js";

export function memoryTaskStore(): TaskStore {
  return new MemoryTaskStore();
}

/** A store that survives the host: `<dataDir>/tasks.db` and `<dataDir>/tasks/<id>.log`. */
export function sqliteTaskStore(dataDir: string): TaskStore {
  return new SqliteTaskStore(dataDir);
}

/** A persistent store when a data dir is given, else an in-memory one. */
export function createTaskStore(options: { dataDir?: string } = {}): TaskStore {
  if (options === null || typeof options !== "object") throw invalidArgument("options", "an object { dataDir? }", options);
  if (options.dataDir === undefined) return new MemoryTaskStore();
  if (typeof options.dataDir !== "string" || options.dataDir.length === 0) throw invalidArgument("dataDir", "a non-empty directory path", options.dataDir);
  return new SqliteTaskStore(options.dataDir);
}
