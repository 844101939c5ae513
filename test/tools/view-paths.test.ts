import { describe, expect, it } from "vitest";
import { z } from "zod";
import { classifyViewPath, describeTool, resolveSchemaPath, topLevelKeys, formatSegments, defineTool } from "../../src/tools/index.js";
import { compactSession, fullSession, sampleRecord } from "./sample-tools.js";

const status = defineTool({
  name: "session_status",
  description: "Read one session",
  input: z.object({ session_id: z.string() }),
  views: { compact: compactSession, full: fullSession },
  execute: () => sampleRecord(),
});
const descriptor = describeTool(status);

describe("classifyViewPath: which view carries a field", () => {
  it("a field of the compact view is ok in either view", () => {
    expect(classifyViewPath(descriptor, ["session", "id"])).toEqual({ verdict: "ok" });
    expect(classifyViewPath(descriptor, ["session", "id"], "full")).toEqual({ verdict: "ok" });
    expect(classifyViewPath(descriptor, ["session", "pending_interactions", 0, "title"])).toEqual({ verdict: "ok" });
    expect(classifyViewPath(descriptor, ["session", "pending_interactions", "0", "title"])).toEqual({ verdict: "ok" });
  });

  it("a field only the full view declares requires full when compact was selected (a session's lineage.permission_policy.tools)", () => {
    const path = ["session", "lineage", "permission_policy", "tools"];
    expect(classifyViewPath(descriptor, path)).toEqual({ verdict: "requires_full" });
    expect(classifyViewPath(descriptor, path, "full")).toEqual({ verdict: "ok" });
    expect(classifyViewPath(descriptor, ["session", "runtime", "acp_caps"])).toEqual({ verdict: "requires_full" });
  });

  it("a path into an open part of the full schema cannot be proven; one neither view has is unresolvable", () => {
    expect(classifyViewPath(descriptor, ["session", "diagnostics", "last_heartbeat_ms"], "full")).toEqual({ verdict: "unproven", declaredSegments: 2 });
    expect(classifyViewPath(descriptor, ["session", "diagnostics", "last_heartbeat_ms"])).toEqual({ verdict: "requires_full" });
    expect(classifyViewPath(descriptor, ["session", "nope"])).toEqual({ verdict: "unresolvable", missingSegment: 1 });
    expect(classifyViewPath(descriptor, ["session", "nope"], "full")).toEqual({ verdict: "unresolvable", missingSegment: 1 });
    expect(classifyViewPath(descriptor, ["session", "id", "length"])).toEqual({ verdict: "unresolvable", missingSegment: 2 });
  });

  it("single-result tools are resolved in their one schema; untyped tools have no schema", () => {
    const single = describeTool(
      defineTool({
        name: "one",
        description: "d",
        input: z.object({}),
        output: z.object({ rows: z.array(z.object({ n: z.number() })), meta: z.record(z.string(), z.unknown()) }),
        execute: () => ({ rows: [], meta: {} }),
      }),
    );
    expect(classifyViewPath(single, ["rows", 3, "n"])).toEqual({ verdict: "ok" });
    expect(classifyViewPath(single, ["rows", 3, "m"])).toEqual({ verdict: "unresolvable", missingSegment: 2 });
    expect(classifyViewPath(single, ["meta", "x", "y"])).toEqual({ verdict: "unproven", declaredSegments: 1 });
    expect(classifyViewPath({}, ["anything"])).toEqual({ verdict: "no_schema" });
  });
});

describe("resolveSchemaPath", () => {
  it("follows $ref, nullable and union branches, taking the best answer", () => {
    const schema = {
      type: "object",
      properties: {
        a: { anyOf: [{ type: "null" }, { type: "object", properties: { b: { type: "string" } }, additionalProperties: false }] },
        u: {
          anyOf: [
            { type: "object", properties: { x: { type: "number" } }, additionalProperties: false },
            { type: "object", properties: { y: { $ref: "#/$defs/Node" } }, additionalProperties: false },
          ],
        },
        tuple: { type: "array", prefixItems: [{ type: "string" }, { type: "object", properties: { k: { type: "number" } }, additionalProperties: false }], items: false },
      },
      additionalProperties: false,
      $defs: { Node: { type: "object", properties: { next: { $ref: "#/$defs/Node" }, v: { type: "number" } }, additionalProperties: false } },
    };
    expect(resolveSchemaPath(schema, ["a", "b"])).toEqual({ status: "declared" });
    expect(resolveSchemaPath(schema, ["u", "y", "next", "next", "v"])).toEqual({ status: "declared" });
    expect(resolveSchemaPath(schema, ["u", "z"])).toEqual({ status: "absent", at: 1 });
    expect(resolveSchemaPath(schema, ["tuple", 1, "k"])).toEqual({ status: "declared" });
    expect(resolveSchemaPath(schema, ["tuple", 2])).toEqual({ status: "absent", at: 1 });
    expect(resolveSchemaPath(true, ["x"])).toEqual({ status: "open", at: 0 });
  });

  it("names top-level keys and formats paths as a program writes them", () => {
    expect(topLevelKeys(descriptor.output_views!.compact.schema)).toEqual(["session"]);
    expect(formatSegments(["tasks", 0, "my-key", "id"])).toBe('tasks[0]["my-key"].id');
  });
});
