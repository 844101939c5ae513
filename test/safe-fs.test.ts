// The one routine behind every data-dir and temp file the host opens (src/safe-fs.ts): links are
// never followed, only regular files are used, new files are exclusive and 0600, dirs are 0700.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  appendPrivate,
  createExclusive,
  ensurePrivateDir,
  openRegular,
  PrivateTempDir,
  readRegularFile,
  refuseNotRegular,
  regularFileSize,
  replaceFileAtomic,
  UnsafeFileError,
} from "../src/safe-fs.js";

const base = mkdtempSync(join(tmpdir(), "safe-fs-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let n = 0;
const dir = () => {
  const d = join(base, `d${n++}`);
  mkdirSync(d);
  return d;
};
const mode = (path: string) => (lstatSync(path).mode & 0o777).toString(8);
function failure(fn: () => unknown): { reason: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (error instanceof UnsafeFileError) return { reason: error.reason, message: error.message };
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("safe-fs", () => {
  it("reads regular files only: a link, a FIFO and a file past the cap are refused; a missing file is undefined", () => {
    const d = dir();
    writeFileSync(join(d, "target"), "secret");
    symlinkSync(join(d, "target"), join(d, "link"));
    execFileSync("mkfifo", [join(d, "fifo")]);
    expect(failure(() => readRegularFile(join(d, "link"), { maxBytes: 100 }))).toStrictEqual({
      reason: "symbolic_link",
      message: `${join(d, "link")} is a symbolic link; the runtime does not follow links among its own files — remove it`,
    });
    expect(failure(() => readRegularFile(join(d, "fifo"), { maxBytes: 100 }))).toStrictEqual({ reason: "not_regular_file", message: `${join(d, "fifo")} is a FIFO; only regular files are read` });
    expect(failure(() => readRegularFile(join(d, "target"), { maxBytes: 3 })).reason).toBe("too_large");
    expect(readRegularFile(join(d, "missing"), { maxBytes: 100 })).toBeUndefined();
    expect(readRegularFile(join(d, "link"), { maxBytes: 100, follow: true })!.toString()).toBe("secret");
    expect(openRegular(join(d, "missing"))).toBeUndefined();
    expect([regularFileSize(join(d, "target")), regularFileSize(join(d, "link")), regularFileSize(join(d, "fifo"))]).toStrictEqual([6, 0, 0]);
  });

  it("refuseNotRegular passes a regular or missing file and refuses a link, a FIFO, a device or a directory, ending with the caller's advice", () => {
    const d = dir();
    writeFileSync(join(d, "file"), "x");
    execFileSync("mkfifo", [join(d, "fifo")]);
    symlinkSync("/dev/null", join(d, "link"));
    mkdirSync(join(d, "sub"));
    expect(() => refuseNotRegular(join(d, "file"), "fix it")).not.toThrow();
    expect(() => refuseNotRegular(join(d, "missing"), "fix it")).not.toThrow();
    expect(failure(() => refuseNotRegular(join(d, "fifo"), "fix it"))).toStrictEqual({ reason: "not_regular_file", message: `${join(d, "fifo")} is a FIFO, not a regular file; fix it` });
    expect(failure(() => refuseNotRegular(join(d, "sub"), "fix it"))).toStrictEqual({ reason: "not_regular_file", message: `${join(d, "sub")} is a directory, not a regular file; fix it` });
    expect(failure(() => refuseNotRegular("/dev/null", "fix it"))).toStrictEqual({ reason: "not_regular_file", message: "/dev/null is a character device, not a regular file; fix it" });
    expect(failure(() => refuseNotRegular(join(d, "link"), "fix it")).reason).toBe("symbolic_link");
  });

  it("appends and creates 0600 files, never through a link; replaces a planted link by rename, never writing its target", () => {
    const d = dir();
    const victim = join(d, "victim");
    writeFileSync(victim, "victim\n");
    symlinkSync(victim, join(d, "log"));
    expect(failure(() => appendPrivate(join(d, "log"), "x")).reason).toBe("symbolic_link");
    // O_EXCL fails on the link itself (it exists), never creating its target.
    expect(() => createExclusive(join(d, "log"))).toThrow(expect.objectContaining({ code: "EEXIST" }));
    replaceFileAtomic(join(d, "log"), "fresh");
    expect([readFileSync(victim, "utf8"), lstatSync(join(d, "log")).isFile(), mode(join(d, "log"))]).toStrictEqual(["victim\n", true, "600"]);
    appendPrivate(join(d, "new.log"), "a");
    appendPrivate(join(d, "new.log"), "b");
    expect([readFileSync(join(d, "new.log"), "utf8"), mode(join(d, "new.log"))]).toStrictEqual(["ab", "600"]);
    expect(readdirSync(d).sort()).toStrictEqual(["log", "new.log", "victim"]);
  });

  it("private dirs are real dirs of this user, narrowed to 0700; a link in their place is refused", () => {
    const d = dir();
    const wide = join(d, "wide");
    mkdirSync(wide);
    chmodSync(wide, 0o777);
    ensurePrivateDir(wide);
    expect(mode(wide)).toBe("700");
    ensurePrivateDir(join(d, "a", "b"));
    expect(mode(join(d, "a", "b"))).toBe("700");
    symlinkSync(wide, join(d, "alias"));
    expect(failure(() => ensurePrivateDir(join(d, "alias"))).reason).toBe("symbolic_link");
    writeFileSync(join(d, "file"), "");
    expect(failure(() => ensurePrivateDir(join(d, "file")))).toStrictEqual({
      reason: "not_directory",
      message: `${join(d, "file")} is a regular file, not a directory; remove it or choose another data dir`,
    });
  });

  it("a private temp dir is made on first use (mkdtemp, 0700) and removed with its files", () => {
    const temp = new PrivateTempDir("codemode-test");
    const path = temp.path;
    expect(temp.path).toBe(path);
    expect(mode(path)).toBe("700");
    writeFileSync(join(path, "x"), "x");
    temp.remove();
    expect(existsSync(path)).toBe(false);
    expect(temp.path).not.toBe(path);
    temp.remove();
  });
});
