import { existsSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const repo = join(import.meta.dirname, "..", "..", "..");

/**
 * Tests that need a second real host process (to SIGKILL it) run the real task modules in a child
 * node. Node 20 cannot load .ts, so the child uses the build (`npm test` builds first): the temp
 * dir's `tasks` links to dist/src/tasks and its node_modules to the repo's.
 */
export function compileTasksForChild(): string {
  const built = join(repo, "dist", "src", "tasks");
  if (!existsSync(join(built, "index.js"))) throw new Error(`the task modules are not built (${built}); run "npm run build" first`);
  const out = mkdtempSync(join(tmpdir(), "codemode-child-"));
  symlinkSync(join(repo, "node_modules"), join(out, "node_modules"), "dir");
  symlinkSync(built, join(out, "tasks"), "dir");
  writeFileSync(join(out, "package.json"), JSON.stringify({ type: "module" }));
  return out;
}
