// Shared by the CLI and MCP tests: temp project dirs and the built CLI.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const CLI = join(ROOT, "bin", "codemode.js");
export const INVENTORY_SERVER = join(ROOT, "test", "mcp", "fixtures", "inventory-server.mjs");

export function tempProject(config?: unknown, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "codemode-cli-"));
  if (config !== undefined) writeFileSync(join(dir, "codemode.json"), typeof config === "string" ? config : JSON.stringify(config, null, 2));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `timeoutMs`: a CLI still running then is killed and the call rejects (a hang fails the test, and leaves no process behind). */
export function runCli(args: string[], options: { cwd: string; stdin?: string; env?: Record<string, string>; timeoutMs?: number }): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const settings = { cwd: options.cwd, env: { ...process.env, ...options.env }, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 0, killSignal: "SIGKILL" as const };
    const child = execFile(process.execPath, [CLI, ...args], settings, (error, stdout, stderr) => {
      if (error && typeof error.code !== "number") return reject(error);
      resolvePromise({ code: error ? (error.code as number) : 0, stdout, stderr });
    });
    child.stdin?.end(options.stdin ?? "");
  });
}

export const inventoryConfig = (extra: Record<string, unknown> = {}) => ({
  mcpServers: {
    inventory: { command: process.execPath, args: [INVENTORY_SERVER], env: { GREETING: "ahoy" } },
    ...extra,
  },
});

/** A small project the fan-out example runs over: src/a (2 files), src/b (1 file). */
export function sourceTree(): string {
  const cwd = tempProject();
  mkdirSync(join(cwd, "src", "a"), { recursive: true });
  mkdirSync(join(cwd, "src", "b"), { recursive: true });
  writeFileSync(join(cwd, "src", "a", "x.ts"), "export const a = 1;\nconst b = 2;\n");
  writeFileSync(join(cwd, "src", "a", "y.ts"), "export function f() {}\n");
  writeFileSync(join(cwd, "src", "b", "z.ts"), "line\nline\nline\n");
  return cwd;
}
