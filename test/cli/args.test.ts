// Flag tables: node:util's parseArgs reads the argv; errors name the flag and what it expects, and
// each command's help is generated from the same table, so a flag cannot be parsed and undocumented.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { commandHelp, parseArgs, UsageError, type FlagTable } from "../../src/cli/args.js";
import { main } from "../../src/cli/main.js";

const TABLE = {
  json: { type: "boolean", short: "j", description: "print JSON" },
  timeout: { type: "string", value: "<duration>", short: "t", description: "a deadline" },
  status: { type: "string", value: "<s,…>", list: true, description: "only these" },
  input: { type: "string", value: "<name>=<value>", repeat: true, description: "an input, kept whole" },
  help: { type: "boolean", short: "h", description: "print this help" },
} satisfies FlagTable;

const parse = (argv: string[]) => parseArgs("codemode x", argv, TABLE);
const usage = (argv: string[]) => {
  try {
    parse(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(" ")}`);
};

describe("parseArgs", () => {
  it("reads long and short flags, --flag=value, grouped short switches and --", () => {
    expect(parse(["a.js", "--json", "--timeout=5s"])).toStrictEqual({ flags: { json: true, timeout: "5s" }, positionals: ["a.js"] });
    expect(parse(["-j", "-t", "2m", "b.js"])).toStrictEqual({ flags: { json: true, timeout: "2m" }, positionals: ["b.js"] });
    expect(parse(["-jh"])).toStrictEqual({ flags: { json: true, help: true }, positionals: [] });
    expect(parse(["-t5s"])).toStrictEqual({ flags: { timeout: "5s" }, positionals: [] });
    expect(parse(["--", "--json", "-"])).toStrictEqual({ flags: {}, positionals: ["--json", "-"] });
  });

  it("a list flag splits commas; a repeated flag keeps each value whole", () => {
    expect(parse(["--status", "failed,lost", "--status=running", "--input", "a=1,2", "--input", "b=x=y"]).flags).toStrictEqual({
      status: ["failed", "lost", "running"],
      input: ["a=1,2", "b=x=y"],
    });
  });

  it("errors name the flag and what it expects", () => {
    expect(usage(["--jsn"])).toBe('codemode x: unknown flag "--jsn"; did you mean --json? (known: --json, --timeout, --status, --input, --help)');
    expect(usage(["-x"])).toMatch(/^codemode x: unknown flag "-x"; did you mean --\w+\? \(known: --json, /);
    expect(usage(["--timeout"])).toBe("codemode x: --timeout needs a value <duration>");
    expect(usage(["--timeout", "--json"])).toBe("codemode x: --timeout needs a value <duration>");
    expect(usage(["-t"])).toBe("codemode x: --timeout needs a value <duration>");
    expect(usage(["--json=yes"])).toBe('codemode x: --json is a switch and takes no value, got "--json=yes"');
    expect(usage(["--timeout", "1s", "-t", "2s"])).toBe("codemode x: --timeout given twice");
    expect(parseArgs.bind(null, "codemode y", ["--any"], {})).toThrow('codemode y: unknown flag "--any"; it takes no flags');
  });
});

describe("help generated from the table", () => {
  it("lists every described flag with its alias and value, descriptions wrapped beside them", () => {
    const help = commandHelp({ usage: "codemode x <file>", about: "Does x.", flags: TABLE, notes: "Exit 0." });
    expect(help).toBe(
      [
        "Usage: codemode x <file>",
        "",
        "Does x.",
        "",
        "  -j, --json                  print JSON",
        "  -t, --timeout <duration>    a deadline",
        "      --status <s,…>          only these",
        "      --input <name>=<value>  an input, kept whole",
        "  -h, --help                  print this help",
        "",
        "Exit 0.",
        "",
      ].join("\n"),
    );
  });

  it("every command answers -h with its help, and the help names every flag the command accepts", async () => {
    const capture = async (argv: string[]) => {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      const chunks: Buffer[] = [];
      const errors: Buffer[] = [];
      stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
      stderr.on("data", (chunk: Buffer) => errors.push(chunk));
      const code = await main(argv, { cwd: "/nonexistent", stdin: new PassThrough(), stdout, stderr, env: {} });
      return { code, stdout: Buffer.concat(chunks).toString(), stderr: Buffer.concat(errors).toString() };
    };
    for (const command of [["run"], ["mcp"], ["tasks"], ["task"], ["tools"], ["init"], ["workflow", "run"], ["workflow", "validate"]]) {
      const short = await capture([...command, "-h"]);
      expect(short.code, command.join(" ")).toBe(0);
      expect(short.stdout).toBe((await capture(["help", command[0]!])).stdout);
      expect(short.stdout).toBe((await capture([...command, "--help"])).stdout);
      // The flags the command knows, as its unknown-flag message lists them, are all in its help.
      const unknown = await capture([...command, "--zzz"]);
      expect(unknown.code).toBe(2);
      const known = /\(known: ([^)]*)\)/.exec(unknown.stderr)![1]!.split(", ");
      expect(known.length).toBeGreaterThan(1);
      for (const flag of known) expect(short.stdout, `${command.join(" ")} ${flag}`).toMatch(new RegExp(`^  (-\\w, |    )${flag}\\b`, "m"));
    }
  });
});
