import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import ts from "typescript";

const repo = join(import.meta.dirname, "..", "..", "..");

/**
 * Tests that need a second real host process (to SIGKILL it) run the real src/tasks modules in a
 * child node: Node 20 cannot load .ts, so they are transpiled (no bundling, same imports) into a
 * temp dir whose node_modules points at the repo's.
 */
export function compileTasksForChild(): string {
  const out = mkdtempSync(join(tmpdir(), "codemode-child-"));
  symlinkSync(join(repo, "node_modules"), join(out, "node_modules"), "dir");
  writeFileSync(join(out, "package.json"), JSON.stringify({ type: "module" }));
  const srcRoot = join(repo, "src", "tasks");
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith(".ts")) {
        const js = ts.transpileModule(readFileSync(path, "utf8"), {
          compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
        }).outputText;
        const dest = join(out, "tasks", relative(srcRoot, path)).replace(/\.ts$/, ".js");
        mkdirSync(dirname(dest), { recursive: true });
        writeFileSync(dest, js);
      }
    }
  };
  walk(srcRoot);
  return out;
}
