// Locating what ships beside the compiled code: the manifest, the guest prelude, the worker entry.
// The same source runs from `src/` (tests), from `dist/src/` (the development build) and bundled
// into `dist/bundle/` (the published package).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

let root: string | undefined;

export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).name === "codemode-runtime") return (root = dir);
    const parent = dirname(dir);
    if (parent === dir) throw new Error("codemode-runtime: cannot find the package root (package.json) above " + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

let version: string | undefined;

/** The package's own version, for MCP handshakes and `codemode --version`. */
export function packageVersion(): string {
  return (version ??= (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version);
}

let prelude: string | undefined;

export function preludeSource(): string {
  return (prelude ??= readFileSync(join(packageRoot(), "sandbox", "prelude.js"), "utf8"));
}

/**
 * A compiled module that runs as a worker thread, e.g. "engine/worker". Under a TypeScript test
 * runner the source sibling is `.ts`, which a worker cannot load, so the build is used.
 */
export function compiledEntry(module: string): URL {
  // The bundled build (rolldown.config.js) has each entry under dist/bundle by the same name.
  if (/[\\/]dist[\\/]bundle[\\/]/.test(fileURLToPath(import.meta.url))) return pathToFileURL(join(packageRoot(), "dist", "bundle", `${module}.js`));
  const sibling = new URL(`./${module}.js`, import.meta.url);
  if (existsSync(fileURLToPath(sibling))) return sibling;
  const built = join(packageRoot(), "dist", "src", `${module}.js`);
  if (!existsSync(built)) throw new Error(`codemode-runtime: ${module} is not built (${built}); run "npm run build"`);
  return new URL(`file://${built}`);
}
