// What a `codemode run` process loads: the MCP SDK only when the configuration names MCP servers
// to connect (loading it was ~100-150 ms of every command's start), and the terminal libraries
// only when there is a terminal to draw on (~30 ms of the CLI bundle's import). Checked by the
// modules the process loaded (test/fixtures/loads-probe.mjs) and the packages bundled into them,
// never by time.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { noUpstreams } from "../../src/cli/runtime.js";
import { connectUpstreams } from "../../src/mcp/upstream.js";
import { inventoryConfig, ROOT, runCli, tempProject, type CliResult } from "../mcp/helpers.js";

const PROBE = pathToFileURL(join(ROOT, "test", "fixtures", "loads-probe.mjs")).href;
const SDK = "node_modules/@modelcontextprotocol/sdk/";
/** What the task table and the progress view draw with. */
const TERMINAL = ["cli-table3", "log-update", "cli-truncate", "string-width", "picocolors", "wrap-ansi", "slice-ansi"];

/** Packages bundled into the loaded chunks of dist/bundle: rolldown heads each module with its path (`// node_modules/yaml/dist/index.js`). */
function bundledPackages(loaded: readonly string[]): Set<string> {
  const packages = new Set<string>();
  for (const url of loaded.filter((entry) => entry.startsWith("file:") && entry.includes("/dist/bundle/"))) {
    for (const match of readFileSync(fileURLToPath(url), "utf8").matchAll(/^\/\/ \S*node_modules\/((?:@[^/]+\/)?[^/\s]+)\//gm)) packages.add(match[1]!);
  }
  return packages;
}

async function probedRun(config: unknown, program: string): Promise<CliResult & { loaded: string[] }> {
  const cwd = tempProject(config, { "prog.js": program });
  const out = join(mkdtempSync(join(tmpdir(), "codemode-loads-")), "loaded.txt");
  const result = await runCli(["run", "prog.js"], { cwd, env: { NODE_OPTIONS: `--import=${PROBE}`, LOADS_OUT: out } });
  return { ...result, loaded: readFileSync(out, "utf8").split("\n").filter(Boolean) };
}

describe("codemode run", () => {
  it("without MCP servers loads none of the MCP SDK", async () => {
    const run = await probedRun({}, `text("hi")`);
    expect([run.code, run.stdout, run.stderr]).toStrictEqual([0, "hi\n", ""]);
    // The probe saw the process's modules (the CLI's own bundle among them).
    expect(run.loaded.some((url) => url.includes("/dist/bundle/cli/main.js"))).toBe(true);
    expect(run.loaded.filter((url) => url.includes(SDK))).toStrictEqual([]);
  });

  it("without a terminal loads none of the terminal libraries", async () => {
    // (Progress lines with CODEMODE_PROGRESS=1, which load them, are test/cli/tasks.test.ts's.)
    const run = await probedRun({}, `text("hi")`);
    expect([run.code, run.stdout]).toStrictEqual([0, "hi\n"]);
    // The bundle's chunks were read (zod is bundled into them), and none of the terminal's.
    const bundled = bundledPackages(run.loaded);
    expect(bundled.has("zod")).toBe(true);
    expect(TERMINAL.filter((name) => bundled.has(name))).toStrictEqual([]);
  });

  it("with an MCP server configured loads the SDK's client and binds the server's tools", async () => {
    const run = await probedRun(inventoryConfig(), `const item = await tools.inventory.get_item({ sku: "A-1" }); text(\`\${item.name} x\${item.stock}\`);`);
    expect([run.code, run.stdout]).toStrictEqual([0, "anvil x3\n"]);
    expect(run.loaded.some((url) => url.includes(`${SDK}dist/esm/client/`))).toBe(true);
  });
});

describe("no upstream servers", () => {
  it("is what connecting none gives", async () => {
    const { close: closeNone, ...none } = noUpstreams();
    const { close, ...connected } = await connectUpstreams({});
    expect(none).toStrictEqual(connected);
    await expect(closeNone()).resolves.toBeUndefined();
    await close();
  });
});
