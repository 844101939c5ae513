// Re-entrant tool calls: a toJSON method or a getter in a call's arguments that calls a tool while
// the prelude converts those arguments. Each level nested another call (752 levels were accepted);
// now the inner call is refused with a clear error, the outer call rejects, and nothing runs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, defineTool, z, type Codemode } from "../../src/index.js";

let calls = 0;
const count = defineTool({
  name: "count",
  description: "Counts its calls.",
  input: z.object({ v: z.unknown().optional() }),
  output: z.object({ n: z.number() }),
  execute: async () => ({ n: ++calls }),
});

let cm: Codemode;
beforeAll(async () => {
  cm = await createCodemode({ tools: [count] });
});
afterAll(async () => {
  await cm.close();
});

const REFUSED = "tools.count() was called while the arguments of tools.count() were being converted to JSON (by a toJSON method or a getter); compute the values first and pass plain data";

describe("re-entrant tool calls while arguments are converted", () => {
  it("refuses a call from a toJSON method, recursively nested or not, and runs no tool", async () => {
    calls = 0;
    const result = await cm.run(`const evil = { toJSON() { tools.count({ v: evil }); return 1 } };\ntry { await tools.count({ v: evil }) } catch (e) { return [e.name, e.message] }`);
    expect(result.structuredContent.value).toStrictEqual(["TypeError", `tools.count(): the value must be JSON-serialisable (${REFUSED})`]);
    expect(calls).toBe(0);
    expect(result.details.calls).toStrictEqual([]);
  });

  it("refuses a call from a getter, uncaught: the failure names the outer call's line", async () => {
    calls = 0;
    const result = await cm.run(`const args = { get v() { return tools.count({}) } };\nawait tools.count(args);`);
    expect(result.structuredContent.error).toMatchObject({ kind: "exception", message: `TypeError: tools.count(): the value must be JSON-serialisable (${REFUSED})`, line: 2 });
    expect(calls).toBe(0);
  });

  it("still allows calls from toJSON of values printed with text(), and the next call works", async () => {
    calls = 0;
    const result = await cm.run(`text({ toJSON() { tools.count({}).then(() => {}); return "shown" } }); await sleep(5); return (await tools.count({})).n`);
    expect(result.structuredContent.value).toBe(2);
    expect(result.content[0]!.text.split("\n\n")[0]).toBe('"shown"');
  });
});
