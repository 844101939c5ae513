// The library's public surface.
export { createCodemode, Codemode, DEFAULT_DECLARATIONS_BUDGETS, type CodemodeOptions, type RunOptions, type ResumeOptions } from "./codemode/codemode.js";
export { ContinuationError, type ContinuationReason, type PendingApproval } from "./codemode/continuation.js";
export type { ApprovalAnswerInput, RememberedApproval } from "./codemode/approvals.js";
export { DEFAULT_LIMITS, type Limits } from "./codemode/limits.js";
export type { RunResult, RunStructuredContent, RunDetails, CallRecord } from "./codemode/run-result.js";
export { BINDING_CONTRACT } from "./codemode/run-code-tool.js";
export * from "./tools/index.js";
export { z } from "zod";
export { workspaceTools, WORKSPACE_READ_ONLY_TOOLS } from "./workspace/index.js";
export { TaskHost, AgentRegistry, defineAgent, TaskError, type AgentDefinition, type AgentInput, type TaskRecord, type TaskStatus } from "./tasks/index.js";
export {
  validateWorkflow,
  parseWorkflow,
  runWorkflow,
  ptcWorkflowTool,
  formatProblems,
  type WorkflowProblem,
  type WorkflowValidation,
  type WorkflowCatalog,
  type WorkflowPlan,
  type NodeLine,
  type WorkflowOutcome,
} from "./workflow/index.js";
