// The soak's small sibling: the same mix as bench/soak.ts, 1,000 runs on one instance.
import { describe, expect, it } from "vitest";
import { soak } from "../../bench/soak.js";

describe("soak", () => {
  it("survives 1,000 mixed runs (benign, hostile, timeouts, aborts, concurrent) without leaking", { timeout: 180_000 }, async () => {
    const report = await soak({ runs: 1_000, seed: 6 });
    expect(report.mismatches).toEqual([]);
    expect(report.sandboxFailures).toBe(0);
    expect(report.unhandled).toEqual([]);
    expect(report.moduleAborts).toBe(0);
    expect(report.finalBenignOk).toBe(true);
    for (const kind of ["benign", "busy-timeout", "abort-busy", "memory", "hard-stop", "pollution"]) expect(report.kinds[kind], kind).toBeGreaterThan(0);
    expect(report.rssAtEnd, `RSS ${report.rssAfter100.toFixed(1)} MiB after 100 runs, ${report.rssAtEnd.toFixed(1)} MiB at the end`).toBeLessThan(report.rssAfter100 * 1.5);
    expect(report.samples.at(-1)!.heapMiB).toBeLessThan(report.samples[0].heapMiB * 1.5 + 16);
  });
});
