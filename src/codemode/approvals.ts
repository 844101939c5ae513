// Approvals a person gave once and asked to remember (docs/approvals.md): kept per session, matched
// by the approval digest — the tool and its input without `result_view` (docs/tool-contract.md#hooks-and-pinned-views),
// so the same call matches whatever view it asks for, and any other input does not. In memory for
// a library instance without a data dir; with one, in `<dataDir>/approvals.json`.
import { join } from "node:path";
import { ensurePrivateDir, readRegularFile, replaceFileAtomic } from "../safe-fs.js";
import { describeReceived as describe } from "../text.js";

export type Decision = "allow" | "deny";

/** A person's answer to one pending approval: a bare decision, or one to remember for the session. */
export type ApprovalAnswerInput = Decision | { decision: Decision; remember?: boolean; reason?: string };

export interface RememberedApproval {
  session: string;
  tool: string;
  digest: string;
  decision: Decision;
  /** The input it was given for, without `result_view`: what a person reviewing the list reads. */
  input: Record<string, unknown>;
  /** When it was remembered (ISO 8601). */
  created_at: string;
}

const FILE = "approvals.json";
const MAX_FILE_BYTES = 16 * 1024 * 1024;
/** Remembered approvals kept per session; the oldest go first past it. */
const PER_SESSION = 1000;

export class RememberedApprovals {
  private entries: RememberedApproval[] = [];
  private readonly file?: string;

  constructor(private readonly dataDir: string | undefined) {
    if (dataDir) this.file = join(dataDir, FILE);
  }

  /** The remembered decision for this call in this session, if any. */
  match(session: string, digest: string): RememberedApproval | undefined {
    return this.load().find((entry) => entry.session === session && entry.digest === digest);
  }

  list(filter: { session?: string } = {}): RememberedApproval[] {
    return this.load()
      .filter((entry) => filter.session === undefined || entry.session === filter.session)
      .map((entry) => ({ ...entry, input: structuredClone(entry.input) }));
  }

  remember(entry: Omit<RememberedApproval, "created_at">): RememberedApproval {
    const entries = this.load().filter((old) => !(old.session === entry.session && old.digest === entry.digest));
    const { result_view: _view, ...input } = entry.input;
    const added: RememberedApproval = { ...entry, input, created_at: new Date().toISOString() };
    entries.push(added);
    const mine = entries.filter((old) => old.session === entry.session);
    const drop = new Set(mine.slice(0, Math.max(0, mine.length - PER_SESSION)));
    this.save(entries.filter((old) => !drop.has(old)));
    return added;
  }

  /** Forgets remembered approvals: one digest (in one session or all), or a whole session. Returns how many. */
  revoke(filter: { session?: string; digest?: string }): number {
    if (filter === null || typeof filter !== "object") throw new TypeError(`revoke(filter) takes { session?, digest? }, got ${describe(filter)}`);
    if (filter.session === undefined && filter.digest === undefined) throw new TypeError("revoke(filter): give a digest, a session, or both (revoking everything at once is not offered)");
    for (const key of ["session", "digest"] as const) {
      if (filter[key] !== undefined && (typeof filter[key] !== "string" || filter[key] === "")) throw new TypeError(`revoke(filter): ${key} must be a non-empty string, got ${describe(filter[key])}`);
    }
    const entries = this.load();
    const kept = entries.filter((entry) => !((filter.session === undefined || entry.session === filter.session) && (filter.digest === undefined || entry.digest === filter.digest)));
    if (kept.length !== entries.length) this.save(kept);
    return entries.length - kept.length;
  }

  /** The file is the truth between hosts sharing a data dir: read on every use. */
  private load(): RememberedApproval[] {
    if (!this.file) return this.entries;
    const bytes = readRegularFile(this.file, { maxBytes: MAX_FILE_BYTES });
    if (!bytes) return [];
    try {
      const parsed = JSON.parse(bytes.toString("utf8")) as { approvals?: unknown };
      return Array.isArray(parsed.approvals) ? parsed.approvals.filter(isEntry) : [];
    } catch {
      return [];
    }
  }

  private save(entries: RememberedApproval[]): void {
    if (!this.file) {
      this.entries = entries;
      return;
    }
    ensurePrivateDir(this.dataDir!);
    replaceFileAtomic(this.file, JSON.stringify({ approvals: entries }, null, 1));
  }
}

function isEntry(value: unknown): value is RememberedApproval {
  const entry = value as RememberedApproval;
  return (
    value !== null &&
    typeof value === "object" &&
    typeof entry.session === "string" &&
    typeof entry.tool === "string" &&
    typeof entry.digest === "string" &&
    (entry.decision === "allow" || entry.decision === "deny") &&
    entry.input !== null &&
    typeof entry.input === "object"
  );
}

/** A checked answer map of cm.resume()'s `approvals`. */
export function checkAnswers(value: unknown, where: string): Map<string, { decision: Decision; remember: boolean; reason?: string }> {
  const answers = new Map<string, { decision: Decision; remember: boolean; reason?: string }>();
  if (value === undefined) return answers;
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new TypeError(`${where} must be an object { [approval_id]: "allow" | "deny" | { decision, remember? } }, got ${describe(value)}`);
  for (const [id, answer] of Object.entries(value)) {
    if (answer === "allow" || answer === "deny") {
      answers.set(id, { decision: answer, remember: false });
      continue;
    }
    const a = answer as { decision?: unknown; remember?: unknown; reason?: unknown } | null;
    if (a === null || typeof a !== "object" || (a.decision !== "allow" && a.decision !== "deny")) {
      throw new TypeError(`${where}["${id}"] must be "allow", "deny" or { decision: "allow" | "deny", remember?: boolean }, got ${describe(answer)}`);
    }
    for (const key of Object.keys(a))
      if (!["decision", "remember", "reason"].includes(key)) throw new TypeError(`${where}["${id}"].${key} is not part of an answer; known: decision, remember, reason`);
    if (a.remember !== undefined && typeof a.remember !== "boolean") throw new TypeError(`${where}["${id}"].remember must be true or false, got ${describe(a.remember)}`);
    if (a.reason !== undefined && typeof a.reason !== "string") throw new TypeError(`${where}["${id}"].reason must be a string, got ${describe(a.reason)}`);
    answers.set(id, { decision: a.decision, remember: a.remember === true, ...(typeof a.reason === "string" && a.reason !== "" ? { reason: a.reason.slice(0, 500) } : {}) });
  }
  return answers;
}

/** What the interrupted result's content says: which call waits for whose decision, and how to answer. */
export function interruptedText(pending: readonly { approval_id: string; tool: string; input: Record<string, unknown> }[], resumeHint: string): string {
  const lines = pending.slice(0, LISTED_CALLS).map((p) => `- ${p.approval_id}: tools.${p.tool}(${boundedJson(p.input)})`);
  if (pending.length > LISTED_CALLS) lines.push(`- … and ${pending.length - LISTED_CALLS} more (all in structuredContent.pending_approvals)`);
  const one = pending.length === 1;
  return [
    `The program stopped before ${one ? "a call that needs" : `${pending.length} calls that need`} a person's approval; nothing of ${one ? "it" : "them"} has run:`,
    ...lines,
    `Ask the user to decide ${one ? "it" : "each"} (allow or deny), then resume: ${resumeHint}`,
    `The program runs again from the start; the calls it completed before are answered from its record, not run again. "deny" makes the call reject with code "tool_denied", reason "approval_denied". { "decision": "allow", "remember": true } also allows the same call (same tool and input) for the rest of the session.`,
  ].join("\n");
}

/** Pending calls listed in the content, and the longest input shown whole: the content is for a model. */
const LISTED_CALLS = 20;
const INPUT_CHARS = 1_000;

function boundedJson(value: unknown): string {
  const json = JSON.stringify(value) ?? "";
  return json.length > INPUT_CHARS ? `${json.slice(0, INPUT_CHARS)}… [${json.length - INPUT_CHARS} characters cut]` : json;
}
