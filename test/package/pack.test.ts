// The package as a new user gets it: `npm pack` of a clean copy of this checkout (its `prepack`
// builds dist/), the tarball installed into a fresh project with npm, and the installed bin driven
// as an MCP server by the SDK client, the library imported and type-checked from that project.
//
// Slow by necessity (tens of seconds): the pack compiles the package with tsc and the install
// resolves ~150 packages (from npm's cache when it has them). Everything below shares the one
// pack and the one install.
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../mcp/helpers.js";

const run = promisify(execFile);
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string; bin: Record<string, string> };

/** The environment of a user's shell: none of the npm_* variables `npm test` sets for its own script. */
function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_") && key !== "INIT_CWD"));
}

async function sh(command: string, args: string[], cwd: string): Promise<string> {
  try {
    return (await run(command, args, { cwd, env: userEnv(), maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(" ")} (in ${cwd}) failed: ${e.message}\n${e.stdout ?? ""}\n${e.stderr ?? ""}`);
  }
}

/** What a fresh clone has: the files git tracks or would track (nothing ignored: no dist/, no node_modules). */
async function cleanCopy(to: string): Promise<void> {
  const listed = await sh("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT);
  for (const file of listed.split("\0")) {
    if (file === "" || !existsSync(join(ROOT, file))) continue; // deleted in the work tree, not yet committed
    mkdirSync(dirname(join(to, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(to, file));
  }
  // The build tools the prepack needs (typescript, @types/node), as `npm ci` would have installed them.
  symlinkSync(join(ROOT, "node_modules"), join(to, "node_modules"), "dir");
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

describe("the packed package, installed into another project", () => {
  let work: string;
  let packed: string[];
  let project: string;
  let installed: string;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "codemode-pack-"));
    const clone = join(work, "clone");
    await cleanCopy(clone);
    const report = JSON.parse(await sh("npm", ["pack", "--json", "--pack-destination", work], clone)) as Array<{ filename: string; files: Array<{ path: string }> }>;
    packed = report[0]!.files.map((file) => file.path).sort();
    const tarball = join(work, report[0]!.filename);

    project = join(work, "consumer");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module" }));
    // --ignore-scripts: better-sqlite3's install step downloads a prebuilt binary, which this
    // machine cannot reach, or compiles SQLite for two minutes; the binary this checkout already
    // built for the same version and Node is put in its place below (the package under test has
    // no install scripts of its own).
    await sh("npm", ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", tarball], project);
    installed = join(project, "node_modules", "codemode-runtime");
    const sqlite = (root: string) => join(root, "node_modules", "better-sqlite3");
    const version = (dir: string) => (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
    if (version(sqlite(project)) === version(sqlite(ROOT))) {
      mkdirSync(join(sqlite(project), "build", "Release"), { recursive: true });
      copyFileSync(join(sqlite(ROOT), "build", "Release", "better_sqlite3.node"), join(sqlite(project), "build", "Release", "better_sqlite3.node"));
    } else {
      await sh("npm", ["rebuild", "better-sqlite3"], project);
    }

    writeFileSync(join(project, "codemode.json"), "{}\n");
    writeFileSync(join(project, "notes.md"), "one\ntwo\nthree\n");
    mkdirSync(join(project, ".codemode", "agents"), { recursive: true });
    writeFileSync(join(project, ".codemode", "agents", "shout.md"), "---\nname: shout\ndescription: upper-cases its task\ndriver: script\nscript: shout.js\n---\nShouts.\n");
    writeFileSync(join(project, ".codemode", "agents", "shout.js"), "text(task.toUpperCase() + '!')");
  }, 600_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("packs the bundled library and CLI with LICENSE, README and the declarations: no sources, tests, benchmarks, source maps or unbundled modules", () => {
    for (const file of [
      "LICENSE",
      "README.md",
      "package.json",
      "bin/codemode.js",
      "sandbox/prelude.js",
      "dist/bundle/index.js",
      "dist/src/index.d.ts",
      "dist/bundle/cli/main.js",
      "dist/bundle/engine/worker.js",
      "dist/bundle/workspace/scan-worker.js",
      "dist/bundle/tasks/redis/store-thread.js",
    ]) {
      expect(packed, file).toContain(file);
    }
    const outside = packed.filter((file) => !file.startsWith("dist/src/") && !file.startsWith("dist/bundle/") && !file.startsWith("sandbox/") && !file.startsWith("bin/"));
    expect(outside).toStrictEqual(["LICENSE", "README.md", "package.json"]);
    expect(packed.filter((file) => file.endsWith(".map") || (file.endsWith(".ts") && !file.endsWith(".d.ts")))).toStrictEqual([]);
    // The code runs from the bundle only; dist/src holds the declarations of every module of src/, and nothing from bench/ or test/.
    expect(packed.filter((file) => file.startsWith("dist/src/") && !file.endsWith(".d.ts"))).toStrictEqual([]);
    const declarations = walk(join(ROOT, "src"))
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts"))
      .map((file) => `dist/${file.slice(ROOT.length + 1).replace(/\.ts$/, ".d.ts")}`);
    for (const module of declarations) expect(packed, module).toContain(module);
    expect(packed.filter((file) => file.startsWith("dist/src/") && !declarations.includes(file))).toStrictEqual([]);
    const shipped = walk(installed).filter((file) => file.endsWith(".js"));
    expect(shipped.filter((file) => readFileSync(file, "utf8").includes("sourceMappingURL"))).toStrictEqual([]);
  });

  it("states its licence, repository and homepage, and installs a bin named like the package", () => {
    const installedManifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as Record<string, unknown>;
    expect(installedManifest.license).toBe("MIT");
    expect(readFileSync(join(installed, "LICENSE"), "utf8")).toMatch(/^MIT License\n/);
    expect(installedManifest.repository).toStrictEqual({ type: "git", url: "git+https://github.com/codemode-runtime/codemode-runtime.git" });
    expect(installedManifest.homepage).toBe("https://github.com/codemode-runtime/codemode-runtime#readme");
    expect(manifest.bin).toStrictEqual({ "codemode-runtime": "./bin/codemode.js", codemode: "./bin/codemode.js" });
    for (const bin of ["codemode", "codemode-runtime"]) expect(existsSync(join(project, "node_modules", ".bin", bin)), bin).toBe(true);
  });

  it("`npx -y codemode-runtime` runs the installed CLI by the package's name", async () => {
    expect(await sh("npx", ["-y", "codemode-runtime", "--version"], project)).toBe(`${manifest.version}\n`);
  });

  it("serves MCP through the installed bin: tools/list and a ptc_run_code call that reads a file and runs a subagent", async () => {
    const transport = new StdioClientTransport({
      command: join(project, "node_modules", ".bin", "codemode"),
      args: ["mcp", "--config", join(project, "codemode.json")],
      cwd: project,
      env: userEnv() as Record<string, string>,
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: "pack-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()).toStrictEqual({ name: "codemode", version: manifest.version });
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["ptc_run_code", "ptc_subagent", "ptc_task_output", "tool_info", "tool_search"]));
      const code = `const notes = await tools.read_file({ path: "notes.md" });
const shout = await tools.ptc_subagent({ agent: "shout", task: "installed" });
const out = await tools.ptc_task_output({ task_id: (await tools.ptc_task_list({})).tasks[0].id });
text(notes.total_lines + " lines; " + out.output + " " + shout.status);`;
      const result = await client.callTool({ name: "ptc_run_code", arguments: { code } });
      expect(result.isError, stderr).toBeUndefined();
      expect(result.content).toStrictEqual([{ type: "text", text: "3 lines; INSTALLED! succeeded" }]);
    } finally {
      await client.close();
    }
    expect(stderr).toBe("");
  });

  it("imports as a library (its worker and prelude found inside node_modules) and type-checks against its declarations", async () => {
    writeFileSync(
      join(project, "use.ts"),
      `import { createCodemode, defineTool, z, type RunResult } from "codemode-runtime";
const add = defineTool({ name: "add", description: "Add.", input: z.object({ a: z.number(), b: z.number() }), output: z.object({ sum: z.number() }), execute: ({ a, b }) => ({ sum: a + b }) });
const cm = await createCodemode({ tools: [add] });
const result: RunResult = await cm.run("const r = await tools.add({ a: 2, b: 3 }); text(String(r.sum));");
process.stdout.write(result.content[0]!.text);
await cm.close();
// Were any of these types lost (an unresolved import typed as any), the directives would be unused: errors too.
// @ts-expect-error: the code is a string
void (() => cm.run(42));
// @ts-expect-error: the output schema says sum is a number
void defineTool({ name: "bad", description: "Bad.", input: z.object({}), output: z.object({ sum: z.number() }), execute: () => ({ sum: "five" }) });
`,
    );
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          types: ["node"],
          typeRoots: [join(ROOT, "node_modules", "@types")],
          noEmit: true,
          skipLibCheck: true,
        },
        files: ["use.ts"],
      }),
    );
    // skipLibCheck: the dependencies' own declarations are theirs to check; ours are checked through their use.
    await sh(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], project);
    // The same program as plain JavaScript, from the consumer project's own node_modules.
    writeFileSync(join(project, "use.mjs"), readFileSync(join(project, "use.ts"), "utf8").split("\n// Were")[0]!.replace(", type RunResult", "").replace(": RunResult", "").replace("[0]!", "[0]"));
    expect(await sh(process.execPath, ["use.mjs"], project)).toBe("5");
  });
});
