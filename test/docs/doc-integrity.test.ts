// The contract lives in docs/, and comments point there: every relative link of the pages and
// every `docs/…` reference in a comment must resolve, to a file and, when it names one, a heading.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commentDocReferences, headingAnchors, markdownLinks, referenceProblems } from "./doc-links.js";

const ROOT = join(import.meta.dirname, "..", "..");

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === "node_modules" || entry.name === "dist") return [];
    return entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)];
  });
}

const PAGES = [join(ROOT, "README.md"), join(ROOT, "SECURITY.md"), ...walk(join(ROOT, "docs")).filter((file) => file.endsWith(".md"))];
const SOURCES = ["src", "sandbox", "test"].flatMap((dir) => walk(join(ROOT, dir))).filter((file) => /\.(ts|js|mjs)$/.test(file));

describe("references in the documentation and in comments", () => {
  it("every relative link of README.md, SECURITY.md and docs/ resolves, anchors included", () => {
    expect(referenceProblems(ROOT, PAGES, [])).toStrictEqual([]);
  });

  it("every docs/… reference in a comment of src/, sandbox/ and test/ resolves, anchors included", () => {
    expect(referenceProblems(ROOT, [], SOURCES)).toStrictEqual([]);
  });

  it("every module of src/tasks, src/ptc and src/tools opens with a comment that says what it is for", () => {
    const modules = ["tasks", "ptc", "tools"].flatMap((dir) => walk(join(ROOT, "src", dir))).filter((file) => file.endsWith(".ts"));
    const bare = modules.filter((file) => !/^(\/\/|\/\*)/.test(readFileSync(file, "utf8"))).map((file) => file.slice(ROOT.length + 1));
    expect(bare).toStrictEqual([]);
  });

  it("docs/README.md lists every page of docs/", () => {
    const listed = new Set(markdownLinks(join(ROOT, "docs", "README.md")).map((link) => link.target.split("#")[0]));
    const pages = walk(join(ROOT, "docs"))
      .filter((file) => file.endsWith(".md") && dirname(file) === join(ROOT, "docs") && !file.endsWith("README.md"))
      .map((file) => file.slice(join(ROOT, "docs").length + 1));
    expect(pages.filter((page) => !listed.has(page))).toStrictEqual([]);
  });
});

describe("the checker itself", () => {
  const root = mkdtempSync(join(tmpdir(), "doc-links-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
    return join(root, path);
  };

  it("names a missing file, a missing heading and a link out of the repository, with their lines", () => {
    write("docs/b.md", "# B\n\n## The run result\n\n## `store(key, value)` / `load(key)`\n\n## Twice\n\n## Twice\n");
    const page = write(
      "docs/a.md",
      "# A\n\nSee [b](b.md#the-run-result), [store](b.md#storekey-value--loadkey), [again](b.md#twice-1), [up](../docs/b.md), [self](#a).\n\n" +
        "[gone](gone.md) and [wrong](b.md#no-such-heading)\n\n| t |\n|---|\n| [cell](missing-in-a-table.md) |\n\n[out](../../x.md) [web](https://example.com/x.md)\n\n```md\n[in code](not-a-link.md)\n```\n",
    );
    expect(referenceProblems(root, [page], [])).toStrictEqual([
      'docs/a.md:5: "gone.md": docs/gone.md does not exist',
      'docs/a.md:5: "b.md#no-such-heading": docs/b.md has no heading "#no-such-heading" (it has #b, #the-run-result, #storekey-value--loadkey, #twice, #twice-1)',
      'docs/a.md:9: "missing-in-a-table.md": docs/missing-in-a-table.md does not exist',
      'docs/a.md:11: "../../x.md" points outside the repository',
    ]);
  });

  it("reads docs/… references in comments only, never in strings or regex literals", () => {
    write("docs/limits.md", "# Limits\n\n## A run\n");
    const source = write(
      "src/x.ts",
      '// See docs/limits.md#a-run and docs/limits.md.\nconst s = "docs/not-checked.md";\nconst r = /docs\\/also-not\\.md/;\n/** docs/missing.md#x, and docs/limits.md#no-heading */\nexport const v = [s, r];\n',
    );
    expect(commentDocReferences(source).map((ref) => `${ref.line} ${ref.target}`)).toStrictEqual(["1 docs/limits.md#a-run", "1 docs/limits.md", "4 docs/missing.md#x", "4 docs/limits.md#no-heading"]);
    expect(referenceProblems(root, [], [source])).toStrictEqual([
      'src/x.ts:4: "docs/missing.md#x": docs/missing.md does not exist',
      'src/x.ts:4: "docs/limits.md#no-heading": docs/limits.md has no heading "#no-heading" (it has #limits, #a-run)',
    ]);
  });

  it("gives headings GitHub's anchors", () => {
    const page = write("docs/c.md", "# Result views: compact ⊆ full, always checked\n\n## `ptc_task_wait`: one call\n\n## What a task may ask for, and what its record keeps\n");
    expect([...headingAnchors(page)]).toStrictEqual(["result-views-compact--full-always-checked", "ptc_task_wait-one-call", "what-a-task-may-ask-for-and-what-its-record-keeps"]);
  });
});
