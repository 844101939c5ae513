// Node's built-in modules that only some paths use, loaded at their first use: a process that
// imports the package and runs programs never spawns an agent or writes a signed continuation,
// and importing `node:child_process` (with the net and stream modules it pulls in) and `node:zlib`
// at start-up was a few milliseconds of every cold start. `require` caches them like any module.
import { createRequire } from "node:module";

const requireBuiltin = createRequire(import.meta.url);

export function childProcess(): typeof import("node:child_process") {
  return requireBuiltin("node:child_process") as typeof import("node:child_process");
}

export function zlib(): typeof import("node:zlib") {
  return requireBuiltin("node:zlib") as typeof import("node:zlib");
}
