// Approvals on the command line (docs/approvals.md): `codemode run` asks on the terminal (y/n/always)
// when a program reaches a call that needs a person; without a terminal it prints the
// continuation, which `codemode resume` continues with the person's answers. `codemode approvals`
// lists and revokes what was remembered, per session.
import { createInterface } from "node:readline";
import type { ApprovalAnswerInput } from "../codemode/approvals.js";
import type { PendingApproval } from "../codemode/continuation.js";
import type { RunResult } from "../codemode/run-result.js";
import { commandHelp, CONFIG_FLAG, HELP_FLAG, parseArgs, usageFlags, UsageError, type FlagTable } from "./args.js";
import { loadConfig } from "./config.js";
import { EXIT_OK, forTerminal, write, type Io } from "./io.js";
import { openRuntime } from "./runtime.js";
import { reportRun } from "./report-run.js";

const RESUME_FLAGS = {
  allow: { type: "string", value: "<id>", list: true, description: "run that call (repeat it, or give several ids separated by commas)" },
  deny: { type: "string", value: "<id>", list: true, description: 'refuse it: the call rejects with code "tool_denied", reason "approval_denied"' },
  always: { type: "string", value: "<id>", list: true, description: "run it, and the same call (same tool and input) for the rest of the session" },
  json: { type: "boolean", short: "j", description: "print all three channels as JSON: content, structuredContent, details" },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const RESUME_HELP = commandHelp({
  usage: `codemode resume <continuation> ${usageFlags(RESUME_FLAGS)}`,
  about: `Continues a program that stopped for approvals (codemode run printed its continuation and the
approval ids). The program runs again from the start; the calls it completed before are answered
from its record, not run again.`,
  flags: RESUME_FLAGS,
  notes: `When stdin and stderr are a terminal, calls it reaches without an answer are asked there.
Exit codes: 0 the program succeeded, 1 it failed, 2 usage error (or a continuation that is
unknown, altered, expired or used), 3 it stopped for an approval again.`,
});

const APPROVALS_FLAGS = {
  session: { type: "string", value: "<name>", short: "s", description: "only this session's approvals (list), or forget that session's (revoke)" },
  json: { type: "boolean", short: "j", description: "list as JSON" },
  config: CONFIG_FLAG,
  help: HELP_FLAG,
} satisfies FlagTable;

export const APPROVALS_HELP = commandHelp({
  usage: [`codemode approvals [list] ${usageFlags(APPROVALS_FLAGS)}`, "codemode approvals revoke [<digest>] [--session <name>]"],
  about: `Approvals remembered with "always" (or { decision, remember: true }), per session, in the data dir.
They match a call by its approval digest: the tool and its input without result_view.
  list              the remembered approvals (default): session, tool, decision, digest, input
  revoke <digest>   forget that approval (in --session only, when given)
  revoke --session  forget every approval of that session`,
  flags: APPROVALS_FLAGS,
});

/** Asks on the terminal, one call at a time: y(es) allows, n(o) denies, a(lways) allows and remembers. */
export function terminalAsker(io: Io): (pending: PendingApproval[], signal: AbortSignal) => Promise<Record<string, ApprovalAnswerInput> | undefined> {
  return async (pending, signal) => {
    const rl = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
    const question = (text: string) =>
      new Promise<string | undefined>((resolve) => {
        const stop = () => resolve(undefined);
        signal.addEventListener("abort", stop, { once: true });
        rl.once("close", stop);
        rl.question(text, (answer) => {
          signal.removeEventListener("abort", stop);
          resolve(answer);
        });
      });
    const answers: Record<string, ApprovalAnswerInput> = {};
    try {
      for (const p of pending) {
        const json = JSON.stringify(p.input);
        const call = forTerminal(`tools.${p.tool}(${json.length > 2000 ? `${json.slice(0, 2000)}…` : json})`);
        for (;;) {
          const answer = await question(`codemode: the program wants to call ${call}\n  allow it? [y]es / [n]o / [a]lways for this session: `);
          if (answer === undefined) return Object.keys(answers).length > 0 ? answers : undefined;
          const choice = answer.trim().toLowerCase();
          if (choice === "y" || choice === "yes") answers[p.approval_id] = "allow";
          else if (choice === "n" || choice === "no") answers[p.approval_id] = "deny";
          else if (choice === "a" || choice === "always") answers[p.approval_id] = { decision: "allow", remember: true };
          else continue;
          break;
        }
      }
      return answers;
    } finally {
      rl.close();
    }
  };
}

/** Whether a person is at the terminal to answer (stdin and stderr both a TTY). */
export function canAsk(io: Io): boolean {
  return (io.stdin as { isTTY?: boolean }).isTTY === true && io.stderr.isTTY === true;
}

/** How an interrupted run's text tells the person at the command line to resume. */
export function cliResumeHint(continuation: string, pending: readonly PendingApproval[]): string {
  return `codemode resume ${continuation} ${pending.map((p) => `--allow ${p.approval_id}`).join(" ")} (or --deny <id>, --always <id>)`;
}

export async function resumeCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode resume", argv, RESUME_FLAGS);
  if (flags.help) {
    await write(io.stdout, RESUME_HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError(`codemode resume: give one continuation (what codemode run printed), got ${positionals.length}`);
  const approvals: Record<string, ApprovalAnswerInput> = {};
  for (const [flag, answer] of [
    ["allow", "allow"],
    ["deny", "deny"],
    ["always", { decision: "allow", remember: true }],
  ] as const) {
    for (const id of (flags[flag] as string[] | undefined) ?? []) {
      if (Object.hasOwn(approvals, id)) throw new UsageError(`codemode resume: ${id} is answered twice`);
      approvals[id] = answer;
    }
  }
  const config = loadConfig(io.cwd, flags.config as string | undefined);
  const runtime = await openRuntime(config, io.cwd);
  try {
    let result: RunResult;
    try {
      result = await runtime.cm.resumeInternal(positionals[0]!, { approvals, ...(canAsk(io) ? { askApproval: terminalAsker(io) } : {}) }, { resumeHint: cliResumeHint });
    } catch (error) {
      const e = error as { code?: string; message?: string };
      if (e.code === "continuation_invalid" || error instanceof TypeError) throw new UsageError(`codemode resume: ${e.message}`);
      throw error;
    }
    return await reportRun(result, flags.json === true, io, runtime);
  } finally {
    await runtime.close();
  }
}

export async function approvalsCommand(argv: readonly string[], io: Io): Promise<number> {
  const { flags, positionals } = parseArgs("codemode approvals", argv, APPROVALS_FLAGS);
  if (flags.help) {
    await write(io.stdout, APPROVALS_HELP);
    return EXIT_OK;
  }
  const [action = "list", ...rest] = positionals;
  if (action !== "list" && action !== "revoke") throw new UsageError(`codemode approvals: unknown action "${action}"; expected list or revoke`);
  const session = flags.session as string | undefined;
  const config = loadConfig(io.cwd, flags.config as string | undefined);
  const runtime = await openRuntime(config, io.cwd, { upstream: false, warm: false });
  try {
    if (action === "list") {
      if (rest.length > 0) throw new UsageError(`codemode approvals list: takes no arguments, got ${rest.join(" ")}`);
      const listed = runtime.cm.approvals.list(session === undefined ? {} : { session });
      if (flags.json) await write(io.stdout, `${JSON.stringify(listed, null, 2)}\n`);
      else if (listed.length === 0) await write(io.stdout, `no remembered approvals${session === undefined ? "" : ` in session "${session}"`}\n`);
      else for (const a of listed) await write(io.stdout, `${a.session}\t${a.decision}\ttools.${a.tool}(${JSON.stringify(a.input)})\t${a.digest}\t${a.created_at}\n`);
      return EXIT_OK;
    }
    if (rest.length > 1) throw new UsageError(`codemode approvals revoke: give one digest, got ${rest.length}`);
    const digest = rest[0];
    if (digest === undefined && session === undefined) throw new UsageError("codemode approvals revoke: give a digest (from codemode approvals list), --session <name>, or both");
    const count = runtime.cm.approvals.revoke({ ...(digest !== undefined ? { digest } : {}), ...(session !== undefined ? { session } : {}) });
    await write(io.stdout, `revoked ${count} remembered approval${count === 1 ? "" : "s"}\n`);
    return EXIT_OK;
  } finally {
    await runtime.close();
  }
}
