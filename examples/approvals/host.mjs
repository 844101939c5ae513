// A host that offers a program a tool needing a person's approval (docs/approvals.md).
// The program looks the release up, then asks to deploy it. The run stops before the deploy runs;
// here the "person" is the first argument (allow, deny or always), and the host resumes the run.
// The lookup ran once, in the first run; on resume it is answered from the run's ledger.
//
//   npm run build && node examples/approvals/host.mjs allow
import { createCodemode, defineTool, z } from "codemode-runtime";

const answer = process.argv[2] ?? "allow";
if (!["allow", "deny", "always"].includes(answer)) throw new Error(`usage: node examples/approvals/host.mjs allow|deny|always, got ${answer}`);

const ran = [];
const release = defineTool({
  name: "release",
  description: "The release a name points at",
  input: z.object({ name: z.string() }),
  output: z.object({ version: z.string() }),
  execute: async ({ name }) => {
    ran.push(`release ${name}`);
    return { version: `${name}-1.4.2` };
  },
});
const deploy = defineTool({
  name: "deploy",
  description: "Deploys a version to an environment",
  // Only production needs a person; staging deploys go ahead.
  approval: (input) => input.env === "production",
  input: z.object({ version: z.string(), env: z.enum(["staging", "production"]) }),
  output: z.object({ url: z.string() }),
  // ctx.idempotencyKey is the same in every run of this program: a real deployer would dedupe on it.
  execute: async ({ version, env }, ctx) => {
    ran.push(`deploy ${version} to ${env} (${ctx.idempotencyKey.split(":")[1]})`);
    return { url: `https://${env}.example/${version}` };
  },
});

const program = `
const { version } = await tools.release({ name: "web" });
const staging = await tools.deploy({ version, env: "staging" });
text("staging: " + staging.url);
try {
  const production = await tools.deploy({ version, env: "production" });
  text("production: " + production.url);
} catch (e) {
  text("production not deployed: " + e.reason);
}`;

const cm = await createCodemode({ tools: [release, deploy] });
try {
  const first = await cm.run(program);
  const { status, pending_approvals: pending, continuation } = first.structuredContent;
  console.log(`first run: ${status}; waiting: ${pending.map((p) => `${p.approval_id} tools.${p.tool}(${JSON.stringify(p.input)})`).join(", ")}`);
  const decision = answer === "always" ? { decision: "allow", remember: true } : answer;
  const done = await cm.resume(continuation, { approvals: Object.fromEntries(pending.map((p) => [p.approval_id, decision])) });
  console.log(`resumed (${answer}): ${done.structuredContent.status}`);
  console.log(done.content[0].text);
  console.log(`the host ran: ${ran.join("; ")}`);
} finally {
  await cm.close();
}
