// Files the host opens for itself — its data dir (sessions, task logs, spill files), temp files and
// the configuration it reads — opened so that nothing planted there can redirect, freeze or
// exhaust it: a link is never followed at the last component (O_NOFOLLOW), what was opened is
// checked on the descriptor (a regular file, never a FIFO or a device; O_NONBLOCK so opening a
// FIFO cannot hang), reads are capped, new files are created exclusively (O_EXCL) with mode 0600,
// and directories are real directories owned by this user with mode 0700.
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, constants, fstatSync, lstatSync, mkdirSync, mkdtempSync, openSync, readSync, renameSync, rmSync, unlinkSync, writeSync, type Stats } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";

const { O_RDONLY, O_WRONLY, O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;

/** A file the host refused to use, with what to do about it. */
export class UnsafeFileError extends Error {
  override readonly name = "UnsafeFileError";
  constructor(
    message: string,
    readonly reason: "symbolic_link" | "not_regular_file" | "not_directory" | "foreign_owner" | "too_large",
    /** What was found, for a caller that words its own message: "a FIFO" (not_regular_file), the size in bytes (too_large, unless the file grew while it was read). */
    readonly found?: string | number,
  ) {
    super(message);
  }
}

const myUid = typeof process.getuid === "function" ? process.getuid() : undefined;

function kindOf(st: Stats): string {
  if (st.isFile()) return "a regular file";
  if (st.isSymbolicLink()) return "a symbolic link";
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isCharacterDevice()) return "a character device";
  if (st.isBlockDevice()) return "a block device";
  if (st.isSocket()) return "a socket";
  return "an unknown kind of file";
}

/** Why an opened descriptor is not a regular file, in a sentence; undefined when it is one. */
export function notRegular(st: Stats): string | undefined {
  return st.isFile() ? undefined : kindOf(st);
}

function isErrno(error: unknown, ...codes: string[]): boolean {
  return codes.includes((error as NodeJS.ErrnoException)?.code ?? "");
}

function linkMessage(path: string): string {
  return `${path} is a symbolic link; the runtime does not follow links among its own files — remove it`;
}

function rethrowLink(path: string, error: unknown): never {
  // O_NOFOLLOW on a symbolic link fails with ELOOP (EMLINK on some BSDs).
  if (isErrno(error, "ELOOP", "EMLINK")) throw new UnsafeFileError(linkMessage(path), "symbolic_link");
  throw error;
}

/**
 * Checks a directory the runtime keeps its own state in: it must be a real directory (not a
 * link), owned by this user; its mode is narrowed to 0700. Returns false when it does not exist.
 */
export function checkPrivateDir(dir: string): boolean {
  let st: Stats;
  try {
    st = lstatSync(dir);
  } catch (error) {
    if (isErrno(error, "ENOENT")) return false;
    throw error;
  }
  if (st.isSymbolicLink()) throw new UnsafeFileError(`${dir} is a symbolic link; the runtime keeps its state only in real directories — point it at the directory itself`, "symbolic_link");
  if (!st.isDirectory()) throw new UnsafeFileError(`${dir} is ${kindOf(st)}, not a directory; remove it or choose another data dir`, "not_directory");
  if (myUid !== undefined && st.uid !== myUid) {
    throw new UnsafeFileError(`${dir} belongs to another user (uid ${st.uid}); the runtime keeps its state only in directories of its own user (uid ${myUid})`, "foreign_owner");
  }
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  return true;
}

/** Creates `dir` (and its missing parents, 0700) or checks the one that is there (see checkPrivateDir). */
export function ensurePrivateDir(dir: string): string {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    // Something else is in its place: say what.
    if (!isErrno(error, "EEXIST", "ENOTDIR")) throw error;
  }
  if (!checkPrivateDir(dir)) throw new UnsafeFileError(`${dir} cannot be created: a parent of it is not a directory`, "not_directory");
  return dir;
}

/**
 * Opens an existing file for reading, never following a link at the last component (unless
 * `follow`), never blocking on a FIFO, and refusing anything but a regular file — checked on the
 * opened descriptor, so a file swapped in after a check by name changes nothing. Returns
 * undefined when there is no such file.
 */
export function openRegular(path: string, options: { follow?: boolean } = {}): { fd: number; stat: Stats } | undefined {
  let fd: number;
  try {
    fd = openSync(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | (options.follow ? 0 : O_NOFOLLOW));
  } catch (error) {
    if (isErrno(error, "ENOENT")) return undefined;
    rethrowLink(path, error);
  }
  const stat = fstatSync(fd);
  const wrong = notRegular(stat);
  if (wrong) {
    closeSync(fd);
    throw new UnsafeFileError(`${path} is ${wrong}; only regular files are read`, "not_regular_file", wrong);
  }
  return { fd, stat };
}

/** Reads `length` bytes at `position` (fewer at the end of the file). */
export function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  let read = 0;
  while (read < length) {
    const n = readSync(fd, buf, read, length - read, position + read);
    if (n === 0) break;
    read += n;
  }
  return buf.subarray(0, read);
}

/** A whole regular file of at most `maxBytes` (see openRegular); undefined when it does not exist. */
export function readRegularFile(path: string, options: { maxBytes: number; follow?: boolean }): Buffer | undefined {
  const opened = openRegular(path, options);
  if (!opened) return undefined;
  try {
    if (opened.stat.size > options.maxBytes) {
      throw new UnsafeFileError(`${path} is ${opened.stat.size} bytes; at most ${options.maxBytes} are read`, "too_large", opened.stat.size);
    }
    // One byte more than allowed tells a file that grew since fstat from one that did not.
    const buf = readAt(opened.fd, 0, options.maxBytes + 1);
    if (buf.length > options.maxBytes) throw new UnsafeFileError(`${path} grew past ${options.maxBytes} bytes while it was read`, "too_large");
    return buf;
  } finally {
    closeSync(opened.fd);
  }
}

/**
 * Throws when `path` exists and is anything but a regular file — a link, a FIFO, a device, a
 * directory (for files a library opens by name, such as SQLite's: opening a FIFO would block it
 * forever). `advice` ends the message: what to do about it.
 */
export function refuseNotRegular(path: string, advice: string): void {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    return;
  }
  if (st.isSymbolicLink()) throw new UnsafeFileError(linkMessage(path), "symbolic_link");
  const wrong = notRegular(st);
  if (wrong) throw new UnsafeFileError(`${path} is ${wrong}, not a regular file; ${advice}`, "not_regular_file", wrong);
}

/** Size of a regular file that is not a link; 0 when missing or anything else. */
export function regularFileSize(path: string): number {
  try {
    const st = lstatSync(path);
    return st.isFile() ? st.size : 0;
  } catch {
    return 0;
  }
}

function checkOpenedForWrite(fd: number, path: string): void {
  const wrong = notRegular(fstatSync(fd));
  if (wrong) {
    closeSync(fd);
    throw new UnsafeFileError(`${path} is ${wrong}; the runtime writes only regular files`, "not_regular_file");
  }
}

/** Creates a new file (0600 unless `mode` says otherwise) that must not exist yet, and returns its descriptor open for writing. */
export function createExclusive(path: string, mode = 0o600): number {
  try {
    return openSync(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, mode);
  } catch (error) {
    rethrowLink(path, error);
  }
}

/** Appends to a regular file (created 0600 when missing), never through a link, never to a FIFO or device. */
export function appendPrivate(path: string, data: Buffer | string): void {
  let fd: number;
  try {
    fd = openSync(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o600);
  } catch (error) {
    rethrowLink(path, error);
  }
  checkOpenedForWrite(fd, path);
  try {
    writeAll(fd, typeof data === "string" ? Buffer.from(data) : data);
  } finally {
    closeSync(fd);
  }
}

export function writeAll(fd: number, data: Buffer): void {
  let written = 0;
  while (written < data.length) written += writeSync(fd, data, written, data.length - written);
}

/**
 * Replaces `path` with `data` atomically: the bytes go to a fresh, uniquely named file in the same
 * directory (created exclusively, 0600, never through a link), which is then renamed over `path`.
 * A process that dies meanwhile leaves the old file; a link planted at `path` is replaced, never followed.
 */
export function replaceFileAtomic(path: string, data: Buffer | string, mode = 0o600): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = createExclusive(temp, mode);
  try {
    try {
      writeAll(fd, typeof data === "string" ? Buffer.from(data) : data);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * Creates the directories of `parts` under `base` one by one, never through a link: an existing
 * component must be a real directory. (For files written into a directory the user chose, such as
 * `codemode init`'s; the base itself is trusted.)
 */
export function makeDirsNoFollow(base: string, parts: readonly string[]): string {
  let dir = base;
  for (const part of parts) {
    dir = join(dir, part);
    let st: Stats | undefined;
    try {
      st = lstatSync(dir);
    } catch (error) {
      if (!isErrno(error, "ENOENT")) throw error;
    }
    if (st === undefined) mkdirSync(dir);
    else if (st.isSymbolicLink()) throw new UnsafeFileError(linkMessage(dir), "symbolic_link");
    else if (!st.isDirectory()) throw new UnsafeFileError(`${dir} is ${kindOf(st)}, not a directory`, "not_directory");
  }
  return dir;
}

/** Removes a file if it is there (a link is removed itself, never its target). */
export function removeFile(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (!isErrno(error, "ENOENT")) throw error;
  }
}

/**
 * A private directory under the OS temp dir, made on first use with an unpredictable name
 * (mkdtemp: mode 0700, owned by this user, so another local user can neither read what is in it
 * nor plant anything there), and removed with everything in it by remove().
 */
export class PrivateTempDir {
  private dir: string | undefined;

  constructor(private readonly prefix: string) {}

  get path(): string {
    this.dir ??= mkdtempSync(join(tmpdir(), `${this.prefix}-`));
    return this.dir;
  }

  remove(): void {
    if (this.dir === undefined) return;
    rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}
