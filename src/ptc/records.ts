// The task record as programs read it: the zod schemas of the ptc tools' views (snake_case), the
// projection from the host's record, the usage line, and the camelCase record `details` carries.
import { z } from "zod";
import { DRIVER_KINDS, headPreview, LOST_REASONS, PREVIEW_BYTES, READ_ONLY_TIERS, REPORT_CHANNELS, TASK_STATUSES, type TaskHost, type TaskRecord, type Usage } from "../tasks/index.js";

export const usageSchema = z.object({
  input: z.number().describe("Input tokens, counted by the host"),
  output: z.number().describe("Output tokens, counted by the host"),
  cost: z.number().describe("USD, from the agent's prices or the driver's meter"),
  turns: z.number().int(),
});

export const reportSchema = z.object({
  summary: z.string(),
  findings: z.array(z.object({ what: z.string(), evidence: z.string() })),
  files_touched: z.array(z.string()),
  usage: usageSchema,
});

export const statusSchema = z.enum(TASK_STATUSES);
export const reportChannelSchema = z.enum(REPORT_CHANNELS);
export const readOnlyTierSchema = z.enum(READ_ONLY_TIERS);

const workerSchema = z.object({ id: z.string(), host: z.string(), pid: z.number().int() });

/** The whole task record in snake_case: what `result_view: "full"` adds. */
export const taskRecordSchema = z.object({
  id: z.string(),
  status: statusSchema,
  agent: z.string(),
  depth: z.number().int(),
  label: z.string(),
  output_bytes: z.number().int().optional(),
  output_cut_bytes: z.number().int().optional().describe("Bytes the task printed past the host's output cap that its log does not hold"),
  error_message: z.string().optional(),
  driver: z.enum(DRIVER_KINDS),
  task: z.string(),
  parent_task_id: z.string().optional(),
  background: z.boolean(),
  model: z.string().optional(),
  cwd: z.string(),
  owner: z.object({ pid: z.number().int(), start_time: z.string() }),
  created_at: z.string(),
  started_at: z.string().optional(),
  ended_at: z.string().optional(),
  duration_ms: z.number().int().optional(),
  exit_code: z.number().int().optional(),
  lost_reason: z.enum(LOST_REASONS).optional(),
  worker: workerSchema.optional().describe("The queue worker that ran the task (Redis backend)"),
  lost_attempts: z
    .array(z.object({ worker: workerSchema, started_at: z.string().optional(), lost_at: z.string(), output_bytes: z.number().int() }))
    .optional()
    .describe("Earlier attempts lost with their worker and queued again (agents with retries; Redis backend); output_bytes: where the next attempt's output starts"),
  stop_reason: z.string().optional(),
  usage: usageSchema.optional(),
  report_channel: reportChannelSchema.optional(),
  read_only_tier: readOnlyTierSchema.optional(),
  report: reportSchema.optional(),
});

export type SnakeRecord = z.input<typeof taskRecordSchema>;

const iso = (ms: number): string => new Date(ms).toISOString();

/** The snake_case projection of a record; absent fields are omitted, never null. */
export function toSnake(r: TaskRecord): SnakeRecord {
  const out: SnakeRecord = {
    id: r.id,
    status: r.status,
    agent: r.agent,
    depth: r.depth,
    label: r.label,
    driver: r.driver,
    task: r.task,
    background: r.background,
    cwd: r.cwd,
    owner: { pid: r.owner.pid, start_time: r.owner.startTime },
    created_at: iso(r.createdAt),
  };
  if (r.outputBytes > 0) out.output_bytes = r.outputBytes;
  if (r.outputCutBytes !== undefined && r.outputCutBytes > 0) out.output_cut_bytes = r.outputCutBytes;
  if (r.errorMessage !== undefined) out.error_message = r.errorMessage;
  if (r.parentId !== undefined) out.parent_task_id = r.parentId;
  if (r.model !== undefined) out.model = r.model;
  if (r.startedAt !== undefined) out.started_at = iso(r.startedAt);
  if (r.endedAt !== undefined) out.ended_at = iso(r.endedAt);
  if (r.startedAt !== undefined && r.endedAt !== undefined) out.duration_ms = r.endedAt - r.startedAt;
  if (r.exitCode !== undefined) out.exit_code = r.exitCode;
  if (r.lostReason !== undefined) out.lost_reason = r.lostReason;
  if (r.stopReason !== undefined) out.stop_reason = r.stopReason;
  if (r.usage !== undefined) out.usage = { ...r.usage };
  if (r.reportChannel !== undefined) out.report_channel = r.reportChannel;
  if (r.readOnlyTier !== undefined) out.read_only_tier = r.readOnlyTier;
  if (r.report !== undefined) out.report = structuredClone(r.report);
  if (r.worker !== undefined) out.worker = { ...r.worker };
  if (r.lostAttempts !== undefined) {
    out.lost_attempts = r.lostAttempts.map((a) => ({
      worker: { ...a.worker },
      ...(a.startedAt !== undefined ? { started_at: iso(a.startedAt) } : {}),
      lost_at: iso(a.lostAt),
      output_bytes: a.outputBytes,
    }));
  }
  return out;
}

/** The usage line of every ptc tool's text: the same four numbers as `structuredContent.usage`. */
export function usageLine(usage: Usage | undefined): string {
  if (!usage) return "usage: not recorded";
  return `usage: input=${usage.input} output=${usage.output} cost=${usage.cost} turns=${usage.turns}`;
}

export interface DetailRecord extends TaskRecord {
  /** The head of the task's output, ≤ 2 KB. */
  outputPreview: string;
}

/**
 * `details` carries camelCase records (at every depth) with a bounded output preview, for a TUI.
 * The report inside keeps its wire shape (`files_touched`): it is one object with one documented
 * shape — what a child sends, what the host stores, what structuredContent.report carries.
 */
export function detailRecord(host: TaskHost, r: TaskRecord): DetailRecord {
  const bytes = r.outputBytes > 0 ? r.outputBytes : host.store.outputSize(r.id);
  return { ...structuredClone(r), outputPreview: bytes > 0 ? headPreview(host.store.readOutput(r.id, 0, PREVIEW_BYTES + 4)) : "" };
}
