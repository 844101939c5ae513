// Every write to a task's output goes through here: the per-task output cap (what was cut is
// written into the log and counted on the record) and turning a refused write (ENOSPC, EROFS,
// EIO) into that task's failure instead of an exception thrown inside a child's stdout handler,
// which took the whole host down.
import { formatBytes, messageOf } from "../text.js";
import { alignBackward, alignForward } from "./output.js";
import type { TaskStore } from "./store.js";

/** Room kept for the notes the cap writes. */
const NOTE_BYTES = 512;
/** How much of the end of a cut output is kept, at most (a report fence sits at the very end). */
const TAIL_BYTES = 64 * 1024;
/** The smallest output cap: room for a head, both notes and a tail. */
export const MIN_OUTPUT_CAP = 4096;

export class TaskLog {
  /** Bytes in the log. */
  written: number;
  /** Bytes the child printed that the log does not hold (set once the cap was reached). */
  private dropped = 0;
  private cutAt: number | undefined;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private failed: string | undefined;
  private readonly headLimit: number;
  private readonly tailLimit: number;

  constructor(
    private readonly store: TaskStore,
    private readonly id: string,
    private readonly maxBytes: number,
    /** Called once, with the reason, when the store refuses a write. */
    private readonly onFailure: (reason: string) => void,
  ) {
    this.written = store.outputSize(id);
    this.tailLimit = Math.min(TAIL_BYTES, Math.floor(maxBytes / 4));
    this.headLimit = maxBytes - this.tailLimit - 2 * NOTE_BYTES;
  }

  /** Output bytes the cap dropped so far. */
  get cutBytes(): number {
    return this.dropped;
  }

  get failure(): string | undefined {
    return this.failed;
  }

  write(text: string): void {
    if (this.failed !== undefined || text.length === 0) return;
    const bytes = Buffer.from(text, "utf8");
    if (this.cutAt !== undefined) {
      this.keepTail(bytes);
      return;
    }
    const room = this.headLimit - this.written;
    if (bytes.length <= room) {
      this.append(bytes);
      return;
    }
    const keep = alignBackward(bytes, Math.max(0, room));
    this.cutAt = this.written + keep;
    const note = `\n[output cut: this task printed more than ${formatBytes(this.maxBytes)}, the host's limit for one task (tasks.maxOutputBytes); later output is dropped, and its last ${formatBytes(this.tailLimit)} is added here when the task ends]\n`;
    this.append(Buffer.concat([bytes.subarray(0, keep), Buffer.from(note)]));
    this.keepTail(bytes.subarray(keep));
  }

  /** Once the task ended: the newest output the cap dropped, after a line saying how much is missing. */
  finish(): void {
    if (this.cutAt === undefined || this.failed !== undefined) return;
    const all = Buffer.concat(this.tail, this.tailBytes);
    const tail = all.subarray(alignForward(all, Math.max(0, all.length - this.tailLimit)));
    this.dropped -= tail.length;
    this.tail = [];
    this.append(Buffer.concat([Buffer.from(`[… ${this.dropped} bytes (${formatBytes(this.dropped)}) of output not kept …]\n`), tail]));
  }

  private keepTail(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.dropped += bytes.length;
    const keep = bytes.length > this.tailLimit ? bytes.subarray(bytes.length - this.tailLimit) : bytes;
    this.tail.push(Buffer.from(keep));
    this.tailBytes += keep.length;
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= this.tailLimit) this.tailBytes -= this.tail.shift()!.length;
  }

  private append(bytes: Buffer): void {
    try {
      this.store.appendOutput(this.id, bytes);
      this.written += bytes.length;
    } catch (err) {
      const path = this.store.outputPath(this.id);
      const code = (err as NodeJS.ErrnoException).code;
      this.failed = `the host could not write this task's output${path ? ` to ${path}` : ""} (${messageOf(err)})${advice(code)}; the task was stopped. Its output up to that point is kept`;
      this.onFailure(this.failed);
    }
  }
}

function advice(code: string | undefined): string {
  if (code === "ENOSPC" || code === "EDQUOT") return "; free space on that disk (or lower tasks.maxOutputBytes), then spawn the task again";
  if (code === "EROFS" || code === "EACCES" || code === "EPERM") return "; the data dir is not writable: give the host a writable dataDir";
  return "";
}
