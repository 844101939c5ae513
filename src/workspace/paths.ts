// Where the workspace tools may reach, and the one routine every one of them opens files through.
//
// A name checked before it is opened proves nothing: a concurrent writer can swap a directory for
// a symlink in between. So the checks by name (below: `confine`) only give good messages; what
// decides is what was opened. Reads open the file (links allowed), then ask the kernel where the
// descriptor really is (/proc/self/fd) and refuse it unless that is inside the root and outside the
// runtime's own state. Writes walk the path one directory descriptor at a time with O_NOFOLLOW on
// every component (openat through /proc/self/fd/<dir>/<name>), so no link is ever followed and a
// file is created only where the walk verified it would be.
import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, statSync, type Stats } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolError } from "../tools/index.js";
import { notRegular, replaceFileAtomic } from "../safe-fs.js";

const { O_RDONLY, O_WRONLY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY, O_DIRECTORY } = constants;
const PROC_FD = existsSync("/proc/self/fd");

/** Names that are never written, wherever they are: git's own directory and the runtime's configuration and state. */
const NEVER_WRITTEN_DIRS = new Set([".git", ".codemode"]);
const NEVER_WRITTEN_FILES = new Set(["codemode.json"]);

/** What the tools may reach: inside `root`, never in `hidden`; writes never in `protected` either (both resolved: resolveConfinement). */
export interface Confinement {
  /** The real path of the workspace root. */
  root: string;
  /** The runtime's own state (data dirs: sessions, task logs, spill files): never read, listed, searched or written. */
  hidden: readonly string[];
  /** The runtime's own configuration (config files, agent dirs): never written. */
  protected: readonly string[];
}

function refuse(message: string): never {
  throw new ToolError("tool_invalid_input", message, { reason: "path_outside_root" });
}

function inside(root: string, target: string): boolean {
  const rel = relative(root, target);
  return rel === "" || (!rel.startsWith(".." + sep) && rel !== ".." && !isAbsolute(rel));
}

/** The real path of a path that may not exist yet: its nearest existing ancestor resolved, the rest appended. */
export function resolveReal(path: string): string {
  const rest: string[] = [];
  let existing = resolve(path);
  for (;;) {
    try {
      return join(realpathSync.native(existing), ...rest);
    } catch {
      const parent = dirname(existing);
      if (parent === existing) return resolve(path);
      rest.unshift(basename(existing));
      existing = parent;
    }
  }
}

/** The real (symlink-free) path of a workspace root that must exist and be a directory. */
export function realRoot(root: unknown): string {
  if (typeof root !== "string" || root.length === 0) {
    throw new TypeError(`workspaceTools: "root" must be a directory path string, received ${root === null ? "null" : typeof root}`);
  }
  const abs = resolve(root);
  if (!existsSync(abs) || !statSync(abs).isDirectory()) throw new TypeError(`workspaceTools: "root" must be an existing directory, "${abs}" is not`);
  return realpathSync.native(abs);
}

/**
 * Resolves a model-given relative path inside the root by name, refusing NUL bytes, absolute
 * paths, `..` escapes and symlinks (anywhere along the path) that lead outside. This is the early
 * check that words the refusal; openForRead / openForWrite verify what they actually open.
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
    real = realpathSync.native(existing);
  } catch {
    // A dangling symlink: existsSync follows links, so it lands here only when the link's target is gone.
    refuse(`"${field}" ${JSON.stringify(path)} goes through a broken symbolic link`);
  }
  if (!inside(root, real)) refuse(`"${field}" ${JSON.stringify(path)} goes through a symbolic link that leads outside the workspace root`);
  const abs = existing === lexical ? real : resolve(real, relative(existing, lexical));
  return { abs, rel: relative(root, lexical).split(sep).join("/") };
}

/** Real paths of the runtime's own dirs that exist (they are the operator's and stay put); the others are resolved again each time. */
const settled = new Map<string, string>();

function resolveOwn(path: string): string {
  const known = settled.get(path);
  if (known !== undefined) return known;
  try {
    const real = realpathSync.native(path);
    settled.set(path, real);
    return real;
  } catch {
    return resolveReal(path);
  }
}

/** The confinement with its hidden (and, for writes, protected) paths resolved to real paths (they may not exist yet). */
export function resolveConfinement(c: Confinement, forWrite: boolean): Confinement {
  return { root: c.root, hidden: c.hidden.map(resolveOwn), protected: forWrite ? c.protected.map(resolveOwn) : [] };
}

/** Whether a real path lies in the runtime's own state (`hidden`, resolved). */
function hiddenBy(c: Confinement, real: string): boolean {
  return c.hidden.some((dir) => inside(dir, real));
}

function refuseHidden(rel: string): never {
  throw new ToolError("tool_denied", `"${rel}" is in the runtime's own data dir (sessions, task logs, spilled output); the workspace tools do not reach it`, {
    reason: "protected_path",
  });
}

/** Where an opened descriptor really is; undefined when that cannot be told (the file was removed, or no /proc and a swap). */
function openedPath(fd: number, abs: string): string | undefined {
  if (PROC_FD) {
    try {
      const link = readlinkSync(`/proc/self/fd/${fd}`);
      return link.endsWith(" (deleted)") && fstatSync(fd).nlink === 0 ? undefined : link;
    } catch {
      // Fall through to the portable check.
    }
  }
  // Without /proc: the name's real path counts only if it is the very file that was opened.
  try {
    const real = realpathSync.native(abs);
    const opened = fstatSync(fd);
    const named = statSync(real);
    return opened.dev === named.dev && opened.ino === named.ino ? real : undefined;
  } catch {
    return undefined;
  }
}

/** Refuses (closing `fd`) a descriptor that is not inside the root or lies in the runtime's own state. */
function verifyOpened(c: Confinement, fd: number, abs: string, rel: string, field: string, extra: readonly string[] = []): void {
  const real = openedPath(fd, abs);
  let problem: (() => never) | undefined;
  if (real === undefined || !inside(c.root, real)) {
    problem = () => refuse(`"${field}" ${JSON.stringify(rel)} was changed to lead outside the workspace root while it was opened; pass a path inside it`);
  } else if (hiddenBy(c, real)) problem = () => refuseHidden(rel);
  else if (extra.some((dir) => inside(dir, real))) problem = () => refuseProtected(rel);
  if (problem) {
    closeSync(fd);
    problem();
  }
}

function notRegularError(rel: string, what: string): ToolError {
  return new ToolError("tool_failed", `"${rel}" is ${what}, not a regular file; only regular files are read or written`, { reason: "not_regular_file" });
}

function notFound(rel: string): ToolError {
  return new ToolError("tool_failed", `file "${rel}" does not exist; find files with list_files`, { reason: "not_found" });
}

/** Why a file could not be reached, in the workspace's terms (Node's message names the host's path). */
function openFailure(rel: string, error: unknown): ToolError {
  switch (errno(error)) {
    case "ENOENT":
    case "ENOTDIR":
      return notFound(rel);
    case "EACCES":
    case "EPERM":
      return new ToolError("tool_failed", `"${rel}" cannot be read: permission denied (by the file or a directory on its path)`, { reason: "permission_denied" });
    case "ELOOP":
      return new ToolError("tool_failed", `"${rel}" goes through a loop of symbolic links, so it leads to no file`, { reason: "symbolic_link_loop" });
    case "ENAMETOOLONG":
      return new ToolError("tool_invalid_input", `"${rel}" is too long a path for the file system`, { reason: "name_too_long" });
    default:
      return new ToolError("tool_failed", `"${rel}" cannot be opened (${errno(error) || "an I/O error"})`);
  }
}

function errno(error: unknown): string {
  return (error as NodeJS.ErrnoException)?.code ?? "";
}

/**
 * Opens a workspace file for reading: links are followed, but the descriptor must be a regular
 * file inside the root and outside the runtime's data dir. It never blocks (O_NONBLOCK: a FIFO is
 * opened and refused at once; a device is refused before it is opened).
 */
export function openForRead(c: Confinement, path: string, field = "path"): { fd: number; stat: Stats; rel: string } {
  const { abs, rel } = confine(c.root, path, field);
  if (hiddenBy(c, abs)) refuseHidden(rel);
  let named: Stats;
  try {
    named = statSync(abs);
  } catch (error) {
    throw openFailure(rel, error);
  }
  if (named.isDirectory()) throw new ToolError("tool_failed", `"${rel}" is a directory; list it with list_files({ pattern: "${rel}/*" })`, { reason: "is_directory" });
  const early = notRegular(named);
  if (early) throw notRegularError(rel, early);
  let fd: number;
  try {
    fd = openSync(abs, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  } catch (error) {
    throw openFailure(rel, error);
  }
  const stat = fstatSync(fd);
  const wrong = notRegular(stat);
  if (wrong) {
    closeSync(fd);
    throw notRegularError(rel, wrong);
  }
  verifyOpened(c, fd, abs, rel, field);
  return { fd, stat, rel };
}

/** Whether a file a scan found may be listed or searched: really inside the root, outside the runtime's state. */
export function reachable(c: Confinement, abs: string): boolean {
  let real: string;
  try {
    real = realpathSync.native(abs);
  } catch {
    return false;
  }
  return inside(c.root, real) && !hiddenBy(c, real);
}

function refuseProtected(rel: string): never {
  throw new ToolError(
    "tool_denied",
    `"${rel}" is the runtime's own configuration, agent definitions or state, or git's (.git, .codemode, codemode.json, the agent and data dirs); write_file never changes them, because the next run or git command would execute what they say. Write elsewhere in the workspace`,
    { reason: "protected_path" },
  );
}

function refuseLink(rel: string, at: string): never {
  throw new ToolError("tool_invalid_input", `"${rel}" goes through the symbolic link "${at}"; write_file does not write through links — write to the path it points at`, {
    reason: "symbolic_link",
  });
}

/** `name` inside the directory open as `dirFd` (openat by another name), or a plain path without /proc. */
function child(dirFd: number, dirPath: string, name: string): string {
  return PROC_FD ? `/proc/self/fd/${dirFd}/${name}` : join(dirPath, name);
}

/**
 * Writes a workspace file, creating it and its missing parent directories, never through a
 * symbolic link (each component is opened with O_NOFOLLOW relative to its verified parent),
 * never a FIFO, device or a file with other hard links, and never the runtime's or git's own
 * files. The bytes go to a fresh file in that verified directory, renamed over the target once
 * all of them are written: a full disk or a crash leaves the old content whole, never half of
 * the new one (and a link planted at the name meanwhile is replaced, not followed).
 */
export function writeConfined(c: Confinement, path: string, data: Buffer, field = "path"): { rel: string; created: boolean } {
  const { rel } = confine(c.root, path, field);
  const parts = rel.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.length === 0) throw new ToolError("tool_failed", `"${path}" is the workspace root, a directory; give a file path`, { reason: "is_directory" });
  const lexical = join(c.root, ...parts);
  const names = parts.map((part) => part.toLowerCase());
  if (names.some((name) => NEVER_WRITTEN_DIRS.has(name)) || NEVER_WRITTEN_FILES.has(names[names.length - 1]!)) refuseProtected(rel);
  if (c.protected.some((p) => inside(p, lexical))) refuseProtected(rel);
  if (hiddenBy(c, lexical)) refuseHidden(rel);

  let dirFd = openSync(c.root, O_RDONLY | O_DIRECTORY);
  let dirPath = c.root;
  try {
    for (let i = 0; i < parts.length - 1; i++) {
      const name = parts[i]!;
      const at = parts.slice(0, i + 1).join("/");
      let next: number | undefined;
      for (let attempt = 0; next === undefined; attempt++) {
        try {
          next = openSync(child(dirFd, dirPath, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        } catch (error) {
          const code = errno(error);
          // With O_DIRECTORY, Linux reports a symbolic link as ENOTDIR: ask what it is.
          if (code === "ELOOP" || code === "EMLINK" || (code === "ENOTDIR" && lstatSync(child(dirFd, dirPath, name), { throwIfNoEntry: false })?.isSymbolicLink())) refuseLink(rel, at);
          if (code === "ENOTDIR") throw new ToolError("tool_failed", `"${at}" is a file, not a directory, so "${rel}" cannot be written`, { reason: "not_directory" });
          if (code !== "ENOENT" || attempt > 0) throw writeFailure(rel, error, true);
          try {
            mkdirSync(child(dirFd, dirPath, name));
          } catch (mkdirError) {
            if (errno(mkdirError) !== "EEXIST") throw writeFailure(rel, mkdirError, true);
          }
        }
      }
      closeSync(dirFd);
      dirFd = next;
      dirPath = join(dirPath, name);
    }
    const name = parts[parts.length - 1]!;
    const target = child(dirFd, dirPath, name);
    // What is there now: nothing (created), or a regular file with one link, inside the root.
    let mode = 0o666;
    let created = false;
    let fd: number | undefined;
    try {
      fd = openSync(target, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    } catch (error) {
      const code = errno(error);
      if (code === "ELOOP" || code === "EMLINK") refuseLink(rel, rel);
      if (code === "EISDIR") throw new ToolError("tool_failed", `"${rel}" is a directory; give a file path`, { reason: "is_directory" });
      // A FIFO without a reader refuses O_WRONLY|O_NONBLOCK with ENXIO; a socket with ENXIO too.
      if (code === "ENXIO") throw notRegularError(rel, "a FIFO or socket");
      if (code !== "ENOENT") throw writeFailure(rel, error, false);
      created = true;
    }
    if (fd !== undefined) {
      const st = fstatSync(fd);
      const wrong = notRegular(st);
      if (wrong) {
        closeSync(fd);
        throw notRegularError(rel, wrong);
      }
      if (st.nlink > 1) {
        closeSync(fd);
        throw new ToolError("tool_failed", `"${rel}" has ${st.nlink} hard links, so writing it would change files elsewhere too; write_file writes only files with one link`, { reason: "hard_link" });
      }
      verifyOpened(c, fd, join(dirPath, name), rel, field, c.protected);
      closeSync(fd);
      mode = st.mode & 0o7777;
    }
    try {
      replaceFileAtomic(target, data, mode);
    } catch (error) {
      throw writeFailure(rel, error, created);
    }
    return { rel, created };
  } finally {
    closeSync(dirFd);
  }
}

/** A write that failed, said with the workspace path (never the host's) and what became of the file. */
function writeFailure(rel: string, error: unknown, created: boolean): ToolError {
  if (error instanceof ToolError) return error;
  const unchanged = created ? `"${rel}" was not created` : `"${rel}" keeps its old content`;
  switch (errno(error)) {
    case "ENOSPC":
    case "EDQUOT":
      return new ToolError("tool_failed", `the disk is full: ${unchanged}; free space (or write less) and try again`, { reason: "disk_full" });
    case "EACCES":
    case "EPERM":
      return new ToolError("tool_failed", `"${rel}" cannot be written: permission denied (${unchanged})`, { reason: "permission_denied" });
    case "EROFS":
      return new ToolError("tool_failed", `"${rel}" cannot be written: the file system is read-only`, { reason: "read_only" });
    case "ENAMETOOLONG":
      return new ToolError("tool_invalid_input", `"${rel}" is too long a path for the file system; use shorter names`, { reason: "name_too_long" });
    default:
      return new ToolError("tool_failed", `"${rel}" could not be written (${errno(error) || "an I/O error"}); ${unchanged}`);
  }
}

/** Glob patterns may not climb out of the root either. */
export function checkGlob(pattern: string, field: string): void {
  if (pattern.includes("\0")) refuse(`"${field}" must not contain NUL bytes`);
  if (isAbsolute(pattern)) refuse(`"${field}" must be a glob relative to the workspace root, got ${JSON.stringify(pattern)}; try "**/*.ts"`);
  if (pattern.split(/[\\/]/).includes("..")) refuse(`"${field}" ${JSON.stringify(pattern)} must not contain ".." segments; globs match inside the workspace root only`);
}
