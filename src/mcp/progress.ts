// Progress of one tools/call whose client sent a progressToken: what the tool itself reports while
// it runs (`ctx.progress`: a program's output so far) and, for the tools that start subagents,
// the tasks started since the call began (each status change, the output so far). Changes are
// gathered and sent as notifications/progress at most every interval, while the call runs.
//
// Nothing is sent at the end, and the result waits a moment after the last notification: the MCP
// SDK's client dispatches a notification a microtask later than a response read in the same
// chunk, so progress written just before the result reaches it after the request has closed, as
// a protocol error ("unknown token"; some clients drop the connection over it). The result says
// how the call ended anyway.
//
// The task host does not record which call started a top-level task: calls that run at the same
// time on one server each hear of the tasks the others start.
import type { TaskHost, TaskRecord } from "../tasks/index.js";
import { formatBytes, summaryLine } from "../text.js";

export interface ProgressUpdate {
  /** Grows by one per notification, as MCP requires. */
  progress: number;
  message: string;
}

/** Task changes one tick describes; the rest are counted in one more notification. */
const MAX_PER_TICK = 10;
/** How long the result waits after the last notification, so the client reads them apart. */
const QUIET_MS = 100;
const LINE_CHARS = 200;

export class CallProgress {
  private count = 0;
  private reported: string | undefined;
  private readonly seen = new Map<string, { status: string; bytes: number }>();
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> = Promise.resolve();
  private readonly since = Date.now();
  private done = false;
  private lastSent = 0;

  /** @param host the task host to watch, for tools that start subagents; absent for the others. */
  constructor(
    private readonly host: TaskHost | undefined,
    private readonly send: (update: ProgressUpdate) => Promise<void>,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** What the tool says it is doing; only the latest word before a tick is sent. */
  readonly report = (message: string): void => {
    if (!this.done) this.reported = message;
  };

  /** Stops sending; resolves once what was sent is written and the client has had a moment to read it apart from the result. */
  async finish(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.done = true;
    await this.sending;
    const quiet = this.lastSent === 0 ? 0 : QUIET_MS - (Date.now() - this.lastSent);
    if (quiet > 0) await new Promise((resolve) => setTimeout(resolve, quiet));
  }

  private tick(): void {
    if (this.done) return;
    const messages = this.taskChanges();
    if (this.reported !== undefined) messages.push(this.reported);
    this.reported = undefined;
    for (const message of messages) {
      const update = { progress: ++this.count, message };
      // In order, one at a time; a client that went away costs nothing but the failed write.
      this.sending = this.sending
        .then(() => this.send(update))
        .then(() => void (this.lastSent = Date.now()))
        .catch(() => undefined);
    }
  }

  private taskChanges(): string[] {
    if (!this.host) return [];
    let records: TaskRecord[];
    try {
      records = this.host.list({ limit: 1000 }).records.filter((record) => record.createdAt >= this.since);
    } catch {
      return []; // a closed host: the call is ending anyway
    }
    const changed = records.filter((record) => {
      const before = this.seen.get(record.id);
      return !before || before.status !== record.status || before.bytes !== record.outputBytes;
    });
    // Only the first few are described (each may read its log); the rest are counted.
    const changes = changed.slice(0, MAX_PER_TICK).map((record) => this.describe(record, this.seen.get(record.id)?.bytes ?? 0));
    if (changed.length > MAX_PER_TICK) changes.push(`… and ${changed.length - MAX_PER_TICK} more tasks changed`);
    for (const record of changed) this.seen.set(record.id, { status: record.status, bytes: record.outputBytes });
    return changes;
  }

  private describe(record: TaskRecord, bytesBefore: number): string {
    let text = `task ${record.id} (${record.agent}, "${summaryLine(record.label, 60)}"): ${record.status}`;
    if (record.outputBytes > 0) text += `, ${formatBytes(record.outputBytes)} of output`;
    if (record.outputBytes > bytesBefore) {
      const line = this.lastLine(record.id, bytesBefore);
      if (line !== undefined) text += `, last line: ${summaryLine(line, LINE_CHARS)}`;
    }
    if (record.errorMessage) text += `: ${summaryLine(record.errorMessage, LINE_CHARS)}`;
    return text;
  }

  /** The last non-blank line of what the task wrote since `sinceBytes` (its whole tail if that offset splits a character). */
  private lastLine(id: string, sinceBytes: number): string | undefined {
    let output: string;
    try {
      output = this.host!.output(id, { sinceBytes }).output;
    } catch {
      try {
        output = this.host!.output(id).output;
      } catch {
        return undefined;
      }
    }
    const tail = output.trimEnd();
    return tail === "" ? undefined : tail.slice(tail.lastIndexOf("\n") + 1);
  }
}
