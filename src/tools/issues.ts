// zod's issues as one message a model can act on: the path it would write, what was expected, what
// it sent.
import type * as zc from "zod/v4/core";
import { describeValue } from "./errors.js";

/** `a.b[0].c`: the path a model would write to reach the field. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (typeof segment === "string" && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(segment)) out += out === "" ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let current = root;
  for (const segment of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment as string];
  }
  return current;
}

function describeIssue(issue: zc.$ZodIssue, root: unknown): string {
  const received = valueAt(root, issue.path);
  switch (issue.code) {
    case "invalid_type":
      return received === undefined && issue.path.length > 0 ? `is required: expected ${issue.expected}, received undefined` : `must be ${issue.expected}, received ${describeValue(received)}`;
    case "invalid_value":
      return `must be ${issue.values.length === 1 ? "" : "one of "}${issue.values.map((v) => JSON.stringify(v) ?? String(v)).join(", ")}, received ${JSON.stringify(received) ?? describeValue(received)}`;
    case "unrecognized_keys":
      return `has unknown key${issue.keys.length === 1 ? "" : "s"} ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}`;
    case "invalid_union": {
      const extra = issue as unknown as { options?: unknown[]; errors?: zc.$ZodIssue[][] };
      // A discriminated union names the tag values it accepts.
      if (Array.isArray(extra.options) && extra.options.length > 0) {
        return `must be one of ${extra.options.map((v) => JSON.stringify(v) ?? String(v)).join(", ")}, received ${JSON.stringify(received) ?? describeValue(received)}`;
      }
      // A plain union: when every option failed on the value's type, list those types.
      const expected = (extra.errors ?? []).map((errs) => errs.find((e) => e.code === "invalid_type" && e.path.length === 0));
      if (expected.length > 0 && expected.every((e) => e !== undefined)) {
        const names = [...new Set(expected.map((e) => (e as zc.$ZodIssueInvalidType).expected))];
        return `must be ${names.join(" or ")}, received ${describeValue(received)}`;
      }
      return `does not match any allowed shape, received ${describeValue(received)}`;
    }
    default:
      return `is invalid: ${issue.message}`;
  }
}

/**
 * A union whose value had the right type for exactly one option failed inside that option: its
 * nested issues (with full paths) say more than "does not match any allowed shape".
 */
function expand(issue: zc.$ZodIssue): zc.$ZodIssue[] {
  if (issue.code !== "invalid_union") return [issue];
  const errors = (issue as unknown as { errors?: zc.$ZodIssue[][] }).errors ?? [];
  const typeMatched = errors.filter((errs) => errs.length > 0 && !errs.some((e) => e.path.length === 0 && (e.code === "invalid_type" || e.code === "invalid_value")));
  if (typeMatched.length !== 1) return [issue];
  return typeMatched[0]!.flatMap((e) => expand({ ...e, path: [...issue.path, ...e.path] } as zc.$ZodIssue));
}

const MAX_LISTED = 5;

/**
 * Issues as one line a model can act on: each names the field, what was expected and what was
 * received. `subject` is how the value is introduced, e.g. `tool "x" input`.
 */
export function formatIssues(subject: string, reported: readonly zc.$ZodIssue[], root: unknown): string {
  const issues = reported.flatMap(expand);
  const parts = issues.slice(0, MAX_LISTED).map((issue) => {
    const at = formatPath(issue.path);
    return `${subject}${at === "" ? "" : ` "${at}"`} ${describeIssue(issue, root)}`;
  });
  if (issues.length > MAX_LISTED) parts.push(`and ${issues.length - MAX_LISTED} more problem${issues.length - MAX_LISTED === 1 ? "" : "s"}`);
  return parts.join("; ");
}
