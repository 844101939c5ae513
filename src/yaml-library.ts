// The YAML library, loaded on first use: only agent files and workflow definitions written as
// text need it, and bundled into the package's entry it was ~230 KB of JavaScript that every
// process parsed at import (most never read YAML). Required through Node, from the package's own
// dependency, so it stays out of the bundle; a failure to load it surfaces where YAML is read.
import { createRequire } from "node:module";

let yaml: typeof import("yaml") | undefined;

export function yamlLibrary(): typeof import("yaml") {
  yaml ??= createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return yaml;
}
