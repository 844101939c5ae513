// The result-view promise of docs/tool-contract.md, "every field in a compact result is in the full result at the same path with
// the same value", checked where it can be proven: on the two view schemas, once, in defineTool.
//
// Both views project the same record, so a compact value can differ from the full one at the
// same path only where the schemas differ in what they do with that value: a different type, a
// default only one side applies, a transform (`.trim()`, `z.coerce`, `.catch()`, `.pipe()`) only
// one side runs, a key only one side keeps. The walk below refuses each of those. What it cannot
// pair up statically — unions and intersections that are not the same schema object in both views —
// becomes a residual check: at run time only those subtrees of a compact result are projected
// with the full view's schema and compared, never the whole full view.
import * as zc from "zod/v4/core";
import { compileProjector, type Projector } from "./project.js";
import { assertViewSubset } from "./subset.js";

type Z = zc.$ZodType;
interface Def {
  type: string;
  [key: string]: unknown;
}
const defOf = (schema: Z): Def => schema._zod.def as unknown as Def;

/** One step from a node to its children, as a compact result is walked at run time. */
export type Segment = { key: string } | { items: true } | { values: ReadonlySet<string> };

/** A subtree the definition-time walk could not prove: checked on each compact result. */
export interface ResidualCheck {
  segments: readonly Segment[];
  /** "$.tasks[].kind", for the error message. */
  path: string;
  full: Z;
  project: Projector;
  /**
   * The full subtree has defaults, so only a parse gives its value. Without any (and no transform
   * can be there: the walk refused them), the projection already is the full view's value.
   */
  parse: boolean;
}

function child(path: string, key: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

interface Changer {
  what: string;
  node: Z;
}

interface Peeled {
  core: Z;
  nullable: boolean;
  /** Defaults met on the way in, as canonical text ("default 5"), outermost first. */
  defaults: string[];
  changers: Changer[];
}

const INTEGER_FORMATS = new Set(["safeint", "int32", "uint32"]);

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Looks through the wrappers that do not change what type a value has. */
function peel(schema: Z): Peeled {
  const out: Peeled = { core: schema, nullable: false, defaults: [], changers: [] };
  let node = schema;
  for (let depth = 0; depth < 64; depth++) {
    const def = defOf(node);
    if (def.type === "optional" || def.type === "nonoptional" || def.type === "readonly") {
      node = def.innerType as Z;
    } else if (def.type === "nullable") {
      out.nullable = true;
      node = def.innerType as Z;
    } else if (def.type === "default" || def.type === "prefault") {
      out.defaults.push(`${def.type === "default" ? ".default" : ".prefault"}(${json(def.defaultValue)})`);
      node = def.innerType as Z;
    } else if (def.type === "catch") {
      out.changers.push({ what: "a .catch() fallback", node });
      node = def.innerType as Z;
    } else if (def.type === "lazy") {
      node = (node._zod as unknown as { innerType: Z }).innerType;
    } else {
      break;
    }
  }
  out.core = node;
  const def = defOf(node);
  if (def.type === "pipe") out.changers.push({ what: "a .pipe()", node });
  else if (def.type === "transform") out.changers.push({ what: "a transform", node });
  else if (def.type === "success") out.changers.push({ what: "z.success()", node });
  if (def.coerce === true) out.changers.push({ what: "a coercion (z.coerce)", node });
  const checks = (def.checks as Array<{ _zod: { def: { check: string } } }> | undefined) ?? [];
  if (checks.some((check) => check._zod.def.check === "overwrite")) out.changers.push({ what: "an overwrite such as .trim() or .toLowerCase()", node });
  return out;
}

type Types = Set<string> | "any";

function typesOf(peeled: Peeled, seen = new Set<Z>()): Types {
  const core = peeled.core;
  if (seen.has(core)) return "any";
  seen.add(core);
  const def = defOf(core);
  let types: Types;
  switch (def.type) {
    case "string":
    case "template_literal":
      types = new Set(["string"]);
      break;
    case "number": {
      const checks = (def.checks as Array<{ _zod: { def: { format?: string } } }> | undefined) ?? [];
      const integer = INTEGER_FORMATS.has(def.format as string) || checks.some((c) => INTEGER_FORMATS.has(c._zod.def.format ?? ""));
      types = new Set([integer ? "integer" : "number"]);
      break;
    }
    case "nan":
      types = new Set(["number"]);
      break;
    case "boolean":
    case "success":
      types = new Set(["boolean"]);
      break;
    case "bigint":
      types = new Set(["bigint"]);
      break;
    case "null":
      types = new Set(["null"]);
      break;
    case "undefined":
    case "void":
    case "never":
      types = new Set();
      break;
    case "literal":
      types = new Set((def.values as unknown[]).map((v) => (v === null ? "null" : Number.isInteger(v) ? "integer" : typeof v)));
      break;
    case "enum":
      types = new Set(Object.values(def.entries as Record<string, unknown>).map((v) => (Number.isInteger(v) ? "integer" : typeof v)));
      break;
    case "object":
    case "record":
    case "map":
      types = new Set(["object"]);
      break;
    case "array":
    case "tuple":
    case "set":
      types = new Set(["array"]);
      break;
    case "union": {
      const all = new Set<string>();
      for (const option of def.options as Z[]) {
        const t = typesOf(peel(option), seen);
        if (t === "any") return "any";
        for (const x of t) all.add(x);
      }
      types = all;
      break;
    }
    case "intersection": {
      const left = typesOf(peel(def.left as Z), seen);
      const right = typesOf(peel(def.right as Z), seen);
      types = left === "any" ? right : right === "any" ? left : new Set([...left].filter((t) => right.has(t) || (t === "integer" && right.has("number"))));
      break;
    }
    case "pipe":
      types = typesOf(peel(def.out as Z), seen);
      break;
    default:
      // any, unknown, custom, transform…: anything may come out.
      return "any";
  }
  if (peeled.nullable && types !== "any") types.add("null");
  return types;
}

function within(compact: Types, full: Types): boolean {
  if (full === "any") return true;
  if (compact === "any") return false;
  for (const t of compact) if (!full.has(t) && !(t === "integer" && full.has("number"))) return false;
  return true;
}

const typeName = (t: Types): string => (t === "any" ? "unknown" : t.size === 0 ? "never" : [...t].join(" | "));

/** The first default or value-changer anywhere inside `schema` (for subtrees that cannot be paired). */
function findChanger(schema: Z, path: string, withDefaults: boolean, seen: Set<Z>): { path: string; what: string } | undefined {
  if (seen.has(schema)) return undefined;
  seen.add(schema);
  const peeled = peel(schema);
  if (peeled.changers.length > 0) return { path, what: peeled.changers[0]!.what };
  if (withDefaults && peeled.defaults.length > 0) return { path, what: `a ${peeled.defaults[0]}` };
  const def = defOf(peeled.core);
  const inside: Array<[Z, string]> = [];
  switch (def.type) {
    case "object": {
      const shape = def.shape as Record<string, Z>;
      for (const key of Object.keys(shape)) inside.push([shape[key]!, child(path, key)]);
      if (def.catchall) inside.push([def.catchall as Z, `${path}[*]`]);
      break;
    }
    case "array":
    case "set":
      inside.push([(def.element ?? def.valueType) as Z, `${path}[]`]);
      break;
    case "tuple":
      for (const item of def.items as Z[]) inside.push([item, `${path}[]`]);
      if (def.rest) inside.push([def.rest as Z, `${path}[]`]);
      break;
    case "record":
    case "map":
      inside.push([def.valueType as Z, `${path}[*]`]);
      break;
    case "union":
      for (const option of def.options as Z[]) inside.push([option, path]);
      break;
    case "intersection":
      inside.push([def.left as Z, path], [def.right as Z, path]);
      break;
  }
  for (const [node, at] of inside) {
    const found = findChanger(node, at, withDefaults, seen);
    if (found) return found;
  }
  return undefined;
}

function residualAt(full: Z, path: string, segments: Segment[]): ResidualCheck {
  return { segments, path, full, project: compileProjector(full), parse: findChanger(full, path, true, new Set()) !== undefined };
}

class Walk {
  readonly residuals: ResidualCheck[] = [];
  private readonly seen = new Map<Z, Set<Z>>();

  compare(c: Z, f: Z, path: string, segments: Segment[]): string | undefined {
    // The same schema object in both views does the same thing to the same value.
    if (c === f) return undefined;
    const pairs = this.seen.get(c) ?? new Set<Z>();
    if (pairs.has(f)) return undefined;
    pairs.add(f);
    this.seen.set(c, pairs);

    const pc = peel(c);
    const pf = peel(f);
    if (pc.defaults.length > 0 && pc.defaults.join() !== pf.defaults.join()) {
      const theirs = pf.defaults.length > 0 ? `"views.full" has ${pf.defaults.join(" ")}` : `"views.full" has none`;
      return `"views.compact" gives ${path} ${pc.defaults.join(" ")} and ${theirs}: a record without that field would read differently in the two results; give ${path} the same default in both views, or none in "views.compact"`;
    }
    const changed = this.changers(pc, pf, path);
    if (changed) return changed;
    if (pc.core === pf.core) return undefined;

    const ct = typesOf(pc);
    const ft = typesOf(pf);
    if (!within(ct, ft)) {
      return `${path} is ${typeName(ct)} in "views.compact" but ${typeName(ft)} in "views.full": a compact field must have the same type as the full one at the same path`;
    }
    const cd = defOf(pc.core);
    const fd = defOf(pf.core);
    if (cd.type === "union" || cd.type === "intersection" || fd.type === "union" || fd.type === "intersection") {
      return this.residual(c, f, path, segments);
    }
    // The full view keeps this value whole (unknown, any, a custom schema): the compact one may
    // prune it but must not add to it.
    if (ft === "any") {
      const found = findChanger(c, path, true, new Set());
      if (found)
        return `"views.compact" has ${found.what} at ${found.path} inside a value "views.full" keeps as it is: the compact result could hold what the full one does not; remove it from "views.compact"`;
      return undefined;
    }
    if (cd.type === "object" || cd.type === "record") return this.objectLike(pc.core, pf.core, path, segments);
    if (cd.type === "array" && fd.type === "array") {
      return this.compare(cd.element as Z, fd.element as Z, `${path}[]`, [...segments, { items: true }]);
    }
    if (cd.type === "tuple" || fd.type === "tuple") return this.hoisted(f, path, segments, (walk) => walk.tuple(cd, fd, path));
    return undefined;
  }

  private changers(pc: Peeled, pf: Peeled, path: string): string | undefined {
    const same = pc.changers.length === pf.changers.length && pc.changers.every((x, i) => x.node === pf.changers[i]!.node);
    if (same) return undefined;
    const compactOnly = pc.changers.find((x) => !pf.changers.some((y) => y.node === x.node));
    const fullOnly = pf.changers.find((x) => !pc.changers.some((y) => y.node === x.node));
    const [side, other, changer] = compactOnly || !fullOnly ? ["compact", "full", compactOnly ?? pc.changers[0]!] : ["full", "compact", fullOnly];
    return `${path} changes values in "views.${side}" (${changer.what}) but not the same way in "views.${other}": the two results would hold different values there; use one schema object for ${path} in both views (e.g. full: compact.extend({ ... }))`;
  }

  private residual(c: Z, f: Z, path: string, segments: Segment[]): string | undefined {
    for (const [schema, side, defaults] of [
      [c, "compact", true],
      [f, "full", false],
    ] as const) {
      const found = findChanger(schema, path, defaults, new Set());
      if (found) {
        return `"views.${side}" has ${found.what} at ${found.path}, inside a union or intersection that is not the same schema object in both views: the two results could hold different values there; use one schema object for ${path} in both views`;
      }
    }
    this.residuals.push(residualAt(f, path, segments));
    return undefined;
  }

  /** Runs `body` on a scratch walk; anything it could not prove becomes one check at `path`. */
  private hoisted(f: Z, path: string, segments: Segment[], body: (walk: Walk) => string | undefined): string | undefined {
    const scratch = new Walk();
    const problem = body(scratch);
    if (problem) return problem;
    if (scratch.residuals.length > 0) this.residuals.push(residualAt(f, path, segments));
    return undefined;
  }

  private tuple(cd: Def, fd: Def, path: string): string | undefined {
    const fullAt = (i: number): Z | undefined => (fd.type === "tuple" ? ((fd.items as Z[])[i] ?? (fd.rest as Z | undefined)) : (fd.element as Z));
    const items = cd.type === "tuple" ? (cd.items as Z[]) : [];
    for (let i = 0; i < items.length; i++) {
      const f = fullAt(i);
      if (!f) return `${path} has ${items.length} items in "views.compact" but fewer in "views.full": a compact field must have the same type as the full one at the same path`;
      const problem = this.compare(items[i]!, f, `${path}[${i}]`, []);
      if (problem) return problem;
    }
    const rest = cd.type === "tuple" ? (cd.rest as Z | undefined) : (cd.element as Z);
    if (rest) {
      const fulls = fd.type === "tuple" ? [...(fd.items as Z[]).slice(items.length), ...(fd.rest ? [fd.rest as Z] : [])] : [fd.element as Z];
      for (const f of fulls) {
        const problem = this.compare(rest, f, `${path}[]`, []);
        if (problem) return problem;
      }
    }
    return undefined;
  }

  private objectLike(c: Z, f: Z, path: string, segments: Segment[]): string | undefined {
    const cd = defOf(c);
    const fd = defOf(f);
    const open = (d: Def): Z | undefined => (d.type === "record" ? (d.valueType as Z) : d.catchall && defOf(d.catchall as Z).type !== "never" ? (d.catchall as Z) : undefined);
    const cShape = cd.type === "object" ? (cd.shape as Record<string, Z>) : {};
    const fShape = fd.type === "object" ? (fd.shape as Record<string, Z>) : {};
    const fOpen = open(fd);
    const cOpen = open(cd);
    if (fd.type !== "object" && fd.type !== "record") {
      return `${path} is object in "views.compact" but ${typeName(typesOf(peel(f)))} in "views.full": a compact field must have the same type as the full one at the same path`;
    }
    for (const key of Object.keys(cShape)) {
      const at = child(path, key);
      if (Object.hasOwn(fShape, key)) {
        const problem = this.compare(cShape[key]!, fShape[key]!, at, [...segments, { key }]);
        if (problem) return problem;
      } else if (fOpen) {
        const problem = this.compare(cShape[key]!, fOpen, at, [...segments, { key }]);
        if (problem) return problem;
      } else {
        return `"views.compact" declares ${at}, which "views.full" does not: every compact field must be in the full view at the same path`;
      }
    }
    if (cOpen) {
      if (!fOpen) {
        return `"views.compact" keeps undeclared keys at ${path} (a loose object, catchall or record), which "views.full" drops: make ${path} keep them in "views.full" too`;
      }
      const known = new Set(Object.keys(cShape));
      const problem = this.compare(cOpen, fOpen, `${path}[*]`, [...segments, { values: known }]);
      if (problem) return problem;
      // A key the compact view keeps as "undeclared" may be one the full view declares.
      const declared = Object.keys(fShape).filter((key) => !known.has(key));
      if (declared.length > 0) {
        return this.hoisted(f, path, segments, (walk) => {
          for (const key of declared) {
            const problem = walk.compare(cOpen, fShape[key]!, child(path, key), []);
            if (problem) return problem;
          }
          return undefined;
        });
      }
    }
    return undefined;
  }
}

export interface ViewSchemaCheck {
  /** What breaks the promise, for defineTool's error; absent when the views are consistent. */
  problem?: string;
  /** Subtrees to compare on each compact result (empty when everything was proven). */
  residuals: ResidualCheck[];
}

/** Checks the compact view against the full one; `problem` names the first path that breaks the promise. */
export function checkViewSchemas(compact: zc.$ZodObject, full: zc.$ZodObject): ViewSchemaCheck {
  const walk = new Walk();
  const problem = walk.compare(compact, full, "$", []);
  return problem ? { problem, residuals: [] } : { residuals: walk.residuals };
}

const isRecordLike = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * The per-result half: only the residual subtrees of one compact result, each projected from the
 * record with the full view's schema there and compared. Throws naming the first path that differs.
 */
export function checkCompactResult(residuals: readonly ResidualCheck[], compact: unknown, record: unknown): void {
  for (const check of residuals) visit(check, 0, compact, record, "$");
}

function visit(check: ResidualCheck, i: number, compact: unknown, record: unknown, path: string): void {
  if (compact === undefined || compact === null) return;
  if (i === check.segments.length) {
    const projected = check.project(record);
    if (!check.parse) {
      assertViewSubset(compact, projected, path);
      return;
    }
    const parsed = zc.safeParse(check.full, projected);
    // A value the full view refuses is reported by the full view itself, when someone asks for it.
    if (parsed.success) assertViewSubset(compact, parsed.data, path);
    return;
  }
  const segment = check.segments[i]!;
  if ("key" in segment) {
    if (!isRecordLike(compact) || !Object.hasOwn(compact, segment.key)) return;
    visit(check, i + 1, compact[segment.key], isRecordLike(record) ? record[segment.key] : undefined, child(path, segment.key));
  } else if ("items" in segment) {
    if (!Array.isArray(compact)) return;
    for (const [n, item] of compact.entries()) visit(check, i + 1, item, Array.isArray(record) ? record[n] : undefined, `${path}[${n}]`);
  } else if (isRecordLike(compact)) {
    for (const key of Object.keys(compact)) {
      if (!segment.values.has(key)) visit(check, i + 1, compact[key], isRecordLike(record) ? record[key] : undefined, child(path, key));
    }
  }
}
