/** Workflows (docs/workflows.md): declarative graphs of tool and agent nodes, validated against result views before they run. */
export { parseWorkflow, MAX_WORKFLOW_BYTES, MAX_NODES, MAX_EDGES, RUN_AGENT, type WorkflowDefinition, type WorkflowProblem, type InputSpec, type NodeSpec, type EdgeSpec } from "./definition.js";
export { parseTemplate, renderTemplate, TemplateError, type ParsedTemplate, type Reference, type TemplatePart } from "./template.js";
export { validateWorkflow, type WorkflowCatalog, type WorkflowValidation, type WorkflowPlan, type PlannedNode, type ContractEntry, type ValidateOptions } from "./validate.js";
export { runWorkflow, type NodeLine, type NodeStatus, type WorkflowOutcome, type WorkflowRunEnvironment } from "./run.js";
export { formatProblem, formatProblems } from "./report.js";
export { ptcWorkflowTool, WORKFLOW_TOOL, WORKFLOW_AGENT, type WorkflowToolOptions } from "./tool.js";
