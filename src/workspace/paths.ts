import { existsSync, realpathSync, statSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { ToolError } from "../tools/index.js";

function refuse(message: string): never {
  throw new ToolError("tool_invalid_input", message, { reason: "path_outside_root" });
}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === "" || (!rel.startsWith(".." + sep) && rel !== ".." && !isAbsolute(rel));
}

/** The real (symlink-free) path of a workspace root that must exist and be a directory. */
export function realRoot(root: unknown): string {
  if (typeof root !== "string" || root.length === 0) {
    throw new TypeError(`workspaceTools: "root" must be a directory path string, received ${root === null ? "null" : typeof root}`);
  }
  const abs = resolve(root);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) throw new TypeError(`workspaceTools: "root" must be an existing directory, "${abs}" is not`);
  return realpathSync(abs);
}

/**
 * Resolves a model-given relative path inside the root, refusing NUL bytes, absolute paths, `..`
 * escapes and symlinks (anywhere along the path) that lead outside. A path that does not exist yet
 * is checked through its nearest existing ancestor, so a write cannot land outside either.
 */
export function confine(root: string, path: string, field = "path"): { abs: string; rel: string } {
  if (path.includes("\0")) refuse(`"${field}" must not contain NUL bytes`);
  if (isAbsolute(path) || /^[A-Za-z]:[\\/]/.test(path)) {
    refuse(`"${field}" must be relative to the workspace root, got the absolute path ${JSON.stringify(path)}; pass a path such as "src/index.ts"`);
  }
  const lexical = resolve(root, path);
  if (!inside(root, lexical)) refuse(`"${field}" ${JSON.stringify(path)} leads outside the workspace root; pass a path inside it`);
  let existing = lexical;
  while (!existsSync(existing) && existing !== root) existing = dirname(existing);
  let real: string;
  try {
    real = realpathSync(existing);
  } catch {
    // A dangling symlink: existsSync follows links, so it lands here only when the link's target is gone.
    refuse(`"${field}" ${JSON.stringify(path)} goes through a broken symbolic link`);
  }
  if (!inside(root, real)) refuse(`"${field}" ${JSON.stringify(path)} goes through a symbolic link that leads outside the workspace root`);
  const abs = existing === lexical ? real : resolve(real, relative(existing, lexical));
  return { abs, rel: relative(root, lexical).split(sep).join("/") };
}

/** Whether an already-listed file really lives inside the root (its symlinks resolved). */
export function isInside(root: string, abs: string): boolean {
  try {
    return inside(root, realpathSync(abs));
  } catch {
    return false;
  }
}

/** Glob patterns may not climb out of the root either. */
export function checkGlob(pattern: string, field: string): void {
  if (pattern.includes("\0")) refuse(`"${field}" must not contain NUL bytes`);
  if (isAbsolute(pattern)) refuse(`"${field}" must be a glob relative to the workspace root, got ${JSON.stringify(pattern)}; try "**/*.ts"`);
  if (pattern.split(/[\\/]/).includes("..")) refuse(`"${field}" ${JSON.stringify(pattern)} must not contain ".." segments; globs match inside the workspace root only`);
}
