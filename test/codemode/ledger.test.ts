// The bounded parts of approvals on their own: the clock record, the call prefix the prelude
// writes, the continuation vault's limits and files, and remembered approvals per session.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RememberedApprovals } from "../../src/codemode/approvals.js";
import { ContinuationVault, MAX_SIGNED_BYTES, newContinuationId, type SuspendedRun } from "../../src/codemode/continuation.js";
import { ClockRecord, Replayer, splitClock } from "../../src/codemode/ledger.js";
import { DEFAULT_LIMITS } from "../../src/index.js";

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cm-ledger-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function state(over: Partial<SuspendedRun> = {}): SuspendedRun {
  return {
    v: 1,
    id: newContinuationId(),
    run_id: "r",
    session: "default",
    code: "1",
    code_digest: "d",
    seed: [1, 2, 3, 4],
    clock: [],
    calls: [],
    pending: [],
    options: { limits: { ...DEFAULT_LIMITS } },
    created_at: Date.now(),
    expires_at: Date.now() + 60_000,
    ...over,
  };
}

describe("the clock record", () => {
  it("merges repeats, ignores what is not a list of [value, repeats] pairs, and stops at its cap", () => {
    const clock = new ClockRecord();
    clock.add([5, 2]);
    clock.add([5, 1, 6, 1]);
    clock.add("nonsense");
    clock.add([7]);
    clock.add([8, 0]);
    clock.add([Infinity, 1]);
    expect(clock.pairs).toStrictEqual([5, 3, 6, 1]);
    const big = new ClockRecord();
    const readings: number[] = [];
    for (let i = 0; i < 200_010; i++) readings.push(i, 1);
    big.add(readings);
    expect(big.pairs.length).toBe(400_000);
    expect(big.pairs.slice(-2)).toStrictEqual([199_999, 1]);
  });

  it("the prelude's prefix is split off the arguments; anything else is left as it is", () => {
    expect(splitClock(`~[1,2]~{"a":1}`)).toStrictEqual({ args: `{"a":1}`, readings: [1, 2] });
    expect(splitClock(`{"a":"~"}`)).toStrictEqual({ args: `{"a":"~"}` });
    expect(splitClock(`~not json~{}`)).toStrictEqual({ args: "{}", readings: undefined });
    expect(splitClock(`~unterminated`)).toStrictEqual({ args: "~unterminated" });
  });

  it("the replayer answers recorded calls by number and names the first call that differs", () => {
    const replayer = new Replayer([{ seq: 1, path: "a", args: "{}", ok: true, json: "1", order: 0, at: 0 }]);
    expect(replayer.match(2, "b", "{}")).toStrictEqual({ kind: "live" });
    expect(replayer.match(1, "a", `{"x":1}`)).toStrictEqual({
      kind: "diverged",
      message: `call 1 of the resumed program is tools.a({"x":1}), but the run it continues made tools.a({}) there; a resumed program must make the same calls with the same arguments up to the approval (no host call was run)`,
    });
  });
});

describe("the continuation vault", () => {
  it("refuses a signing key shorter than 32 bytes and a continuation longer than any it issues", () => {
    expect(() => new ContinuationVault({ key: "short" })).toThrow("options.approvals.key must be a string or Buffer of at least 32 bytes (a random secret), got 5 bytes");
    const vault = new ContinuationVault();
    expect(() => vault.peek("cmc1.s." + "a".repeat(MAX_SIGNED_BYTES))).toThrow(/^this is not a continuation/);
  });

  it("a signed state past 1 MiB is refused when sealed, and the vault keeps working", () => {
    const vault = new ContinuationVault({ key: "k".repeat(32) });
    // Random bytes do not deflate: results the program received before the gate are often like that.
    const noise = randomBytes(900 * 1024).toString("base64");
    expect(() => vault.seal(state({ code: noise }))).toThrow(/^the run's state \(\d+ bytes signed\) is more than a signed continuation may carry \(1048576\)/);
    const small = state();
    expect(vault.peek(vault.seal(small))).toStrictEqual(small);
  });

  it("a kept state replaced by a link in the data dir is refused as tampered; a used one leaves a tombstone other hosts honour", () => {
    const dir = tempDir();
    const vault = new ContinuationVault({ dir });
    const kept = state();
    const token = vault.seal(kept);
    const other = new ContinuationVault({ dir });
    other.claim(other.peek(token));
    expect(() => vault.peek(token)).toThrow("this continuation was already used");
    const planted = state();
    const plantedToken = vault.seal(planted);
    const target = join(dir, "elsewhere.json");
    writeFileSync(target, JSON.stringify(planted));
    rmSync(join(dir, `${planted.id}.json`));
    symlinkSync(target, join(dir, `${planted.id}.json`));
    expect(() => vault.peek(plantedToken)).toThrow(/^this continuation's state in the data dir was replaced/);
  });
});

describe("remembered approvals", () => {
  it("keep the latest 1,000 per session, dropping the oldest, and never another session's", () => {
    const remembered = new RememberedApprovals(undefined);
    remembered.remember({ session: "other", tool: "t", digest: "keep", decision: "allow", input: {} });
    for (let i = 0; i < 1005; i++) remembered.remember({ session: "s", tool: "t", digest: `d${i}`, decision: "allow", input: { i, result_view: "full" } });
    const listed = remembered.list({ session: "s" });
    expect(listed.length).toBe(1000);
    expect(listed[0]!.digest).toBe("d5");
    expect(listed[0]!.input).toStrictEqual({ i: 5 });
    expect(remembered.match("other", "keep")?.decision).toBe("allow");
    expect(remembered.match("s", "d0")).toBeUndefined();
  });
});
