// The package's own name and version (for MCP handshakes and `codemode --version`), read from the
// nearest package.json above this module: the same in src/ (tests) and dist/src/ (the built CLI).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | undefined;

export function packageVersion(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "codemode-runtime" && typeof pkg.version === "string") return (cached = pkg.version);
    }
    const parent = dirname(dir);
    if (parent === dir) return (cached = "0.0.0");
    dir = parent;
  }
}
