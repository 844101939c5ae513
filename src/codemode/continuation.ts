// Continuations (docs/approvals.md): the opaque string an interrupted run hands back, from which
// cm.resume() continues it. Nobody can forge one. With a signing key, the continuation carries
// the run's state itself, deflated and signed (HMAC-SHA256), with an expiry; without one, the
// state stays with the host (in the data dir, or in memory without one) under an unguessable id,
// and the continuation is that id. Either is usable once: the host remembers which it consumed.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { createExclusive, ensurePrivateDir, readRegularFile, removeFile, replaceFileAtomic, UnsafeFileError } from "../safe-fs.js";
import type { Limits } from "./limits.js";
import { zlib } from "../node-builtins.js";
import type { ResultView } from "../tools/index.js";
import type { LedgerCall } from "./ledger.js";

/** A call that waits for a person's decision, as the interrupted result lists it. */
export interface PendingApproval {
  approval_id: string;
  /** The tool's id (what hooks and remembered approvals name). */
  tool: string;
  /** The input as sent, `result_view` included. */
  input: Record<string, unknown>;
  /** `approvalDigest(tool, input)`: the input without `result_view`. */
  digest: string;
}

/** Everything a resumed run needs: the program, its seed and clock, and the calls it completed. */
export interface SuspendedRun {
  v: 1;
  /** The continuation's own id: what "usable once" is kept by. */
  id: string;
  /** The run's id, kept across every resume (the idempotency keys are built from it). */
  run_id: string;
  session: string;
  /** The program as it was sent. */
  code: string;
  code_digest: string;
  seed: number[];
  clock: number[];
  calls: LedgerCall[];
  /** With the sequence number of the call each one stopped. */
  pending: Array<PendingApproval & { seq: number; path: string }>;
  /** The run's limits and default view: a resumed run keeps them. */
  options: { limits: Limits; resultView?: ResultView };
  created_at: number;
  expires_at: number;
}

export type ContinuationReason = "malformed" | "unknown" | "tampered" | "expired" | "used" | "program_changed" | "diverged" | "too_large" | "session_mismatch";

/** A continuation that cannot be resumed: `code` is always "continuation_invalid", `reason` says why. */
export class ContinuationError extends Error {
  override readonly name = "ContinuationError";
  readonly code = "continuation_invalid";
  constructor(
    readonly reason: ContinuationReason,
    message: string,
  ) {
    super(message);
  }
}

export interface VaultOptions {
  /** Sign continuations with this key (≥ 32 bytes) and carry the state in them; absent: keep the state here. */
  key?: string | Buffer;
  /** How long a continuation stays usable (default 24 hours). */
  ttlMs?: number;
  /** Where kept states and the record of used continuations live: `<dataDir>/continuations`; absent: memory. */
  dir?: string;
}

export const DEFAULT_CONTINUATION_TTL_MS = 24 * 60 * 60 * 1000;
/** The longest continuation string handed out (a signed one carries the whole ledger). */
export const MAX_SIGNED_BYTES = 1024 * 1024;
/** The largest state kept for a continuation (the ledger holds the results of completed calls). */
export const MAX_KEPT_BYTES = 64 * 1024 * 1024;
const PREFIX_SIGNED = "cmc1.s.";
const PREFIX_KEPT = "cmc1.k.";
const ID = /^[0-9a-f]{32}$/;

export function newContinuationId(): string {
  return randomBytes(16).toString("hex");
}

export function codeDigest(code: string): string {
  return createHash("sha256").update(code, "utf8").digest("hex");
}

export class ContinuationVault {
  private readonly key?: Buffer;
  readonly ttlMs: number;
  private readonly dir?: string;
  /** Without a data dir: kept states, and ids already used. */
  private readonly kept = new Map<string, string>();
  private readonly used = new Set<string>();

  constructor(options: VaultOptions = {}) {
    if (options.key !== undefined) {
      const key = typeof options.key === "string" ? Buffer.from(options.key, "utf8") : options.key;
      if (!Buffer.isBuffer(key) || key.length < 32)
        throw new TypeError(`options.approvals.key must be a string or Buffer of at least 32 bytes (a random secret), got ${Buffer.isBuffer(key) ? `${key.length} bytes` : typeof options.key}`);
      this.key = Buffer.from(key);
    }
    const ttl = options.ttlMs ?? DEFAULT_CONTINUATION_TTL_MS;
    if (!Number.isSafeInteger(ttl) || ttl < 1000) throw new RangeError(`options.approvals.ttlMs must be an integer number of milliseconds ≥ 1000, got ${String(ttl)}`);
    this.ttlMs = ttl;
    this.dir = options.dir;
  }

  /** The continuation of `state`; throws ContinuationError("too_large") past the bounds. */
  seal(state: SuspendedRun): string {
    const json = JSON.stringify(state);
    if (this.key) {
      const payload = zlib().deflateRawSync(json).toString("base64url");
      const token = `${PREFIX_SIGNED}${payload}.${this.sign(PREFIX_SIGNED + payload)}`;
      if (token.length > MAX_SIGNED_BYTES) {
        throw new ContinuationError(
          "too_large",
          `the run's state (${token.length} bytes signed) is more than a signed continuation may carry (${MAX_SIGNED_BYTES}); the results the program received before the approval are too large — configure no signing key so the state is kept in the data dir`,
        );
      }
      return token;
    }
    if (Buffer.byteLength(json) > MAX_KEPT_BYTES) {
      throw new ContinuationError(
        "too_large",
        `the run's state (${Buffer.byteLength(json)} bytes) is more than a continuation may keep (${MAX_KEPT_BYTES}); the results the program received before the approval are too large`,
      );
    }
    if (this.dir) {
      const dir = ensurePrivateDir(this.dir);
      this.prune(dir);
      replaceFileAtomic(join(dir, `${state.id}.json`), json);
    } else {
      this.kept.set(state.id, json);
    }
    return PREFIX_KEPT + state.id;
  }

  /** The state behind a continuation, checked (form, signature, expiry, not used) but not consumed. */
  peek(token: unknown, now = Date.now()): SuspendedRun {
    if (typeof token !== "string" || token.length > MAX_SIGNED_BYTES) throw malformed();
    let state: SuspendedRun;
    if (token.startsWith(PREFIX_SIGNED)) {
      if (!this.key) throw new ContinuationError("unknown", "this continuation is signed, but this runtime has no signing key (options.approvals.key): resume it where it was made");
      const body = token.slice(PREFIX_SIGNED.length);
      const dot = body.lastIndexOf(".");
      if (dot < 0) throw malformed();
      const payload = body.slice(0, dot);
      const given = Buffer.from(body.slice(dot + 1), "base64url");
      const expected = Buffer.from(this.sign(PREFIX_SIGNED + payload), "base64url");
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw tampered();
      try {
        state = JSON.parse(zlib().inflateRawSync(Buffer.from(payload, "base64url"), { maxOutputLength: MAX_KEPT_BYTES }).toString("utf8")) as SuspendedRun;
      } catch {
        throw tampered();
      }
    } else if (token.startsWith(PREFIX_KEPT)) {
      const id = token.slice(PREFIX_KEPT.length);
      if (!ID.test(id)) throw malformed();
      if (this.wasUsed(id)) throw usedError();
      let json: string | undefined;
      try {
        json = this.dir ? readRegularFile(join(this.dir, `${id}.json`), { maxBytes: MAX_KEPT_BYTES })?.toString("utf8") : this.kept.get(id);
      } catch (error) {
        // A link, a FIFO or an oversized file in its place was not written by this runtime.
        if (error instanceof UnsafeFileError) throw new ContinuationError("tampered", `this continuation's state in the data dir was replaced (${error.message}); run the program again`);
        throw error;
      }
      if (json === undefined)
        throw new ContinuationError("unknown", "this continuation is unknown here: it was never issued by this runtime (or its data dir), or its state was removed; run the program again");
      try {
        state = JSON.parse(json) as SuspendedRun;
      } catch {
        throw tampered();
      }
      if (state.id !== id) throw tampered();
    } else {
      throw malformed();
    }
    if (state?.v !== 1 || typeof state.id !== "string" || !ID.test(state.id)) throw tampered();
    if (this.wasUsed(state.id)) throw usedError();
    if (!(now <= state.expires_at)) {
      throw new ContinuationError(
        "expired",
        `this continuation expired at ${new Date(state.expires_at).toISOString()} (continuations stay usable ${Math.round(this.ttlMs / 60000)} minutes); run the program again`,
      );
    }
    return state;
  }

  /** Marks the continuation used, exactly once: a second claim (here or by another host on the data dir) throws "used". */
  claim(state: SuspendedRun): void {
    if (this.dir) {
      const dir = ensurePrivateDir(this.dir);
      // The tombstone is created exclusively: of two hosts resuming at once, one wins.
      let fd: number;
      try {
        fd = createExclusive(join(dir, `${state.id}.used`));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") throw usedError();
        throw error;
      }
      closeSync(fd);
      removeFile(join(dir, `${state.id}.json`));
    } else {
      if (this.used.has(state.id)) throw usedError();
      this.kept.delete(state.id);
    }
    this.used.add(state.id);
  }

  private wasUsed(id: string): boolean {
    if (this.used.has(id)) return true;
    if (!this.dir) return false;
    try {
      statSync(join(this.dir, `${id}.used`));
      return true;
    } catch {
      return false;
    }
  }

  private sign(text: string): string {
    return createHmac("sha256", this.key!).update(text, "utf8").digest("base64url");
  }

  /** Kept states and tombstones older than the expiry are of no use: removed as new ones are made. */
  private prune(dir: string): void {
    const cutoff = Date.now() - this.ttlMs;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!/^[0-9a-f]{32}\.(json|used)$/.test(name)) continue;
      try {
        const path = join(dir, name);
        if (statSync(path).mtimeMs < cutoff) removeFile(path);
      } catch {
        // Another host pruned it first.
      }
    }
  }
}

function malformed(): ContinuationError {
  return new ContinuationError("malformed", `this is not a continuation: pass the "continuation" string of an interrupted run's structuredContent exactly as it was returned`);
}

function tampered(): ContinuationError {
  return new ContinuationError("tampered", "this continuation was altered (its signature or contents do not check out); pass it exactly as it was returned, or run the program again");
}

function usedError(): ContinuationError {
  return new ContinuationError("used", "this continuation was already used: a continuation resumes its run once; the resumed run returns its own result (and a new continuation if it stops again)");
}
