// A tool's record straight into QuickJS's own format for a program: projected on its output
// schema, checked and encoded in one pass (issue #12: per-call host work generated once per
// schema). The format and its writer are engine/bjson.ts's; what the value must be — the one the
// ordinary path gives, projection (project.ts) then zod — is the tool contract's, so it is here.
import * as zc from "zod/v4/core";
import { defOf, generate, Generator, type BjsonEncoder, type Def } from "../engine/bjson.js";
import { compileProjector } from "./project.js";

const projecting = new WeakMap<zc.$ZodType, BjsonEncoder>();

/**
 * The encoder of a tool's *record* for the guest: `encodeToolResult(v)` of the value `v` that
 * projecting the record on `schema` (tools/project.ts) and parsing that with zod would give,
 * in one pass over the record, without building either. Undefined whenever it cannot vouch for
 * that value (a mismatch, a class instance, a Date, a hole): the caller then takes the ordinary
 * path, which projects, parses and reports zod's exact error. Parts of a schema it does not
 * model itself (unions, records, tuples, transforms, refinements, checks beyond lengths, bounds
 * and integers) go through the projector and zod for that part only. Generated on first use,
 * once per schema.
 */
export function projectingEncoderFor(schema: zc.$ZodType): BjsonEncoder {
  let encoder = projecting.get(schema);
  if (!encoder) {
    encoder = generate(schema, new ProjectingGenerator(), true);
    projecting.set(schema, encoder);
  }
  return encoder;
}

/** Checks a projecting encoder tests itself (others send the part through zod). */
const LENGTH_CHECKS = new Set(["min_length", "max_length", "length_equals"]);
const NUMBER_CHECKS = new Set(["greater_than", "less_than", "number_format"]);

interface CheckDef {
  check: string;
  when?: unknown;
  [key: string]: unknown;
}

class ProjectingGenerator extends Generator {
  override externals(): Record<string, unknown> {
    return { hasOwn: Object.hasOwn, safeParse: zc.safeParse };
  }

  protected override body(schema: zc.$ZodType): string {
    const def = defOf(schema);
    switch (def.type) {
      case "string": {
        const tests = this.tests(def, "v.length", LENGTH_CHECKS);
        return tests === undefined ? this.throughZod(schema) : `if (typeof v !== "string"${tests}) return false; w.string(v); return true;`;
      }
      case "number": {
        const tests = this.tests(def, "v", NUMBER_CHECKS);
        return tests === undefined ? this.throughZod(schema) : `return typeof v === "number"${tests} && w.number(v);`;
      }
      case "boolean":
      case "null":
      case "literal":
      case "enum":
        return def.coerce ? this.throughZod(schema) : super.body(schema);
      case "nullable":
      case "optional":
      case "nonoptional":
      case "default":
      case "prefault":
      case "readonly":
      case "lazy":
        // Present and not undefined (objects and arrays see to that), these are their inner schema.
        return super.body(schema);
      case "array":
        return (def.checks as unknown[] | undefined)?.length ? this.throughZod(schema) : super.body(schema);
      case "object": {
        const catchall = def.catchall as zc.$ZodType | undefined;
        const closed = catchall === undefined || defOf(catchall).type === "never";
        // zod assigns a declared "__proto__" key, which sets the prototype of its output instead:
        // what the guest then gets is the ordinary path's to say.
        const plain = closed && !(def.checks as unknown[] | undefined)?.length && !Object.hasOwn(def.shape as object, "__proto__");
        return plain ? this.projectedObject(schema as zc.$ZodObject) : this.throughZod(schema);
      }
      case "any":
      case "unknown":
        // The projector keeps these whole as JSON; zod takes anything.
        return `return any(w, v, d);`;
      default:
        return this.throughZod(schema);
    }
  }

  /** The JS conditions (each starting with " && ") for the node's own checks, or undefined when one is not modelled. */
  private tests(def: Def, subject: string, supported: ReadonlySet<string>): string | undefined {
    if (def.coerce) return undefined;
    const checks = [...(def.check ? [def as unknown as CheckDef] : []), ...((def.checks as { _zod: { def: CheckDef } }[] | undefined) ?? []).map((c) => c._zod.def)];
    let out = "";
    for (const check of checks) {
      if (!supported.has(check.check) || check.when !== undefined) return undefined;
      switch (check.check) {
        case "number_format":
          if (check.format !== "safeint") return undefined;
          out += ` && Number.isSafeInteger(${subject})`;
          break;
        case "greater_than":
          out += ` && ${subject} ${check.inclusive ? ">=" : ">"} ${this.constant(check.value)}`;
          break;
        case "less_than":
          out += ` && ${subject} ${check.inclusive ? "<=" : "<"} ${this.constant(check.value)}`;
          break;
        case "min_length":
          out += ` && ${subject} >= ${this.constant(check.minimum)}`;
          break;
        case "max_length":
          out += ` && ${subject} <= ${this.constant(check.maximum)}`;
          break;
        case "length_equals":
          out += ` && ${subject} === ${this.constant(check.length)}`;
          break;
      }
    }
    return out;
  }

  /** This part as the ordinary path treats it: projected, parsed by zod, then encoded as the plain JSON zod gave. */
  private throughZod(schema: zc.$ZodType): string {
    const zod = this.constant(schema);
    const project = this.constant(compileProjector(schema));
    return `const r = safeParse(${zod}, ${project}(v)); return r.success && any(w, r.data, d);`;
  }

  /**
   * A closed object (zod's default or strict): its declared keys in shape order (zod's output
   * order), unknown keys ignored (the projection drops them), absent optional keys left out (a
   * null in one that cannot hold null counts as absent, as the projector has it), a default
   * filled in by zod itself.
   */
  private projectedObject(schema: zc.$ZodObject): string {
    const shape = schema._zod.def.shape;
    const fields = Object.keys(shape).map((key) => {
      const field = shape[key] as zc.$ZodType;
      const literal = JSON.stringify(key);
      const { encoded, cost } = this.knownKey(key);
      const optional = field._zod.optin !== undefined || field._zod.optout === "optional";
      const nullMeansAbsent = optional && !zc.safeParse(field, null).success;
      // Absent: a plain `.optional()` leaves the key out; any other optional key (a default, an
      // optional around a default…) is what zod makes of undefined.
      const plainOptional = defOf(field).type === "optional" && (defOf(field).innerType as zc.$ZodType)._zod.optin === undefined;
      const absent = !optional
        ? `return false;`
        : plainOptional
          ? ``
          : `const r = safeParse(${this.constant(field)}, undefined); if (!r.success) return false; if (r.data !== undefined) { w.knownKey(${encoded}, ${cost}); if (!any(w, r.data, d + 1)) return false; count++; }`;
      return `x = hasOwn(v, ${literal}) ? v[${literal}] : undefined;
if (x === undefined${nullMeansAbsent ? " || x === null" : ""}) { ${absent} } else { w.knownKey(${encoded}, ${cost}); if (!${this.node(field)}(x, d + 1)) return false; count++; }`;
    });
    return `if (v === null || typeof v !== "object" || isArray(v) || !isPlainRecord(v) || d >= MAX_DEPTH) return false;
const at = w.open();
let count = 0, x;
${fields.join("\n")}
w.close(at, count);
return true;`;
  }
}
