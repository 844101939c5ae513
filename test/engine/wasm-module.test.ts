// The host compiles the QuickJS module's code up front, and a worker it posts the module to runs
// that code instead of compiling its own; V8's lazy default is back for everything else, and a
// process started with its own choice keeps it. Checked by V8's own account of each function
// (natives syntax, in a child process), never by time.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../mcp/helpers.js";

const run = promisify(execFile);
const PROBE = join(ROOT, "test", "fixtures", "wasm-compiled.mjs");
const MODULE = pathToFileURL(join(ROOT, "dist", "src", "engine", "wasm-module.js")).href;

async function probe(...flags: string[]): Promise<{ host: boolean; worker: boolean; laterLazy: boolean }> {
  const { stdout } = await run(process.execPath, ["--allow-natives-syntax", ...flags, PROBE, MODULE], { cwd: ROOT });
  return JSON.parse(stdout);
}

describe("the compiled QuickJS module", () => {
  it("has its code compiled by the host, shared with a worker, and leaves later WASM lazy", async () => {
    expect(await probe()).toStrictEqual({ host: true, worker: true, laterLazy: true });
  });

  it("is compiled lazily where the process was started with V8's lazy compilation asked for", async () => {
    expect(await probe("--wasm-lazy-compilation")).toStrictEqual({ host: false, worker: false, laterLazy: true });
  });

  it("is compiled up front, and so is later WASM, where the process asked for no lazy compilation", async () => {
    expect(await probe("--no-wasm-lazy-compilation")).toStrictEqual({ host: true, worker: true, laterLazy: false });
  });
});
