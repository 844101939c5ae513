// What a program gets is what the tool returned: a tool without an output schema resolves to a JSON
// copy of the value its `execute` returned (a ToolResult's record), never to its model text.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, defineTool, toolResult, z, type Codemode } from "../../src/index.js";

const plain = { name: "plain_object", description: "Returns an object, no schema.", execute: async () => ({ n: 3, when: new Date(0), items: ["a"] }) };
const shaped = defineTool({
  name: "with_model_text",
  description: "A tool with its own model text and no output schema.",
  input: z.object({}),
  execute: async () => ({ total: 2, rows: [1, 2] }),
  toModelOutput: (record) => `total ${(record as { total: number }).total}`,
});
const wrapped = { name: "wrapped", description: "Returns a ToolResult.", execute: async () => toolResult({ id: "r1" }, { modelOutput: "r1 is ready" }) };
const words = { name: "words", description: "Returns a string.", execute: async () => "just text" };
const nothing = { name: "nothing", description: "Returns undefined.", execute: async () => undefined };
const notJson = { name: "not_json", description: "Returns a BigInt.", execute: async () => ({ n: 10n }) };
const surrogate = { name: "broken_text", description: "Fails with a lone surrogate.", execute: async () => Promise.reject(new Error("bad \ud800 byte")) };

let cm: Codemode;
beforeAll(async () => {
  cm = await createCodemode({ tools: [plain, shaped, wrapped, words, nothing, notJson, surrogate] });
});
afterAll(async () => {
  await cm.close();
});

describe("what a program gets from a tool without an output schema", () => {
  it("an object stays an object (a JSON copy: a Date becomes its string)", async () => {
    const result = await cm.run(`const r = await tools.plain_object(); return { n: r.n, when: r.when, first: r.items[0], type: typeof r }`);
    expect(result.structuredContent.value).toStrictEqual({ n: 3, when: "1970-01-01T00:00:00.000Z", first: "a", type: "object" });
  });

  it("a toModelOutput text is for the model only; the program gets the record", async () => {
    const result = await cm.run(`return await tools.with_model_text({})`);
    expect(result.structuredContent.value).toStrictEqual({ total: 2, rows: [1, 2] });
    expect((await cm.callTool("with_model_text", {})).content).toStrictEqual([{ type: "text", text: "total 2" }]);
  });

  it("a ToolResult resolves to its record; a string stays a string; nothing is null", async () => {
    const result = await cm.run(`return [await tools.wrapped(), await tools.words(), await tools.nothing()]`);
    expect(result.structuredContent.value).toStrictEqual([{ id: "r1" }, "just text", null]);
  });

  it("a value that is not JSON rejects with tool_output_invalid", async () => {
    const result = await cm.run(`try { await tools.not_json() } catch (e) { return [e.code, e.message] }`);
    expect(result.structuredContent.value).toStrictEqual([
      "tool_output_invalid",
      "tools.not_json() returned a value that is not JSON (Do not know how to serialize a BigInt); the tool must return JSON data",
    ]);
  });

  it("declarations say unknown for such tools", () => {
    expect(cm.declarations()).toContain("  function plain_object(args?: Record<string, unknown>): Promise<unknown>;\n");
  });
});

describe("what the model must act on is in content", () => {
  it("a rejected call's stack inside the program names the line of the call", async () => {
    const result = await cm.run(`const a = 1;\ntry {\n  await tools.broken_text();\n} catch (e) { return e.stack }`);
    expect(result.structuredContent.value).toMatch(/^ +at <anonymous> \(program\.js:3:\d+\)\n$/);
  });

  it("a program that printed only with console says so, and the rejection of an async timer callback is reported", async () => {
    const result = await cm.run(`console.log("only here");\nsetTimeout(async () => {\n  await tools.broken_text();\n}, 1);\nawait sleep(30);`);
    const content = result.content[0]!.text;
    expect(result.structuredContent.status).toBe("ok");
    expect(content).toContain("(no output)\n\nWarnings:\n");
    expect(content).toContain("- a setTimeout callback threw and nothing caught it (line 3, column 26): ToolError: bad \ufffd byte");
    expect(content).toContain("- the program wrote 1 console line, which does not reach you (console.* goes to logs): print with text()");
    expect(result.details.warnings).toHaveLength(2);
  });

  it("warnings stay within the output budget", async () => {
    const small = await createCodemode({ tools: [], limits: { outputBudget: 300 } });
    try {
      const result = await small.run(`for (let i = 0; i < 20; i++) setTimeout(() => { throw new Error("x".repeat(500)) }, 0); text("y".repeat(1000)); await sleep(20);`);
      expect(Buffer.byteLength(result.content[0]!.text)).toBeLessThanOrEqual(300);
      expect(result.content[0]!.text).toContain("Warnings:");
      expect(result.details.warnings.length).toBeGreaterThan(1);
    } finally {
      await small.close();
    }
  });
});

describe("text that reaches the model is well-formed Unicode", () => {
  it("replaces lone surrogates in output, errors, warnings and console lines", async () => {
    const result = await cm.run(`console.log("c\\udc00"); text("a\\ud800b"); await tools.broken_text()`);
    const content = result.content[0]!.text;
    expect(content).toContain("Script failed (exception): ToolError: bad \ufffd byte");
    expect(content).toContain("a\ufffdb");
    expect(content.isWellFormed()).toBe(true);
    expect(result.structuredContent.error?.message).toBe("ToolError: bad \ufffd byte");
    expect(result.details.console).toStrictEqual([{ level: "log", text: "c\ufffd" }]);
  });
});

describe("how a result crosses into the sandbox", () => {
  it("as QuickJS's binary format when large, as JSON text when small; the program gets the same value either way", async () => {
    const row = z.object({ id: z.number(), name: z.string() });
    const rows = defineTool({
      name: "rows",
      description: "Some rows.",
      input: z.object({ n: z.number() }),
      output: z.object({ rows: z.array(row) }),
      execute: async ({ n }) => ({ rows: Array.from({ length: n }, (_, id) => ({ id, name: `row ${id}`, extra: "dropped by the schema" })) }),
    });
    const local = await createCodemode({ tools: [rows] });
    try {
      // The engine's settle sees what crosses: record its kinds.
      const engine = (local as unknown as { engine: { run: (...args: unknown[]) => { settle: (id: number, ok: boolean, json: unknown) => void } } }).engine;
      const run = engine.run.bind(engine);
      const kinds: string[] = [];
      engine.run = (...args: unknown[]) => {
        const handle = run(...args);
        const settle = handle.settle.bind(handle);
        handle.settle = (id, ok, json) => {
          kinds.push(typeof json === "string" ? "json" : "binary");
          settle(id, ok, json);
        };
        return handle;
      };
      // A new worker sends JSON until its start-up check of the binary format has passed.
      const program = `const a = await tools.rows({ n: 2 }); const b = await tools.rows({ n: 500 }); return [a.rows, b.rows.length, b.rows[499]]`;
      for (let attempt = 0; attempt < 100; attempt++) {
        kinds.length = 0;
        const result = await local.run(program);
        expect(result.structuredContent.value).toStrictEqual([
          [
            { id: 0, name: "row 0" },
            { id: 1, name: "row 1" },
          ],
          500,
          { id: 499, name: "row 499" },
        ]);
        if (kinds.includes("binary")) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(kinds).toStrictEqual(["json", "binary"]);

      // After a streak of small results the next ones are not encoded only to be dropped: a large
      // one then crosses as JSON (and ends the streak), the one after it binary again.
      kinds.length = 0;
      const streak = await local.run(
        `const small = []; for (let i = 0; i < 10; i++) small.push((await tools.rows({ n: 2 })).rows[1]); const b = await tools.rows({ n: 500 }); const c = await tools.rows({ n: 500 }); return [small[9], b.rows[499], c.rows.length]`,
      );
      expect(streak.structuredContent.value).toStrictEqual([{ id: 1, name: "row 1" }, { id: 499, name: "row 499" }, 500]);
      expect(kinds).toStrictEqual([...Array(11).fill("json"), "binary"]);
    } finally {
      await local.close();
    }
  });
});
