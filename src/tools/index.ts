/** The tool contract (docs/tool-contract.md): definitions, invocation, channels, descriptors, declarations. */
export { defineTool, toTool, isTool, pickAnnotations, hasApprovalPolicy } from "./define.js";
export type { Tool, ViewsToolDefinition, OutputToolDefinition, TextToolDefinition, PlainToolDefinition } from "./define.js";
export { invokeTool, invokeToolForProgram, prepareCalls, projectViews, assertToolViews } from "./invoke.js";
export type { InvokeOptions, CallerOptions, PerCall, ToolCaller, GuestResult, BinaryWanted, ApprovalGate, ApprovalRequest, ApprovalAnswer } from "./invoke.js";
export { errorResult, guestValue, toolResult, asToolResult } from "./result.js";
export { ToolError, isToolError, toolRejection, messageOf, GUEST_MESSAGE_LIMIT } from "./errors.js";
export type { ToolErrorCode, ToolRejection } from "./errors.js";
export { describeTool } from "./describe.js";
export { toolInfoTool, findTool } from "./tool-info.js";
export { approvalDigest, canonicalJson, digestOf } from "./canonical.js";
export { assertViewSubset } from "./subset.js";
export { renderDeclarations, DEFAULT_DECLARATIONS_BUDGET } from "./declarations.js";
export { toIdentifier, closestNames, isCloseName } from "./identifiers.js";
export { boundText, cutToBudget, pinnedText, isPinnedText, spillNote, DEFAULT_OUTPUT_BUDGET, type BoundOutput, type BoundText, type PinnedText } from "./budget.js";
export { RESULT_VIEWS } from "./types.js";
export { resolveSchemaPath, classifyViewPath, topLevelKeys, keysAt, formatSegments, type PathSegment, type PathResolution, type ViewPathVerdict } from "./view-paths.js";
export type {
  ToolContext,
  TextContent,
  ToolCallResult,
  ResultView,
  ToolResult,
  ToolRef,
  ToolHooks,
  ApproveEvent,
  ApproveDecision,
  ApprovalPolicy,
  PreCallEvent,
  PreCallDecision,
  PostCallEvent,
  PostCallDecision,
  PostErrorEvent,
  ToolDescriptor,
  ToolDescriptorView,
  ToolAnnotations,
} from "./types.js";
export { toolSearchTool, TOOL_SEARCH_TOOL, type ToolSearchOptions } from "./tool-search.js";
