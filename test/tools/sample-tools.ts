import { z } from "zod";
import { defineTool, type Tool } from "../../src/tools/index.js";

/**
 * A tool with views modelled on a session_status tool: the compact record keeps identity,
 * state and follow-up fences; the full one adds lineage policy, supervision and diagnostics.
 */
export const compactSession = z.object({
  session: z.object({
    id: z.string(),
    name: z.string(),
    state: z.enum(["active", "stopped", "archived"]),
    branch: z.string().optional(),
    runtime: z.object({
      status: z.string(),
      generation: z.number().int().optional(),
      selection_revision: z.number().int(),
    }),
    pending_interactions: z.array(z.object({ interaction_id: z.string(), kind: z.string(), title: z.string() })),
    stop_reason: z.string().optional(),
    archived_at: z.string().nullable(),
  }),
});

export const fullSession = z.object({
  session: z.object({
    id: z.string(),
    name: z.string(),
    state: z.enum(["active", "stopped", "archived"]),
    branch: z.string().optional(),
    runtime: z.object({
      status: z.string(),
      generation: z.number().int().optional(),
      selection_revision: z.number().int(),
      acp_caps: z.array(z.string()),
    }),
    pending_interactions: z.array(z.object({ interaction_id: z.string(), kind: z.string(), title: z.string(), provider_request_id: z.string().optional() })),
    stop_reason: z.string().optional(),
    archived_at: z.string().nullable(),
    lineage: z.object({ root_session_id: z.string(), permission_policy: z.object({ tools: z.array(z.string()) }) }),
    diagnostics: z.record(z.string(), z.unknown()).optional(),
  }),
});

export type FullSession = z.input<typeof fullSession>;

export const sampleRecord = (): FullSession => ({
  session: {
    id: "sess-example",
    name: "Fix flaky upload test",
    state: "active",
    branch: "fix/upload-flake",
    runtime: { status: "ready", generation: 3, selection_revision: 2, acp_caps: ["fs", "terminal"] },
    pending_interactions: [{ interaction_id: "int-52c1", kind: "permission", title: "Run make test", provider_request_id: "req-9" }],
    archived_at: null,
    lineage: { root_session_id: "sess-example", permission_policy: { tools: ["read_file", "bash"] } },
    diagnostics: { last_heartbeat_ms: 120, notes: ["warm"] },
  },
});

export interface Calls {
  count: number;
  inputs: unknown[];
}

export function sessionStatusTool(calls: Calls, record: () => unknown = sampleRecord, extra: { toModelOutput?: (r: FullSession) => unknown } = {}): Tool {
  return defineTool({
    name: "session_status",
    description: "Read one session.",
    input: z.object({ session_id: z.string().describe("The session to read.") }),
    views: { compact: compactSession, full: fullSession },
    execute: (input) => {
      calls.count++;
      calls.inputs.push(input);
      return record() as FullSession;
    },
    ...extra,
  });
}

export function skillViewTool(calls: Calls): Tool {
  return defineTool({
    name: "skill_view",
    description: "Read one skill.",
    input: z.object({ skill: z.string(), max_lines: z.number().int().positive().optional() }),
    output: z.object({ name: z.string(), lines: z.number().int() }),
    execute: ({ skill }) => {
      calls.count++;
      calls.inputs.push(skill);
      return { name: skill, lines: 12, body: "not in the output schema" };
    },
  });
}

export const newCalls = (): Calls => ({ count: 0, inputs: [] });
