// Approvals through MCP elicitation (docs/approvals.md): when the client can ask its user, a
// program's calls that need approval are put to the person in one form — one choice per call,
// allow, deny or always (allow and remember for the session) — and the program goes on without
// interrupting. A client that declines answers deny; one that cancels, fails or cannot show the
// form leaves the run to interrupt with its continuation, as for a client without elicitation.
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { ApprovalAnswerInput } from "../codemode/approvals.js";
import type { PendingApproval } from "../codemode/continuation.js";

/** Longest input shown per call in the form's message; the person sees the rest in the program. */
const INPUT_CHARS = 1_000;
/** Calls put in one form; the calls past it get no answer, so the run interrupts for them. */
const FORM_CALLS = 20;

export function elicitingAsker(server: Server): (pending: PendingApproval[], signal: AbortSignal) => Promise<Record<string, ApprovalAnswerInput> | undefined> {
  return async (all, signal) => {
    const pending = all.slice(0, FORM_CALLS);
    const lines = pending.map((p) => {
      const json = JSON.stringify(p.input);
      return `- tools.${p.tool}(${json.length > INPUT_CHARS ? `${json.slice(0, INPUT_CHARS)}… [${json.length - INPUT_CHARS} characters cut]` : json})`;
    });
    const properties: Record<string, { type: "string"; title: string; description: string; enum: string[] }> = {};
    for (const p of pending) {
      properties[p.approval_id] = {
        type: "string",
        title: `tools.${p.tool}`,
        description: `allow: run it once; deny: refuse it; always: allow it and the same call for the rest of the session`,
        enum: ["allow", "deny", "always"],
      };
    }
    let result: Awaited<ReturnType<typeof server.elicitInput>>;
    try {
      result = await server.elicitInput(
        {
          mode: "form",
          message: `A program wants to make ${pending.length === 1 ? "a call that needs" : `${pending.length} calls that need`} your approval:\n${lines.join("\n")}`,
          requestedSchema: { type: "object", properties, required: pending.map((p) => p.approval_id) },
        },
        { signal },
      );
    } catch {
      return undefined;
    }
    if (result.action === "decline") return Object.fromEntries(pending.map((p) => [p.approval_id, { decision: "deny", reason: "declined in the client" }]));
    if (result.action !== "accept" || !result.content) return undefined;
    const answers: Record<string, ApprovalAnswerInput> = {};
    for (const p of pending) {
      const choice = result.content[p.approval_id];
      if (choice === "allow" || choice === "deny") answers[p.approval_id] = choice;
      else if (choice === "always") answers[p.approval_id] = { decision: "allow", remember: true };
    }
    return answers;
  };
}
