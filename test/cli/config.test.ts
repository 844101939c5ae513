// codemode.json: one zod schema validates it and generates the published JSON Schema; every
// problem is named with its line and column in the file, and a misspelt field with its fix.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { configJsonSchema, CONFIG_SCHEMA_URL } from "../../src/cli/config-schema.js";
import { ConfigError, parseConfig } from "../../src/cli/config.js";
import { ROOT, runCli, tempProject } from "../mcp/helpers.js";

const SCHEMA_FILE = join(ROOT, "schema", "codemode.schema.json");

function problem(text: string): string {
  try {
    parseConfig(JSON.parse(text), { base: "/project", text });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`no problem found in ${text}`);
}

describe("the published JSON Schema", () => {
  it("schema/codemode.schema.json is what the zod schema generates (npm run build && node schema/generate.mjs rewrites it)", () => {
    expect(readFileSync(SCHEMA_FILE, "utf8")).toBe(JSON.stringify(configJsonSchema(), null, 2) + "\n");
    expect(configJsonSchema().$id).toBe(CONFIG_SCHEMA_URL);
  });

  it("means what the CLI enforces: read back as a schema, it accepts and refuses the same files", () => {
    const published = z.fromJSONSchema(JSON.parse(readFileSync(SCHEMA_FILE, "utf8")));
    const valid = [
      {},
      JSON.parse(readFileSync(join(ROOT, "examples", "mcp-upstream", "codemode.json"), "utf8")),
      {
        $schema: CONFIG_SCHEMA_URL,
        limits: { timeoutMs: 5000 },
        dataDir: ".codemode/state",
        workspace: false,
        mcpServers: {
          fs: { command: "node", args: ["server.js"], env: { A: "b" }, startupTimeoutMs: 5000, readOnlyTools: ["read"] },
          gh: { type: "http", url: "https://${HOST:-example.com}/mcp", headers: { Authorization: "Bearer ${TOKEN}" } },
          old: { type: "sse", url: "http://127.0.0.1:9/sse" },
        },
        tasks: { maxOutputBytes: 4096, cwdRoots: ["/tmp"] },
        declarations: { prompt: 2000, search: 30000 },
      },
    ];
    const invalid = [
      { limit: {} },
      { limits: { timeoutMs: 0 } },
      { mcpServers: { "a b": { command: "x" } } },
      { mcpServers: { a: { url: "ftp://x" } } },
      { mcpServers: { a: { command: "x", url: "https://x" } } },
      { workspace: true },
      { declarations: { prompt: 100 } },
      { declarations: { promt: 2000 } },
      { declarations: { search: 1.5 } },
    ];
    for (const config of valid) {
      expect(published.safeParse(config).success, JSON.stringify(config)).toBe(true);
      expect(() => parseConfig(config, { base: "/project" })).not.toThrow();
    }
    for (const config of invalid) {
      expect(published.safeParse(config).success, JSON.stringify(config)).toBe(false);
      expect(() => parseConfig(config, { base: "/project" }), JSON.stringify(config)).toThrow(ConfigError);
    }
  });
});

describe("problems name the line, the column and the fix", () => {
  it("a misspelt field gets did you mean, at its key's position, at any depth", () => {
    expect(problem('{\n  "limit": {}\n}')).toBe(
      'codemode.json:2:3: unknown field "limit"; did you mean "limits"? (known here: "$schema", "limits", "dataDir", "agentsDir", "workspace", "mcpServers", "tasks", "declarations", "approvals")',
    );
    expect(problem('{ "mcpServers": {\n  "fs": { "comand": "node" }\n} }')).toBe(
      [
        "codemode.json:2:9: mcpServers.fs.command is missing: it must be a non-empty string (the program to start)",
        'codemode.json:2:11: unknown field "mcpServers.fs.comand"; did you mean "command"? (known here: "type", "command", "args", "env", "cwd", "readOnlyTools", "startupTimeoutMs")',
      ].join("\n"),
    );
    expect(problem('{ "limits": { "timeoutMS": 5 } }')).toContain('codemode.json:1:15: unknown field "limits.timeoutMS"; did you mean "timeoutMs"?');
    // No near name: no guess.
    expect(problem('{ "zzz": 1 }')).toBe(
      'codemode.json:1:3: unknown field "zzz" (known here: "$schema", "limits", "dataDir", "agentsDir", "workspace", "mcpServers", "tasks", "declarations", "approvals")',
    );
  });

  it("a wrong value says what was expected and what it got, at the value", () => {
    expect(problem('{\n  "limits": {\n    "timeoutMs": -1\n  }\n}')).toBe("codemode.json:3:18: limits.timeoutMs must be an integer from 1 to 600000, got the number -1");
    expect(problem('{ "mcpServers": { "gh": { "url": "https://x", "headers": { "Authorization": 7 } } } }')).toBe(
      "codemode.json:1:77: mcpServers.gh.headers.Authorization must be a string, got the number 7",
    );
    expect(problem('{ "mcpServers": { "gh": { "type": "websocket", "url": "wss://x" } } }')).toBe(
      'codemode.json:1:35: mcpServers.gh.type must be one of "stdio", "http" or "sse", got the string "websocket"\ncodemode.json:1:55: mcpServers.gh.url must be an http:// or https:// URL, got the string "wss://x"',
    );
    expect(problem('{ "declarations": { "prompt": 100, "search": "big" } }')).toBe(
      'codemode.json:1:31: declarations.prompt must be an integer from 256 to 1000000, got the number 100\ncodemode.json:1:46: declarations.search must be an integer from 256 to 1000000, got the string "big"',
    );
    expect(problem('{ "workspace": "yes" }')).toBe('codemode.json:1:16: workspace must be false or an object { "write"?, "root"? }, got the string "yes"');
  });

  it("the CLI prints them and exits 2; a file that is not JSON is placed at its first error", async () => {
    const cases: Array<[string, string]> = [
      ['{\n  "limits": { "timeoutMs": 1000 },\n  dataDir: "x"\n}', 'codemode.json:3:3: not valid JSON: "dataDir" is not a JSON value (names and strings go in double quotes)\n'],
      ['{ "limits": { "timeoutMs": 1000, } }', "codemode.json:1:34: not valid JSON: a field name in double quotes was expected (JSON has no unquoted names, no comments and no trailing commas)\n"],
      ['{ "a": 1 // why\n}', "codemode.json:1:10: not valid JSON: JSON has no comments\n"],
      ["", "codemode.json:1:1: not valid JSON: a value was expected\n"],
    ];
    for (const [text, stderr] of cases) {
      const cwd = tempProject(text);
      expect(await runCli(["run", "-"], { cwd, stdin: "text(1)" })).toEqual({ code: 2, stdout: "", stderr });
    }
  });
});
