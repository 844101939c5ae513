// What a new process loads when it imports the package as shipped (dist/bundle) and runs a program:
// only the bundle's start-up chunks, none of the parts that load on first use. Checked by what the
// process loaded (its ES modules through a module-load hook, its CommonJS files through the require
// cache, and the packages each loaded chunk was bundled from), never by time; and each lazily
// loaded part still works through the public API, and is loaded then.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../mcp/helpers.js";

const run = promisify(execFile);
const ENTRY = pathToFileURL(join(ROOT, "dist", "bundle", "index.js")).href;
const PROBE = join(ROOT, "test", "fixtures", "import-loads.mjs");

/** Loaded on first use only: a run of `text("hi")` needs none of them. */
const LAZY = ["yaml", "minisearch", "@modelcontextprotocol/sdk", "better-sqlite3", "tinyglobby", "typescript", "ts-blank-space", "acorn", "bullmq", "ioredis", "synckit"];
/** Node built-ins loaded on first use only: agents' child processes, signed continuations. */
const LAZY_BUILTINS = ["child_process", "zlib"];

interface Loaded {
  results: Record<string, string>;
  /** Packages the process loaded code of: from node_modules directly, or bundled into a loaded chunk. */
  packages: Set<string>;
  chunks: string[];
  /** Node's built-in modules the main thread loaded. */
  builtins: Set<string>;
  /** The CommonJS files it loaded. */
  cjs: string[];
}

const packageOf = (path: string): string | undefined => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path)?.[1];

async function probe(...steps: string[]): Promise<Loaded> {
  const { stdout } = await run(process.execPath, [PROBE, ENTRY, ...steps], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  const seen = JSON.parse(stdout) as { results: Record<string, string>; esm: string[]; cjs: string[]; builtins: string[] };
  const packages = new Set<string>();
  const chunks: string[] = [];
  for (const url of seen.esm.filter((url) => url.startsWith("file:"))) {
    const path = fileURLToPath(url);
    const direct = packageOf(path);
    if (direct) packages.add(direct);
    else if (path.includes("/dist/bundle/")) {
      chunks.push(path);
      // rolldown heads each bundled module with its path: `// node_modules/yaml/dist/index.js`
      // (through `../` when node_modules is a link elsewhere).
      for (const match of readFileSync(path, "utf8").matchAll(/^\/\/ (\S*node_modules\/\S+)$/gm)) packages.add(packageOf(match[1]!)!);
    }
  }
  for (const path of seen.cjs) {
    const name = packageOf(path);
    if (name) packages.add(name);
  }
  return { results: seen.results, packages, chunks, builtins: new Set(seen.builtins), cjs: seen.cjs };
}

describe("importing the package as shipped", () => {
  it("and running a program loads none of the parts that load on first use", async () => {
    const loaded = await probe("run");
    expect(loaded.results).toStrictEqual({ run: "hi" });
    expect(loaded.chunks.length).toBeGreaterThan(0);
    // The probe does see the bundle's own dependencies (zod is bundled into the start-up chunks).
    expect(loaded.packages.has("zod")).toBe(true);
    expect(LAZY.filter((name) => loaded.packages.has(name))).toStrictEqual([]);
    expect(loaded.builtins.has("worker_threads")).toBe(true);
    expect(LAZY_BUILTINS.filter((name) => loaded.builtins.has(name))).toStrictEqual([]);
  });

  it("loads a zod locale other than English when it is asked for, and it speaks its language", async () => {
    const locales = (loaded: Loaded) => loaded.cjs.filter((path) => /node_modules\/zod\/v4\/locales\//.test(path));
    expect(locales(await probe("run"))).toStrictEqual([]);
    const asked = await probe("locale");
    expect(asked.results).toStrictEqual({ locale: "Entrée invalide : chaîne de caractères attendu, nombre reçu" });
    expect(locales(asked).map((path) => path.split("/").pop())).toStrictEqual(["fr.cjs"]);
  });

  it("loads YAML when a workflow written as text is parsed, and reports its errors as before", async () => {
    const loaded = await probe("workflow");
    expect(loaded.results).toStrictEqual({ workflow: "invalid_definition" });
    expect(loaded.packages.has("yaml")).toBe(true);
  });

  it("loads MiniSearch when a program searches the tools, and finds them", async () => {
    const loaded = await probe("search");
    expect(loaded.results).toStrictEqual({ search: "found" });
    expect(loaded.packages.has("minisearch")).toBe(true);
    expect(loaded.packages.has("yaml")).toBe(false);
  });
});

describe("the sandbox worker's bundle", () => {
  /** The packages a bundle entry imports, following its relative imports through the other chunks. */
  function staticImports(entry: string): Set<string> {
    const found = new Set<string>();
    const visit = (file: string, seen: Set<string>) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const match of readFileSync(file, "utf8").matchAll(/^import [^;]*?from "([^"]+)";$/gm)) {
        const specifier = match[1]!;
        if (specifier.startsWith(".")) visit(join(file, "..", specifier), seen);
        else if (!specifier.startsWith("node:")) found.add(specifier);
      }
    };
    visit(entry, new Set());
    return found;
  }

  it("loads only the QuickJS core and the one variant it runs, not quickjs-emscripten's index of every variant", () => {
    expect([...staticImports(join(ROOT, "dist", "bundle", "engine", "worker.js"))].sort()).toStrictEqual(["@jitl/quickjs-wasmfile-release-sync", "quickjs-emscripten-core"]);
  });
});
