// One budget mechanism for every model-visible text: a program's output and a tool's content over
// the budget both keep head and tail, with a marker naming a spill file that holds the whole text.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { createCodemode, defineTool, ToolError, z, type Codemode } from "../../src/index.js";

const WHOLE = "H".repeat(30_000) + "M".repeat(20_000) + "T".repeat(10_000);
let cm: Codemode;

beforeAll(async () => {
  cm = await createCodemode({
    agentDirs: [],
    workers: { min: 0 },
    tools: [
      defineTool({ name: "long_text", description: "60,000 bytes of text", input: z.object({}), execute: () => WHOLE }),
      defineTool({
        name: "long_failure",
        description: "fails with a 60,000-byte message",
        input: z.object({}),
        execute: () => {
          throw new ToolError("tool_failed", `${WHOLE}; fix: call it with less`);
        },
      }),
    ],
  });
});
afterAll(async () => {
  await cm?.close();
});

/** The spill file a marker names. */
function markerPath(text: string): string {
  const m = /\[… \d+ of \d+ bytes of output cut; full output: (\S+) …\]/.exec(text);
  if (!m) throw new Error(`no spill marker in: ${text.slice(0, 200)}`);
  return m[1]!;
}

describe("tool content over the budget", () => {
  it("keeps head and tail, and a marker naming a spill file with the whole text", async () => {
    const result = await cm.callTool("long_text", {});
    const text = result.content[0]!.text;
    const path = markerPath(text);
    expect(path.endsWith(".txt")).toBe(true);
    expect(readFileSync(path, "utf8")).toBe(WHOLE);
    // The marker is sized with the largest count it could state; the rest is split 60/40 between
    // head and tail (the spill path's length depends on the machine's temp dir).
    const available = 40_000 - Buffer.byteLength(`\n\n[… 60000 of 60000 bytes of output cut; full output: ${path} …]\n\n`);
    const head = Math.floor(available * 0.6);
    const tail = available - head;
    const marker = `\n\n[… ${60_000 - head - tail} of 60000 bytes of output cut; full output: ${path} …]\n\n`;
    expect(text).toBe("H".repeat(head) + marker + "M".repeat(tail - 10_000) + "T".repeat(10_000));
    expect(path.startsWith("/") && head > 23_000 && tail > 15_000).toBe(true);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(40_000);
    expect(result.warnings).toStrictEqual([`tool "long_text" output was 60000 bytes; the model was sent its head and tail within the 40000-byte budget; full output: ${path}`]);
    expect(result.details).toBe(WHOLE);
  });

  it("a long failure message is cut the same way; structuredContent keeps it whole", async () => {
    const result = await cm.callTool("long_failure", {});
    const message = `${WHOLE}; fix: call it with less`;
    const text = result.content[0]!.text;
    const path = markerPath(text);
    expect(readFileSync(path, "utf8")).toBe(message);
    // The tail is where a failure says what to do next.
    expect(text.endsWith("T".repeat(100) + "; fix: call it with less")).toBe(true);
    expect(result.structuredContent).toStrictEqual({ error: { code: "tool_failed", message } });
    expect(result.isError).toBe(true);
  });

  it("uses the marker a program's own output gets", async () => {
    const run = await cm.run(`text(${JSON.stringify(WHOLE)})`);
    const tool = await cm.callTool("long_text", {});
    const shape = (text: string) =>
      text
        .replace(/\d+/g, "N")
        .replace(/full output: \S+/, "full output: P")
        .replace(/[HMT]+/g, "x");
    expect(shape(run.content[0]!.text)).toBe(shape(tool.content[0]!.text));
    expect(readFileSync(run.details.fullOutputPath!, "utf8")).toBe(WHOLE);
  });
});
