// Input keys a tool's schema does not know. zod's default object silently strips them, so a
// misspelled optional key (`backgroud: true`) ran the call as if it had never been sent. A closed
// object (zod's default or `.strict()`) refuses them here, naming the closest known key; an open
// one (`.loose()`, `.catchall()`, a JSON Schema object without `additionalProperties: false`)
// keeps accepting them.
//
// Checkers are compiled once per schema node and cached, because this runs on every call.
import type * as zc from "zod/v4/core";
import * as zcore from "zod/v4/core";
import { closestNames, isCloseName } from "./identifiers.js";
import { formatPath } from "./issues.js";

export interface UnknownKey {
  /** Where the object holding the key is, from the input's root. */
  path: readonly (string | number)[];
  key: string;
  /** The keys the schema declares there. */
  known: string[];
}

type Checker = (value: unknown, path: readonly (string | number)[], out: UnknownKey[]) => void;

/** Most unknown keys reported at once; arrays are checked up to this many items too. */
const MAX_REPORTED = 5;
const MAX_ITEMS = 1_000;

const cache = new WeakMap<zc.$ZodType, Checker>();
const none: Checker = () => undefined;

interface Def {
  type: string;
  [key: string]: unknown;
}

function defOf(schema: zc.$ZodType): Def {
  return schema._zod.def as unknown as Def;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function checkerFor(schema: zc.$ZodType): Checker {
  const cached = cache.get(schema);
  if (cached) return cached;
  // Recursive schemas reach their own node again: hand out a trampoline first.
  let target: Checker = none;
  cache.set(schema, (value, path, out) => target(value, path, out));
  target = build(schema);
  cache.set(schema, target);
  return target;
}

function build(schema: zc.$ZodType): Checker {
  const def = defOf(schema);
  switch (def.type) {
    case "object": {
      const shape = def.shape as Record<string, zc.$ZodType>;
      const known = Object.keys(shape);
      const catchall = def.catchall as zc.$ZodType | undefined;
      // zod's default object strips unknown keys and `.strict()` refuses them: both are closed.
      const closed = catchall === undefined || defOf(catchall).type === "never";
      let children: Map<string, Checker> | undefined;
      return (value, path, out) => {
        if (!isObject(value)) return;
        children ??= new Map(known.map((key) => [key, checkerFor(shape[key]!)]));
        for (const key in value) {
          if (!Object.hasOwn(value, key)) continue;
          const child = children.get(key);
          if (child === undefined) {
            if (closed && out.length < MAX_REPORTED) out.push({ path, key, known });
          } else if (child !== none && value[key] !== undefined) {
            // Keys holding plain values (the common case) cost no call and no path.
            child(value[key], [...path, key], out);
          }
        }
      };
    }
    case "optional":
    case "nullable":
    case "nonoptional":
    case "readonly":
    case "default":
    case "prefault":
    case "catch":
      // Wrappers are their inner schema (a recursive one meets its trampoline here, never itself).
      return checkerFor(def.innerType as zc.$ZodType);
    case "pipe":
      return checkerFor(def.in as zc.$ZodType);
    case "lazy": {
      let inner: Checker | undefined;
      return (value, path, out) => (inner ??= checkerFor((def.getter as () => zc.$ZodType)()))(value, path, out);
    }
    case "array": {
      let element: Checker | undefined;
      return (value, path, out) => {
        if (!Array.isArray(value)) return;
        element ??= checkerFor(def.element as zc.$ZodType);
        for (let i = 0; i < Math.min(value.length, MAX_ITEMS) && out.length < MAX_REPORTED; i++) element(value[i], [...path, i], out);
      };
    }
    case "record": {
      let inner: Checker | undefined;
      return (value, path, out) => {
        if (!isObject(value)) return;
        inner ??= checkerFor(def.valueType as zc.$ZodType);
        for (const key of Object.keys(value)) if (out.length < MAX_REPORTED) inner(value[key], [...path, key], out);
      };
    }
    case "union": {
      // The option the value satisfies decides which keys it may have; none: zod reports the mismatch.
      const options = def.options as zc.$ZodType[];
      return (value, path, out) => {
        if (!isObject(value) && !Array.isArray(value)) return;
        const option = options.find((candidate) => zcore.safeParse(candidate, value).success);
        if (option) checkerFor(option)(value, path, out);
      };
    }
    default:
      // Intersections split keys between sides; anything else holds no keys of its own.
      return none;
  }
}

/** Unknown keys of `value` under a closed object of `schema`, at most five. */
export function findUnknownKeys(schema: zc.$ZodType, value: unknown): UnknownKey[] {
  const out: UnknownKey[] = [];
  checkerFor(schema)(value, [], out);
  return out;
}

/** `unknown key "backgroud"; did you mean "background"?` for each, joined. */
export function describeUnknownKeys(subject: string, found: readonly UnknownKey[]): string {
  return found
    .map(({ path, key, known }) => {
      const where = path.length === 0 ? "" : ` "${formatPath(path)}"`;
      const shown = key.length > 100 ? `${key.slice(0, 100)}…` : key;
      const closest = key.length <= 100 && known.length > 0 ? closestNames(key, known, 1)[0] : undefined;
      const hint =
        closest !== undefined && isCloseName(key, closest) ? `; did you mean "${closest}"?` : known.length > 0 ? `; known keys: ${known.map((k) => `"${k}"`).join(", ")}` : "; it takes no keys";
      return `${subject}${where} has unknown key "${shown}"${hint}`;
    })
    .join("; ");
}
