// What a program prints with `text()`, held to the output budget.
//
// Everything is kept in memory while it fits the budget. Past it, the full text goes to a spill
// file (appended as it arrives, so a flood never sits in memory) and only a head and a tail are
// kept for the model, joined by a marker that says how much was cut and where the rest is.
import { closeSync, rmSync, writeSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { createExclusive, ensurePrivateDir } from "../safe-fs.js";
import { cutToBudget, spillNote, type BoundOutput } from "../tools/budget.js";

export interface RenderedOutput {
  text: string;
  truncated: boolean;
  totalBytes: number;
  fullOutputPath?: string;
}

export class OutputCollector {
  private parts: string[] = [];
  private bytes = 0;
  private head = "";
  private tail = "";
  private spillFd: number | undefined;
  private spillPath: string | undefined;
  private spilledBytes = 0;
  private spillCut = false;
  /** Why the spill file could not be written (ENOSPC…): the marker says so instead of naming a cut. */
  private spillFailed: string | undefined;
  private overflowed = false;

  constructor(
    private readonly budget: number,
    private readonly spillDir: string,
    private readonly runId: string,
    private readonly maxSpillBytes: number,
  ) {}

  get totalBytes(): number {
    return this.bytes;
  }

  /** Each `text()` call is one block; blocks are separated by newlines. */
  append(chunks: readonly string[]): void {
    for (const chunk of chunks) {
      const piece = this.bytes === 0 && this.parts.length === 0 && !this.overflowed ? chunk : "\n" + chunk;
      const size = Buffer.byteLength(piece);
      this.bytes += size;
      if (!this.overflowed) {
        this.parts.push(piece);
        if (this.bytes <= this.budget) continue;
        this.overflow();
      } else {
        this.keepTail(piece);
        this.spill(piece);
      }
    }
  }

  private overflow(): void {
    this.overflowed = true;
    const all = this.parts.join("");
    this.parts = [];
    this.head = all.slice(0, this.budget);
    this.tail = "";
    this.keepTail(all);
    this.spill(all);
  }

  private keepTail(piece: string): void {
    const keep = this.budget;
    this.tail = piece.length >= keep ? piece.slice(piece.length - keep) : (this.tail + piece).slice(-keep);
  }

  private spill(piece: string): void {
    if (this.spillCut) return;
    try {
      if (this.spillFd === undefined) {
        // A private directory and a new file (0600, never through a link): no one else reads
        // the full output or swaps it for their own text before the model is pointed at it.
        ensurePrivateDir(this.spillDir);
        const path = join(this.spillDir, `${this.runId}.txt`);
        this.spillFd = createExclusive(path);
        this.spillPath = path;
      }
      const room = this.maxSpillBytes - this.spilledBytes;
      const buffer = Buffer.from(piece);
      const part = buffer.length > room ? buffer.subarray(0, Math.max(0, room)) : buffer;
      // writeSync may write less than asked (a disk filling up): count only what reached the file.
      for (let at = 0; at < part.length; ) {
        const written = writeSync(this.spillFd, part, at, part.length - at);
        at += written;
        this.spilledBytes += written;
      }
      if (buffer.length > room) this.spillCut = true;
    } catch (error) {
      // A spill that cannot be written must not fail the run; the marker says what was saved.
      this.spillFailed = (error as NodeJS.ErrnoException)?.code ?? "an I/O error";
      this.spillCut = true;
    }
  }

  close(): void {
    if (this.spillFd !== undefined) {
      closeSync(this.spillFd);
      this.spillFd = undefined;
    }
  }

  /**
   * The model-visible text within `room` bytes: the shared cut (tools/budget.ts) over what was
   * kept, with a marker naming this collector's spill file. `pinnedBytes` leading bytes survive it.
   */
  render(room: number, pinnedBytes = 0): RenderedOutput {
    this.close();
    if (!this.overflowed && this.bytes <= room) {
      return { text: this.parts.join(""), truncated: false, totalBytes: this.bytes };
    }
    const full = this.overflowed ? undefined : this.parts.join("");
    if (full !== undefined) {
      this.spill(full);
      this.close();
    }
    const failure = this.spillFailed === undefined ? undefined : { code: this.spillFailed, savedBytes: this.spilledBytes };
    // Nothing of it reached the disk: no empty file is left for anyone to mistake for the output.
    if (failure !== undefined && failure.savedBytes === 0 && this.spillPath !== undefined) {
      rmSync(this.spillPath, { force: true });
      this.spillPath = undefined;
    }
    const note = spillNote(this.spillPath, this.spillCut ? this.maxSpillBytes : undefined, failure);
    const text = cutToBudget({ head: full ?? this.head, tail: full ?? this.tail, totalBytes: this.bytes }, room, note, pinnedBytes);
    return { text, truncated: true, totalBytes: this.bytes, ...(this.spillPath !== undefined ? { fullOutputPath: this.spillPath } : {}) };
  }
}

/**
 * Tool content held to the budget exactly as run output is: the same cut and marker, and the
 * whole text in a spill file of the same kind (one per cut result, under `spillDir`).
 */
export function spillingBound(spillDir: string, maxSpillBytes: number): BoundOutput {
  return (text, budget, pinnedBytes = 0) => {
    const totalBytes = Buffer.byteLength(text);
    if (totalBytes <= budget) return { text, truncated: false, totalBytes };
    const collector = new OutputCollector(budget, spillDir, `tool-${randomUUID()}`, maxSpillBytes);
    collector.append([text]);
    return collector.render(budget, pinnedBytes);
  };
}
