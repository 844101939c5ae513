// The library's public surface.
export { createCodemode, Codemode, type CodemodeOptions, type RunOptions } from "./codemode/codemode.js";
export { DEFAULT_LIMITS, type Limits } from "./codemode/limits.js";
export type { RunResult, RunStructuredContent, RunDetails, CallRecord } from "./codemode/run-result.js";
export { BINDING_CONTRACT } from "./codemode/run-code-tool.js";
export * from "./tools/index.js";
export { z } from "zod";
