// Approvals over MCP, with the official SDK client: a client that can elicit is asked and the
// program goes on; one that cannot gets the interrupted result and resumes with its continuation.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { ElicitRequestSchema, type ElicitRequest } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { approvalDigest, createCodemode, defineTool, z, type Codemode } from "../../src/index.js";
import { createMcpServer } from "../../src/mcp/server.js";

let deploys: string[] = [];
let lookups = 0;
const deploy = defineTool({
  name: "deploy",
  description: "Deploys a build",
  approval: "required",
  input: z.object({ env: z.string() }),
  output: z.object({ deployed: z.string() }),
  execute: async ({ env }) => {
    deploys.push(env);
    return { deployed: env };
  },
});
const lookup = defineTool({
  name: "lookup",
  description: "Looks up",
  input: z.object({ q: z.string() }),
  output: z.object({ value: z.string() }),
  execute: async ({ q }) => {
    lookups++;
    return { value: q };
  },
});
const PROGRAM = `const a = await tools.lookup({ q: "v1" }); try { return (await tools.deploy({ env: "prod" })).deployed + " " + a.value; } catch (e) { return e.reason; }`;

const runtimes: Codemode[] = [];
const clients: Client[] = [];
afterEach(() => {
  deploys = [];
  lookups = 0;
});
afterAll(async () => {
  for (const client of clients) await client.close();
  for (const cm of runtimes) await cm.close();
});

async function connect(capabilities: ConstructorParameters<typeof Client>[1]): Promise<{ client: Client; cm: Codemode }> {
  const cm = await createCodemode({ tools: [deploy, lookup], workers: { max: 2 } });
  runtimes.push(cm);
  const server = createMcpServer(cm);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "approvals-test", version: "1.0.0" }, capabilities);
  await client.connect(clientSide);
  clients.push(client);
  return { client, cm };
}

describe("approvals over MCP", () => {
  it("a client with elicitation is asked once, with the call's input as sent, and the program continues", async () => {
    const { client, cm } = await connect({ capabilities: { elicitation: { form: {} } } });
    const asked: ElicitRequest["params"][] = [];
    let answer = "allow";
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return { action: "accept", content: { call_2: answer } };
    });
    const result = await client.callTool({ name: "ptc_run_code", arguments: { code: PROGRAM, session: "m" } });
    expect(result.structuredContent).toStrictEqual({ status: "ok", value: "prod v1", tool_calls: 2, duration_ms: (result.structuredContent as { duration_ms: number }).duration_ms });
    expect(Object.hasOwn(result, "isError")).toBe(false);
    expect(asked).toStrictEqual([
      {
        mode: "form",
        message: `A program wants to make a call that needs your approval:\n- tools.deploy({"env":"prod"})`,
        requestedSchema: {
          type: "object",
          properties: {
            call_2: {
              type: "string",
              title: "tools.deploy",
              description: "allow: run it once; deny: refuse it; always: allow it and the same call for the rest of the session",
              enum: ["allow", "deny", "always"],
            },
          },
          required: ["call_2"],
        },
      },
    ]);
    expect(deploys).toStrictEqual(["prod"]);
    // deny: the program's catch sees approval_denied; always: remembered for the session.
    answer = "deny";
    const denied = await client.callTool({ name: "ptc_run_code", arguments: { code: PROGRAM, session: "m" } });
    expect((denied.structuredContent as { value: unknown }).value).toBe("approval_denied");
    answer = "always";
    await client.callTool({ name: "ptc_run_code", arguments: { code: PROGRAM, session: "m" } });
    expect(cm.approvals.list({ session: "m" }).map((a) => [a.tool, a.digest, a.decision])).toStrictEqual([["deploy", approvalDigest("deploy", { env: "prod" }), "allow"]]);
    const asks = asked.length;
    const remembered = await client.callTool({ name: "ptc_run_code", arguments: { code: PROGRAM, session: "m" } });
    expect((remembered.structuredContent as { value: unknown }).value).toBe("prod v1");
    expect(asked.length).toBe(asks);
    expect(deploys).toStrictEqual(["prod", "prod", "prod"]);
  });

  it("a gated host tool called directly is asked through elicitation; without an answer it is refused", async () => {
    const { client } = await connect({ capabilities: { elicitation: { form: {} } } });
    let action: "accept" | "cancel" = "accept";
    client.setRequestHandler(ElicitRequestSchema, async () => (action === "accept" ? { action, content: { call_1: "allow" } } : { action }));
    const result = await client.callTool({ name: "deploy", arguments: { env: "eu" } });
    expect(result.structuredContent).toStrictEqual({ deployed: "eu" });
    action = "cancel";
    const refused = await client.callTool({ name: "deploy", arguments: { env: "us" } });
    expect(refused.isError).toBe(true);
    expect((refused.content as Array<{ text: string }>)[0]!.text).toContain(`tool "deploy" needs a person's approval before it runs, and nobody answered; the tool did not run`);
    expect(deploys).toStrictEqual(["eu"]);
  });

  it("a client that cancels the form gets the continuation, as one without elicitation would", async () => {
    const { client } = await connect({ capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "cancel" }));
    const result = await client.callTool({ name: "ptc_run_code", arguments: { code: PROGRAM } });
    expect((result.structuredContent as { status: string }).status).toBe("interrupted");
    expect(deploys).toStrictEqual([]);
  });

  it("a client without elicitation gets the interrupted result with the continuation, and resumes with it", async () => {
    const { client } = await connect({ capabilities: {} });
    const first = await client.callTool({ name: "ptc_run_code", arguments: { code: PROGRAM } });
    const sc = first.structuredContent as { continuation: string; duration_ms: number };
    expect(first.structuredContent).toStrictEqual({
      status: "interrupted",
      pending_approvals: [{ approval_id: "call_2", tool: "deploy", input: { env: "prod" }, digest: approvalDigest("deploy", { env: "prod" }) }],
      continuation: sc.continuation,
      tool_calls: 2,
      duration_ms: sc.duration_ms,
    });
    const content = (first.content as Array<{ text: string }>)[0]!.text;
    expect(content).toContain(`- call_2: tools.deploy({"env":"prod"})`);
    expect(content).toContain(`call ptc_run_code with { "resume": ${JSON.stringify(sc.continuation)}, "approvals": { "call_2": "allow" } }`);
    expect(deploys).toStrictEqual([]);
    const done = await client.callTool({ name: "ptc_run_code", arguments: { resume: sc.continuation, approvals: { call_2: "allow" } } });
    expect(done.structuredContent).toStrictEqual({ status: "ok", value: "prod v1", tool_calls: 2, duration_ms: (done.structuredContent as { duration_ms: number }).duration_ms });
    expect(deploys).toStrictEqual(["prod"]);
    expect(lookups).toBe(1);
  });
});
