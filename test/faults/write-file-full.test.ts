// write_file on a full disk used to truncate the file and then fail half-way through the new
// content: the model was told "ENOSPC" and the old content was gone. Now the new content goes to
// a fresh file beside it and replaces the old one only once it is whole.
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { invokeTool, type ToolContext } from "../../src/tools/index.js";
import { workspaceTools } from "../../src/workspace/index.js";
import { cleanUp, isRoot, smallTmpfs } from "./helpers.js";

afterAll(cleanUp);

const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "c1", runId: "r1", depth: 0 });

async function outcome(root: string, input: { path: string; content: string }): Promise<unknown> {
  const write = workspaceTools({ root, write: true }).find((t) => t.name === "write_file")!;
  try {
    return { ok: (await invokeTool(write, input, { ctx: ctx() })).structuredContent };
  } catch (error) {
    const e = error as { code: string; message: string; reason?: string };
    return { code: e.code, message: e.message, reason: e.reason };
  }
}

describe("write_file on a full disk", () => {
  it.runIf(isRoot)("keeps the old content whole, says so, leaves no partial file behind, and writes once there is room", async () => {
    const root = smallTmpfs("2m");
    const old = "precious line\n".repeat(20_000); // 280 KB
    writeFileSync(join(root, "important.txt"), old);
    chmodSync(join(root, "important.txt"), 0o640);
    const big = "new line\n".repeat(400_000); // 3.6 MB: more than the disk holds
    expect(await outcome(root, { path: "important.txt", content: big })).toStrictEqual({
      code: "tool_failed",
      message: 'the disk is full: "important.txt" keeps its old content; free space (or write less) and try again',
      reason: "disk_full",
    });
    expect(readFileSync(join(root, "important.txt"), "utf8")).toBe(old);
    // A file that did not exist is not left half-written either.
    expect(await outcome(root, { path: "sub/new.txt", content: big })).toStrictEqual({
      code: "tool_failed",
      message: 'the disk is full: "sub/new.txt" was not created; free space (or write less) and try again',
      reason: "disk_full",
    });
    expect(readdirSync(root).sort()).toStrictEqual(["important.txt", "sub"]);
    expect(readdirSync(join(root, "sub"))).toStrictEqual([]);
    // What fits is written, and the file keeps its mode.
    expect(await outcome(root, { path: "important.txt", content: "short\n" })).toStrictEqual({ ok: { path: "important.txt", bytes: 6, created: false } });
    expect(readFileSync(join(root, "important.txt"), "utf8")).toBe("short\n");
    expect(statSync(join(root, "important.txt")).mode & 0o777).toBe(0o640);
  });
});
