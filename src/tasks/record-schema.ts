// What a stored task record must look like to be served. A record read back from a shared data
// dir may have been written by an older host, by a buggy one, or by hand: one that does not fit
// is set aside (quarantined) with a warning instead of stopping every command that reads tasks.
import { z } from "zod";
import { DRIVER_KINDS, LOST_REASONS, READ_ONLY_TIERS, REPORT_CHANNELS, TASK_STATUSES, type TaskRecord } from "./types.js";

export const TASK_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

const count = z.number().finite().nonnegative();
const usage = z.object({ input: count, output: count, cost: count, turns: count });
const report = z.object({
  summary: z.string(),
  findings: z.array(z.object({ what: z.string(), evidence: z.string() })),
  files_touched: z.array(z.string()),
  usage,
});
const time = z.number().finite().nonnegative();
const workerSchema = z.object({ id: z.string(), host: z.string(), pid: z.number().int() });

const recordSchema = z.object({
  id: z.string().regex(TASK_ID, "must be a 26-character ULID"),
  agent: z.string(),
  driver: z.enum(DRIVER_KINDS),
  task: z.string(),
  label: z.string(),
  depth: z.number().int().nonnegative(),
  parentId: z.string().optional(),
  background: z.boolean(),
  model: z.string().optional(),
  cwd: z.string(),
  status: z.enum(TASK_STATUSES),
  owner: z.object({ pid: z.number().int(), startTime: z.string(), hostId: z.string().optional() }),
  createdAt: time,
  startedAt: time.optional(),
  endedAt: time.optional(),
  exitCode: z.number().int().optional(),
  errorMessage: z.string().optional(),
  lostReason: z.enum(LOST_REASONS).optional(),
  stopReason: z.string().optional(),
  usage: usage.optional(),
  reportChannel: z.enum(REPORT_CHANNELS).optional(),
  readOnlyTier: z.enum(READ_ONLY_TIERS).optional(),
  report: report.optional(),
  outputBytes: count,
  outputCutBytes: count.optional(),
  processes: z.object({ pgid: z.number().int().positive(), startTime: z.string(), pidNamespace: z.string().optional() }).optional(),
  worker: workerSchema.optional(),
  lostAttempts: z.array(z.object({ worker: workerSchema, startedAt: time.optional(), lostAt: time, outputBytes: count })).optional(),
});

/** The record in a row's JSON, or the reason it cannot be served. */
export function parseRecord(json: string): { record: TaskRecord } | { problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    return { problem: `its JSON does not parse (${(err as Error).message})` };
  }
  const parsed = recordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { problem: `field "${issue.path.join(".") || "(record)"}" ${issue.message.replace(/^Invalid (input|option): /, "")}` };
  }
  return { record: value as TaskRecord };
}
