// `codemode worker` refuses what it cannot run with, in the CLI's usage conventions (exit 2, a
// message naming the fix). Its running behaviour is in test/tasks/redis/distributed.test.ts.
import { describe, expect, it } from "vitest";
import { runCli, tempProject } from "../mcp/helpers.js";

describe("codemode worker", () => {
  it("needs a Redis queue in the configuration", async () => {
    const cwd = tempProject({});
    const r = await runCli(["worker"], { cwd });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`${cwd}/codemode.json: a worker needs a queue: add "tasks": { "redis": "redis://host:6379" } (the same as the hosts that spawn the tasks)\n`);
  });

  it("refuses a bad --concurrency and unknown flags, and has help", async () => {
    const cwd = tempProject({ tasks: { redis: "redis://127.0.0.1:1" } });
    const bad = await runCli(["worker", "--concurrency", "0"], { cwd });
    expect([bad.code, bad.stderr]).toStrictEqual([2, 'codemode worker: --concurrency must be a whole number from 1 to 1024, got "0"\nRun codemode help for usage.\n']);
    const unknown = await runCli(["worker", "--conc", "2"], { cwd });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('codemode worker: unknown flag "--conc"; did you mean --concurrency?');
    const help = await runCli(["help", "worker"], { cwd });
    expect([help.code, help.stdout.split("\n")[0]]).toStrictEqual([0, "Usage: codemode worker [--concurrency <n>] [--config <file>]"]);
  });
});
