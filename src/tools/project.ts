// Projection of a record onto a view schema (compiled once per schema).
import * as zc from "zod/v4/core";
import { jsonClone, setKey } from "./json.js";

/**
 * Projection of a full record onto a view schema: keep exactly the keys the schema declares (at
 * every depth), omit absent optional keys instead of writing null/undefined, and copy the rest
 * through a JSON round trip. It does not validate — `safeParse` does that after — so a mismatch is
 * reported once, by zod, with zod's own path and wording.
 *
 * Projectors are compiled once per schema node (in defineTool) because this runs on every call.
 */
export type Projector = (value: unknown) => unknown;

type AnySchema = zc.$ZodType;
interface Def {
  type: string;
  [key: string]: unknown;
}

const defOf = (schema: AnySchema): Def => schema._zod.def as unknown as Def;

export function isZodSchema(value: unknown): value is AnySchema {
  if (value === null || typeof value !== "object") return false;
  const internals = (value as { _zod?: { def?: { type?: unknown } } })._zod;
  return typeof internals?.def?.type === "string";
}

export function isZodObject(value: unknown): value is zc.$ZodObject {
  return isZodSchema(value) && defOf(value).type === "object";
}

// Class instances are read like JSON.stringify reads them: by their own enumerable keys.
const isRecordLike = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value) && !(value instanceof Date);

const primitive: Projector = (value) => (typeof value === "number" && Object.is(value, -0) ? 0 : value === undefined ? undefined : typeof value === "object" ? jsonClone(value) : value);

export function compileProjector(schema: AnySchema): Projector {
  return compile(schema, new Map());
}

function compile(schema: AnySchema, cache: Map<AnySchema, Projector>): Projector {
  const cached = cache.get(schema);
  if (cached) return cached;
  // Recursive schemas (z.lazy, getters in shapes) reach their own node again: hand out a
  // trampoline first and fill it in once this node is compiled.
  let target: Projector | undefined;
  const trampoline: Projector = (value) => target!(value);
  cache.set(schema, trampoline);
  target = build(schema, cache);
  cache.set(schema, target);
  return target;
}

function build(schema: AnySchema, cache: Map<AnySchema, Projector>): Projector {
  const def = defOf(schema);
  switch (def.type) {
    case "object":
      return objectProjector(schema as zc.$ZodObject, cache);
    case "array": {
      let element: Projector | undefined;
      return (value) => {
        if (!Array.isArray(value)) return jsonClone(value);
        element ??= compile(def.element as AnySchema, cache);
        return value.map((item) => {
          const out = element!(item);
          return out === undefined ? null : out;
        });
      };
    }
    case "tuple": {
      let items: Projector[] | undefined;
      let rest: Projector | undefined;
      return (value) => {
        if (!Array.isArray(value)) return jsonClone(value);
        items ??= (def.items as AnySchema[]).map((item) => compile(item, cache));
        if (def.rest) rest ??= compile(def.rest as AnySchema, cache);
        return value.map((item, i) => {
          const p = i < items!.length ? items![i]! : (rest ?? jsonClone);
          const out = p(item);
          return out === undefined ? null : out;
        });
      };
    }
    case "record": {
      let valueProjector: Projector | undefined;
      return (value) => {
        if (!isRecordLike(value)) return jsonClone(value);
        valueProjector ??= compile(def.valueType as AnySchema, cache);
        const out: Record<string, unknown> = {};
        for (const key of Object.keys(value)) {
          const projected = valueProjector(value[key]);
          if (projected !== undefined) setKey(out, key, projected);
        }
        return out;
      };
    }
    case "union": {
      let options: { schema: AnySchema; project: Projector }[] | undefined;
      return (value) => {
        options ??= (def.options as AnySchema[]).map((option) => ({ schema: option, project: compile(option, cache) }));
        // The first option the projected value satisfies decides which keys survive.
        for (const option of options) {
          const projected = option.project(value);
          if (zc.safeParse(option.schema, projected).success) return projected;
        }
        return jsonClone(value);
      };
    }
    case "intersection": {
      let left: Projector | undefined;
      let right: Projector | undefined;
      return (value) => {
        left ??= compile(def.left as AnySchema, cache);
        right ??= compile(def.right as AnySchema, cache);
        return merge(left(value), right(value));
      };
    }
    case "optional":
    case "nullable":
    case "nonoptional":
    case "readonly":
    case "default":
    case "prefault":
    case "catch":
    case "success": {
      let inner: Projector | undefined;
      return (value) => {
        if (value === null || value === undefined) return value === null ? null : undefined;
        inner ??= compile(def.innerType as AnySchema, cache);
        return inner(value);
      };
    }
    case "lazy": {
      let inner: Projector | undefined;
      return (value) => {
        inner ??= compile((def.getter as () => AnySchema)(), cache);
        return inner(value);
      };
    }
    case "pipe": {
      let inner: Projector | undefined;
      return (value) => {
        inner ??= compile(def.in as AnySchema, cache);
        return inner(value);
      };
    }
    case "string":
    case "number":
    case "int":
    case "boolean":
    case "null":
    case "literal":
    case "enum":
    case "template_literal":
      return primitive;
    default:
      // any, unknown and the like: the value is open, so it is kept whole (as JSON).
      return jsonClone;
  }
}

interface KeyPlan {
  key: string;
  project: Projector;
  /** An optional key that cannot hold null: a null in the record means "absent" and is omitted. */
  nullMeansAbsent: boolean;
}

function objectProjector(schema: zc.$ZodObject, cache: Map<AnySchema, Projector>): Projector {
  let plan: KeyPlan[] | undefined;
  let known: Set<string> | undefined;
  let catchall: Projector | null | undefined;
  const prepare = () => {
    const def = schema._zod.def;
    // Shapes may hold getters for recursive schemas, so they are read on first use, not at compile.
    plan = Object.keys(def.shape).map((key) => {
      const field = def.shape[key]!;
      // optin is set ("optional", "defaulted") whenever the schema accepts the key being absent.
      const optional = field._zod.optin !== undefined || field._zod.optout === "optional";
      return {
        key,
        project: compile(field, cache),
        nullMeansAbsent: optional && !zc.safeParse(field, null).success,
      };
    });
    known = new Set(plan.map((p) => p.key));
    const extra = def.catchall;
    // strip (no catchall) and strict (catchall never) objects drop unknown keys; loose ones keep them.
    catchall = extra && defOf(extra).type !== "never" ? compile(extra, cache) : null;
  };
  return (value) => {
    if (!isRecordLike(value)) return jsonClone(value);
    if (plan === undefined) prepare();
    const out: Record<string, unknown> = {};
    for (const { key, project, nullMeansAbsent } of plan!) {
      if (!Object.hasOwn(value, key)) continue;
      const item = value[key];
      if (item === undefined || (item === null && nullMeansAbsent)) continue;
      const projected = project(item);
      if (projected !== undefined) setKey(out, key, projected);
    }
    if (catchall) {
      for (const key of Object.keys(value)) {
        if (known!.has(key)) continue;
        const projected = catchall(value[key]);
        if (projected !== undefined) setKey(out, key, projected);
      }
    }
    return out;
  };
}

function merge(a: unknown, b: unknown): unknown {
  if (!isRecordLike(a) || !isRecordLike(b)) return a === undefined ? b : a;
  const out: Record<string, unknown> = { ...a };
  for (const key of Object.keys(b)) setKey(out, key, Object.hasOwn(out, key) ? merge(out[key], b[key]) : b[key]);
  return out;
}
