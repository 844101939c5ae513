// The architecture as the imports draw it (docs/README.md): each directory of src/ may import only
// the layers below it, and no module imports itself back through others. Only imports that remain
// at run time count (static and dynamic); `import type` is erased and may point anywhere.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../src");

/** What each layer may import besides itself. The single files at src/'s top are shared leaves. */
const LEAVES = ["text", "closest-names", "package-files", "safe-fs", "line-splitter", "tracing", "yaml-library", "node-builtins"];
const ALLOWED: Record<string, string[]> = {
  // The sandbox engine knows nothing of tools, tasks or the runtime built on it.
  engine: [],
  tools: ["engine"],
  // Tasks are independent of the engine: a worker process runs them without a sandbox of its own.
  tasks: ["tools"],
  workspace: ["tools"],
  ptc: ["tasks", "tools", "workspace"],
  workflow: ["ptc", "tasks", "tools"],
  codemode: ["engine", "ptc", "tasks", "tools", "workflow", "workspace"],
  mcp: ["codemode", "tools", "workflow"],
  cli: ["codemode", "mcp", "tasks", "tools", "workflow", "workspace"],
  index: ["codemode", "tasks", "tools", "workflow", "workspace"],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The src/ modules a file imports at run time, as paths relative to src/. */
function runtimeImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) {
      // `import { type A, type B } from …` is erased too.
      const named = node.importClause?.namedBindings;
      const onlyTypes = !node.importClause?.name && named !== undefined && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((element) => element.isTypeOnly);
      if (!onlyTypes) specifiers.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      specifiers.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      specifiers.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers.filter((specifier) => specifier.startsWith(".")).map((specifier) => relative(SRC, resolve(dirname(file), specifier.replace(/\.js$/, ".ts"))));
}

const layerOf = (module: string): string => module.split("/")[0]!.replace(/\.ts$/, "");

const graph = new Map(sourceFiles(SRC).map((file) => [relative(SRC, file), runtimeImports(file)]));

describe("layers", () => {
  it("reads every module's run-time imports and leaves out the erased ones", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get("engine/engine.ts")).toEqual(expect.arrayContaining(["package-files.ts", "engine/wasm-module.ts", "engine/ring.ts"]));
    // `import type { … } from "./protocol.js"` is gone at run time.
    expect(graph.get("engine/engine.ts")).not.toContain("engine/protocol.ts");
    expect(graph.get("codemode/codemode.ts")).toContain("engine/engine.ts");
  });

  it("each layer imports only the layers below it", () => {
    const wrong: string[] = [];
    for (const [module, imports] of graph) {
      const from = layerOf(module);
      if (LEAVES.includes(from)) continue;
      const allowed = ALLOWED[from];
      if (!allowed) {
        wrong.push(`${module}: the layer "${from}" is not in this test's table; add it with what it may import`);
        continue;
      }
      for (const target of imports) {
        const to = layerOf(target);
        if (to !== from && !LEAVES.includes(to) && !allowed.includes(to)) wrong.push(`${module} imports ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("the shared leaves import no layer", () => {
    const wrong: string[] = [];
    for (const [module, imports] of graph) {
      if (!LEAVES.includes(layerOf(module))) continue;
      for (const target of imports) if (!LEAVES.includes(layerOf(target))) wrong.push(`${module} imports ${target}`);
    }
    expect(wrong).toEqual([]);
  });

  it("no module imports itself back through others", () => {
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const path: string[] = [];
    const walk = (module: string): void => {
      state.set(module, "open");
      path.push(module);
      for (const target of graph.get(module) ?? []) {
        if (state.get(target) === "open") cycles.push([...path.slice(path.indexOf(target)), target].join(" → "));
        else if (!state.has(target)) walk(target);
      }
      path.pop();
      state.set(module, "done");
    };
    for (const module of graph.keys()) if (!state.has(module)) walk(module);
    expect(cycles).toEqual([]);
  });
});
