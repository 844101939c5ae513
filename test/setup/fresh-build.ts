// Vitest's global set-up: the tests never run a stale build. Sandbox workers, the CLI and task
// children run the compiled files in dist/ (a worker thread or a child process cannot load .ts),
// so `npx vitest` after an edit in src/ used to test the previous build without a word. Before any
// test file loads, this compares every source with its compiled counterpart and runs the build
// when one is missing or older. sandbox/prelude.js needs no check: the engine reads it from
// sandbox/ itself (src/package-files.ts), never from dist/.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The folders `npm run build` (tsconfig.json) compiles into dist/<folder>. */
const COMPILED = ["src", "bench"];

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]));
}

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Sources (relative to `root`) whose compiled file in `root`/dist is missing or older than they are. */
export function staleSources(root: string, folders: readonly string[] = COMPILED): string[] {
  const stale: string[] = [];
  for (const folder of folders) {
    if (!existsSync(join(root, folder))) continue;
    for (const file of walk(join(root, folder))) {
      if (!file.endsWith(".ts") || file.endsWith(".d.ts")) continue;
      const source = relative(root, file);
      const built = mtime(join(root, "dist", source.replace(/\.ts$/, ".js")));
      if (built === undefined || built < mtime(file)!) stale.push(source);
    }
  }
  return stale.sort();
}

/** The bundle (dist/bundle, what bin/ and the package's exports load) is missing or older than a compiled module it is made from. */
export function bundleStale(root: string): boolean {
  const bundled = mtime(join(root, "dist", "bundle", "cli", "main.js"));
  if (bundled === undefined) return existsSync(join(root, "rolldown.config.js"));
  return walk(join(root, "dist", "src")).some((file) => file.endsWith(".js") && mtime(file)! > bundled);
}

export default function setup(): void {
  const stale = staleSources(ROOT);
  if (stale.length === 0 && bundleStale(ROOT)) stale.push("dist/bundle");
  if (stale.length === 0) return;
  const shown = stale.length > 3 ? `${stale.slice(0, 3).join(", ")} and ${stale.length - 3} more` : stale.join(", ");
  process.stderr.write(`dist/ is older than ${shown}: running "npm run build" before the tests\n`);
  try {
    execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] });
  } catch {
    throw new Error('the build failed (see tsc\'s errors above): the tests would run the previous dist/, so none ran; fix the errors, or run "npm run build" to see them again');
  }
}
