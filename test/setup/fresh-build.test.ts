import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { staleSources } from "./fresh-build.js";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A checkout with the given files, each with its modification time in seconds. */
function checkout(files: Record<string, number>): string {
  const root = mkdtempSync(join(tmpdir(), "fresh-build-"));
  roots.push(root);
  for (const [path, seconds] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), "");
    utimesSync(join(root, path), seconds, seconds);
  }
  return root;
}

describe("the stale-build guard of the test run", () => {
  it("finds nothing when every source has a newer compiled file", () => {
    const root = checkout({ "src/a.ts": 100, "dist/src/a.js": 200, "src/engine/b.ts": 100, "dist/src/engine/b.js": 100, "bench/run.ts": 100, "dist/bench/run.js": 150 });
    expect(staleSources(root)).toStrictEqual([]);
  });

  it("names a source edited after the build, and one never built", () => {
    const root = checkout({ "src/a.ts": 300, "dist/src/a.js": 200, "src/engine/new.ts": 100, "src/ok.ts": 100, "dist/src/ok.js": 200 });
    expect(staleSources(root)).toStrictEqual(["src/a.ts", "src/engine/new.ts"]);
  });

  it("ignores declaration files and what is not TypeScript", () => {
    const root = checkout({ "src/types.d.ts": 300, "src/data.json": 300, "bench/README.md": 300 });
    expect(staleSources(root)).toStrictEqual([]);
  });

  it("holds for this checkout: the set-up built whatever was stale before these tests loaded", () => {
    // The set-up ran before this file loaded; only a source saved during the run could be newer.
    expect(staleSources(join(import.meta.dirname, "..", ".."))).toStrictEqual([]);
  });
});
