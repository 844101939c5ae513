// defineTool and toTool: a tool definition checked and compiled once — input schema, output schema
// or compact/full views (their subset promise checked on the schemas), projectors, JSON Schemas and
// digests — into the Tool every caller invokes. docs/tool-contract.md.
import type * as zc from "zod/v4/core";
import { normalizeJsonSchema } from "./canonical.js";
import { describeValue } from "./errors.js";
import { toIdentifier } from "./identifiers.js";
import { isPlainObject } from "./json.js";
import { compileProjector, isZodObject, type Projector } from "./project.js";
import { jsonSchemaOf, RESULT_VIEW_PROPERTY, schemaView, type SchemaView } from "./schema.js";
import { checkViewSchemas, type ResidualCheck } from "./view-schemas.js";
import { TOOL_ANNOTATION_KEYS, type ApprovalPolicy, type MaybePromise, type ResultView, type ToolAnnotations, type ToolContext, type ToolDescriptor, type ToolResult } from "./types.js";

/** A tool as the runtime holds it: immutable, with everything per-call work needs precomputed. */
export interface Tool {
  readonly name: string;
  readonly namespace?: string;
  /** `name`, or `namespace.name` for namespaced (MCP) tools: what `tool_info` and hooks use. */
  readonly id: string;
  /** Where a program reaches it under `tools`: `["my_tool"]` or `["github", "create_issue"]`. */
  readonly path: readonly string[];
  readonly description: string;
  /** A short human-readable name for a client's UI ("Read a file"). */
  readonly title?: string;
  /** Hints about the tool's effects, for clients (MCP annotations). */
  readonly annotations?: Readonly<ToolAnnotations>;
  /** Declares an output schema (or views): programs receive `structuredContent`, not text. */
  readonly hasOutput: boolean;
  readonly hasResultViews: boolean;
}

export interface ViewPlan extends SchemaView {
  zod: zc.$ZodObject;
  project: Projector;
  label: string;
}

/** What defineTool/toTool precompute; reachable only through this module's WeakMap. */
export interface ToolInternals {
  input?: zc.$ZodObject;
  /** Its own input declares `result_view` (or it has no schema): the selector is not inspected. */
  ownsResultView: boolean;
  /** Its record schema has an `output` key, so `{ output, details }` may be a record, not a ToolResult. */
  recordHasOutputKey: boolean;
  output?: ViewPlan;
  views?: Record<ResultView, ViewPlan>;
  /** Parts of a compact result that compact ⊆ full could not be proven for at definition: checked per result. */
  subsetChecks?: readonly ResidualCheck[];
  execute(input: unknown, ctx: ToolContext): unknown;
  toModelOutput?(record: unknown): unknown;
  toDetails?(record: unknown): unknown;
  /** A person must approve a call first: always ("required") or when this function says so for the input. */
  approval?: ApprovalPolicy;
  /**
   * Input schema without the `result_view` the runtime adds; declarations render it separately.
   * This and `descriptor` are getters, worked out once: in defineTool, or at the first read for
   * the runtime's own tools (see SchemaTiming).
   */
  readonly inputJsonSchema: Record<string, unknown>;
  readonly descriptor: ToolDescriptor;
}

const internals = new WeakMap<Tool, ToolInternals>();

export function isTool(value: unknown): value is Tool {
  return typeof value === "object" && value !== null && internals.has(value as Tool);
}

export function toolInternals(tool: Tool, field = "tool"): ToolInternals {
  const found = typeof tool === "object" && tool !== null ? internals.get(tool) : undefined;
  if (!found) throw new TypeError(`${field} must be a tool created by defineTool() or toTool(), received ${describeValue(tool)}`);
  return found;
}

type ZObject = zc.$ZodObject;
type Returned<R> = MaybePromise<R | ToolResult<R>>;

interface BaseDefinition<I extends ZObject> {
  name: string;
  /** Groups the tool under `tools.<namespace>` in programs (MCP servers). */
  namespace?: string;
  description: string;
  /** A short human-readable name for a client's UI. */
  title?: string;
  /** Hints about the tool's effects for clients (MCP annotations: readOnlyHint, destructiveHint, idempotentHint, openWorldHint). */
  annotations?: ToolAnnotations;
  /**
   * A person must approve a call before it runs (deploy, send, delete, pay): always
   * (`"required"`), or when this function returns true for the input. A program that reaches
   * such a call stops and asks; see docs/approvals.md.
   */
  approval?: ApprovalPolicy;
  input: I;
}

export interface ViewsToolDefinition<I extends ZObject, C extends ZObject, F extends ZObject> extends BaseDefinition<I> {
  views: { compact: C; full: F };
  output?: undefined;
  // Keys beyond the full view (host-only fields) are allowed; no view ever shows them.
  execute(input: zc.output<I>, ctx: ToolContext): Returned<zc.input<F> & Record<string, unknown>>;
  toModelOutput?(record: zc.input<F> & Record<string, unknown>): unknown;
  toDetails?(record: zc.input<F> & Record<string, unknown>): unknown;
}

export interface OutputToolDefinition<I extends ZObject, O extends ZObject> extends BaseDefinition<I> {
  output: O;
  views?: undefined;
  // The full record may carry more than the output schema lists; projection drops the rest.
  execute(input: zc.output<I>, ctx: ToolContext): Returned<zc.input<O> & Record<string, unknown>>;
  toModelOutput?(record: zc.input<O> & Record<string, unknown>): unknown;
  toDetails?(record: zc.input<O> & Record<string, unknown>): unknown;
}

export interface TextToolDefinition<I extends ZObject> extends BaseDefinition<I> {
  output?: undefined;
  views?: undefined;
  execute(input: zc.output<I>, ctx: ToolContext): Returned<unknown>;
  toModelOutput?(record: unknown): unknown;
  toDetails?(record: unknown): unknown;
}

/** A schema-less tool: input is any JSON object, the result is text. */
export interface PlainToolDefinition {
  name: string;
  namespace?: string;
  description: string;
  /** JSON Schema of the input (e.g. from an MCP server), shown in descriptors and declarations; not enforced here. */
  inputSchema?: Record<string, unknown>;
  title?: string;
  annotations?: ToolAnnotations;
  /** See BaseDefinition.approval. */
  approval?: ApprovalPolicy;
  execute(input: Record<string, unknown>, ctx: ToolContext): unknown;
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const NAMESPACE = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;
const DEFINITION_KEYS = new Set(["name", "namespace", "description", "title", "annotations", "approval", "input", "output", "views", "execute", "toModelOutput", "toDetails"]);
const PLAIN_KEYS = new Set(["name", "namespace", "description", "title", "annotations", "approval", "inputSchema", "execute"]);

function checkApproval(where: string, def: Record<string, unknown>): { approval?: ApprovalPolicy } {
  const { approval } = def;
  if (approval === undefined) return {};
  if (approval !== "required" && typeof approval !== "function") {
    fail(where, `"approval" must be "required" or a function (input, ctx) => boolean, received ${typeof approval === "string" ? JSON.stringify(approval) : describeValue(approval)}`);
  }
  return { approval: approval as ApprovalPolicy };
}

function fail(where: string, message: string): never {
  throw new TypeError(`${where}: ${message}`);
}

interface Identity {
  name: string;
  namespace?: string;
  description: string;
  title?: string;
  annotations?: ToolAnnotations;
}

function checkIdentity(where: string, def: Record<string, unknown>): Identity {
  const { name, namespace, description } = def;
  if (typeof name !== "string" || !NAME.test(name)) {
    fail(where, `"name" must be 1–128 characters of letters, digits, "_", "-" or ".", not starting with "-" or ".", received ${typeof name === "string" ? JSON.stringify(name) : describeValue(name)}`);
  }
  if (namespace !== undefined && (typeof namespace !== "string" || !NAMESPACE.test(namespace))) {
    fail(where, `"namespace" must be 1–64 characters of letters, digits, "_" or "-", received ${typeof namespace === "string" ? JSON.stringify(namespace) : describeValue(namespace)}`);
  }
  if (typeof description !== "string" || description.trim() === "") {
    fail(where, `"description" must be a non-empty string, received ${typeof description === "string" ? "an empty string" : describeValue(description)}`);
  }
  const identity: Identity = namespace === undefined ? { name, description } : { name, namespace: namespace as string, description };
  const { title, annotations } = def;
  if (title !== undefined) {
    if (typeof title !== "string" || title.trim() === "" || title.length > 200) {
      fail(where, `"title" must be a non-empty string of at most 200 characters, received ${typeof title === "string" ? JSON.stringify(title.slice(0, 60)) : describeValue(title)}`);
    }
    identity.title = title;
  }
  if (annotations !== undefined) {
    if (!isPlainObject(annotations)) fail(where, `"annotations" must be an object of boolean hints (${TOOL_ANNOTATION_KEYS.join(", ")}), received ${describeValue(annotations)}`);
    for (const [key, value] of Object.entries(annotations)) {
      if (!(TOOL_ANNOTATION_KEYS as readonly string[]).includes(key)) fail(where, `"annotations" has unknown hint "${key}"; known: ${TOOL_ANNOTATION_KEYS.join(", ")}`);
      if (typeof value !== "boolean") fail(where, `"annotations.${key}" must be true or false, received ${describeValue(value)}`);
    }
    identity.annotations = Object.freeze({ ...annotations });
  }
  return identity;
}

/**
 * The hints of an annotations object from elsewhere (an upstream MCP tool's `annotations`): the
 * four known ones that are booleans; anything else (its `title`, hints of a later revision, bad
 * values) is left out, so a server's extras never keep its tool from binding.
 */
export function pickAnnotations(value: unknown): ToolAnnotations | undefined {
  if (!isPlainObject(value)) return undefined;
  const hints: ToolAnnotations = {};
  for (const key of TOOL_ANNOTATION_KEYS) if (typeof value[key] === "boolean") hints[key] = value[key] as boolean;
  return Object.keys(hints).length > 0 ? hints : undefined;
}

function checkUnknownKeys(where: string, def: Record<string, unknown>, allowed: Set<string>): void {
  for (const key of Object.keys(def)) {
    if (!allowed.has(key)) fail(where, `unknown field "${key}"; expected one of ${[...allowed].map((k) => `"${k}"`).join(", ")}`);
  }
}

function checkFunction(where: string, def: Record<string, unknown>, key: string, required: boolean): void {
  const value = def[key];
  if (value === undefined && !required) return;
  if (typeof value !== "function") fail(where, `"${key}" must be a function, received ${describeValue(value)}`);
}

function zodObject(where: string, field: string, value: unknown): ZObject {
  if (!isZodObject(value)) fail(where, `"${field}" must be a zod object schema (z.object({...})), received ${describeValue(value)}`);
  return value;
}

/**
 * When a tool's JSON Schemas, digests and descriptor are worked out. `"now"`, in defineTool, for
 * every tool a host defines: a schema with no JSON form throws from defineTool (the contract), and
 * so does anything else the conversion or the digests might refuse. `"on-first-read"` for the
 * runtime's own tools (defineBuiltinTool): their schemas are constants of this package, which
 * test/tools/lazy-schemas.test.ts converts, so there is nothing a later read could throw, and
 * zod's conversion and the digests of a dozen tools stay off a cold start that never reads them.
 */
type SchemaTiming = "now" | "on-first-read";

/** A view's plan; `view` is filled by the tool's `settle` (see defineWith). */
interface PlannedView extends ViewPlan {
  view: SchemaView | undefined;
  /** How a conversion error names the view: `defineTool: "views.compact"`. */
  readonly field: string;
}

function plan(schema: ZObject, field: string, label: string, timing: SchemaTiming, settle: () => void): PlannedView {
  const planned: PlannedView = {
    zod: schema,
    project: compileProjector(schema),
    label,
    view: undefined,
    field: `defineTool: "${field}"`,
    get schema() {
      settle();
      return planned.view!.schema;
    },
    get digest() {
      settle();
      return planned.view!.digest;
    },
  };
  // Where defineTool has always converted a view: a bad output schema is reported before a broken
  // views promise, and the compact view before the full one.
  if (timing === "now") planned.view = schemaView(schema, planned.field);
  return planned;
}

function freezeTool(identity: Identity, hasOutput: boolean, hasResultViews: boolean, descriptionTail?: () => string): Tool {
  const tool: Tool = {
    name: identity.name,
    ...(identity.namespace === undefined ? {} : { namespace: identity.namespace }),
    id: identity.namespace === undefined ? identity.name : `${identity.namespace}.${identity.name}`,
    path: Object.freeze(identity.namespace === undefined ? [toIdentifier(identity.name)] : [toIdentifier(identity.namespace), toIdentifier(identity.name)]),
    description: identity.description,
    ...(identity.title === undefined ? {} : { title: identity.title }),
    ...(identity.annotations === undefined ? {} : { annotations: identity.annotations }),
    hasOutput,
    hasResultViews,
  };
  if (descriptionTail) {
    // Redefined in place, so the key keeps its position (Object.keys, JSON) and the object is as
    // frozen as any tool; the text is built once, at its first read.
    let description: string | undefined;
    Object.defineProperty(tool, "description", { get: () => (description ??= identity.description + descriptionTail()), enumerable: true });
  }
  return Object.freeze(tool);
}

export function defineTool<I extends ZObject, C extends ZObject, F extends ZObject>(def: ViewsToolDefinition<I, C, F>): Tool;
export function defineTool<I extends ZObject, O extends ZObject>(def: OutputToolDefinition<I, O>): Tool;
export function defineTool<I extends ZObject>(def: TextToolDefinition<I>): Tool;
export function defineTool(def: unknown): Tool {
  return defineWith(def, "now");
}

/** What only the runtime's own tools may ask of defineBuiltinTool. */
export interface BuiltinToolOptions {
  /**
   * Appended to `description` at its first read, once: ptc_run_code's declarations of every
   * program tool, which nothing on a cold start reads and which read every tool's schemas.
   * Whatever it renders must not be able to throw (check it up front, as declarationsOf does).
   */
  descriptionTail?: () => string;
}

/**
 * defineTool for the runtime's own tools (ptc_*, tool_info, tool_search, ptc_run_code): checked
 * the same way, but JSON Schemas, digests and the descriptor are worked out at their first read.
 * Only for definitions whose schemas are constants of this package (see SchemaTiming): a host's
 * schema must keep failing in defineTool.
 * @internal not exported from the package.
 */
export function defineBuiltinTool<I extends ZObject, C extends ZObject, F extends ZObject>(def: ViewsToolDefinition<I, C, F>, options?: BuiltinToolOptions): Tool;
export function defineBuiltinTool<I extends ZObject, O extends ZObject>(def: OutputToolDefinition<I, O>, options?: BuiltinToolOptions): Tool;
export function defineBuiltinTool<I extends ZObject>(def: TextToolDefinition<I>, options?: BuiltinToolOptions): Tool;
export function defineBuiltinTool(def: unknown, options: BuiltinToolOptions = {}): Tool {
  return defineWith(def, "on-first-read", options.descriptionTail);
}

function defineWith(def: unknown, timing: SchemaTiming, descriptionTail?: () => string): Tool {
  const where = "defineTool";
  if (!isPlainObject(def)) fail(where, `the definition must be an object, received ${describeValue(def)}`);
  checkUnknownKeys(where, def, DEFINITION_KEYS);
  const identity = checkIdentity(where, def);
  const input = zodObject(where, "input", def.input);
  checkFunction(where, def, "execute", true);
  checkFunction(where, def, "toModelOutput", false);
  checkFunction(where, def, "toDetails", false);
  if (def.output !== undefined && def.views !== undefined) {
    fail(where, `give either "output" (a single result) or "views" ({ compact, full }), not both`);
  }
  const approval = checkApproval(where, def);
  const ownsResultView = Object.hasOwn(input._zod.def.shape, "result_view");
  let output: PlannedView | undefined;
  let views: Record<ResultView, PlannedView> | undefined;
  let subsetChecks: ResidualCheck[] | undefined;
  // The tool's JSON Schemas, digests and descriptor, worked out once, in the order defineTool has
  // always used; it is called below (timing "now") or by the first getter read (otherwise). What
  // failed to convert is not cached, so a later read throws the same error again.
  let settled: { inputJsonSchema: Record<string, unknown>; descriptor: ToolDescriptor } | undefined;
  const settle = (): { inputJsonSchema: Record<string, unknown>; descriptor: ToolDescriptor } => {
    if (settled) return settled;
    for (const p of [output, views?.compact, views?.full]) if (p && !p.view) p.view = schemaView(p.zod, p.field);
    const inputJsonSchema = jsonSchemaOf(input, "input", `${where}: "input"`);
    const descriptor: ToolDescriptor = {
      id: tool.id,
      description: tool.description,
      input_schema: views ? withResultView(inputJsonSchema) : inputJsonSchema,
    };
    const compact = views?.compact ?? output;
    if (compact) {
      descriptor.output_schema = compact.view!.schema;
      descriptor.output_schema_digest = compact.view!.digest;
    }
    if (views) {
      descriptor.output_views = {
        compact: { schema: views.compact.view!.schema, digest: views.compact.view!.digest },
        full: { schema: views.full.view!.schema, digest: views.full.view!.digest },
      };
    }
    settled = { inputJsonSchema, descriptor: deepFreeze(descriptor) };
    return settled;
  };
  if (def.output !== undefined) {
    output = plan(zodObject(where, "output", def.output), "output", "output", timing, settle);
  } else if (def.views !== undefined) {
    if (!isPlainObject(def.views)) fail(where, `"views" must be an object { compact, full } of zod object schemas, received ${describeValue(def.views)}`);
    for (const key of Object.keys(def.views)) {
      if (key !== "compact" && key !== "full") fail(where, `"views" has unknown view "${key}"; expected "compact" and "full"`);
    }
    if (ownsResultView) fail(where, `"input" must not declare "result_view": a tool with views gets that selector from the runtime`);
    views = {
      compact: plan(zodObject(where, "views.compact", def.views.compact), "views.compact", "compact view", timing, settle),
      full: plan(zodObject(where, "views.full", def.views.full), "views.full", "full view", timing, settle),
    };
    // The result-view promise (docs/tool-contract.md): every compact field is in the full result at the same path with the same value.
    const checked = checkViewSchemas(views.compact.zod, views.full.zod);
    if (checked.problem) fail(where, checked.problem);
    subsetChecks = checked.residuals;
  }

  const tool = freezeTool(identity, output !== undefined || views !== undefined, views !== undefined, descriptionTail);
  // The input schema converts here, after the views, as it always has (so does the descriptor).
  if (timing === "now") settle();
  const d = def as Record<string, (...args: unknown[]) => unknown>;
  const recordSchema = views?.full.zod ?? output?.zod;
  internals.set(tool, {
    input,
    ownsResultView,
    recordHasOutputKey: recordSchema !== undefined && Object.hasOwn(recordSchema._zod.def.shape, "output"),
    ...(output ? { output } : {}),
    ...(views ? { views } : {}),
    ...(subsetChecks && subsetChecks.length > 0 ? { subsetChecks } : {}),
    execute: d.execute!,
    ...(d.toModelOutput ? { toModelOutput: d.toModelOutput } : {}),
    ...(d.toDetails ? { toDetails: d.toDetails } : {}),
    ...approval,
    get inputJsonSchema() {
      return settle().inputJsonSchema;
    },
    get descriptor() {
      return settle().descriptor;
    },
  });
  return tool;
}

function withResultView(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = { ...((schema.properties as Record<string, unknown> | undefined) ?? {}), result_view: RESULT_VIEW_PROPERTY };
  return { ...schema, properties };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}

/**
 * Accepts what a host may hand the runtime as a tool: a `defineTool` result, a definition that
 * still needs `defineTool` (it has an `input` schema), or a plain `{ name, description, execute }`
 * whose input is any JSON object and whose result becomes text.
 */
export function toTool(value: unknown): Tool {
  if (isTool(value)) return value;
  const where = "toTool";
  if (!isPlainObject(value)) {
    fail(where, `expected a tool from defineTool() or an object { name, description, execute }, received ${describeValue(value)}`);
  }
  if (value.input !== undefined || value.output !== undefined || value.views !== undefined) {
    return defineTool(value as unknown as TextToolDefinition<ZObject>);
  }
  checkUnknownKeys(where, value, PLAIN_KEYS);
  const identity = checkIdentity(where, value);
  checkFunction(where, value, "execute", true);
  const approval = checkApproval(where, value);
  let inputJsonSchema: Record<string, unknown> = { type: "object" };
  if (value.inputSchema !== undefined) {
    if (!isPlainObject(value.inputSchema) || (value.inputSchema.type !== undefined && value.inputSchema.type !== "object")) {
      fail(where, `"inputSchema" must be a JSON Schema object with type "object", received ${describeValue(value.inputSchema)}`);
    }
    try {
      inputJsonSchema = normalizeJsonSchema(JSON.parse(JSON.stringify(value.inputSchema)) as Record<string, unknown>);
    } catch (err) {
      fail(where, `"inputSchema" must be JSON: ${(err as Error).message}`);
    }
  }
  const tool = freezeTool(identity, false, false);
  const descriptor: ToolDescriptor = { id: tool.id, description: identity.description, input_schema: inputJsonSchema };
  internals.set(tool, {
    ownsResultView: true,
    recordHasOutputKey: false,
    execute: value.execute as ToolInternals["execute"],
    ...approval,
    inputJsonSchema,
    descriptor: deepFreeze(descriptor),
  });
  return tool;
}

/** Whether the tool asks for a person's approval itself (its definition's `approval`). */
export function hasApprovalPolicy(tool: Tool): boolean {
  return toolInternals(tool).approval !== undefined;
}
