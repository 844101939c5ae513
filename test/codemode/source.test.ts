// What models send: TypeScript and programs inside Markdown fences run as the JavaScript they
// mean, and every error names the line of the user's own program (the fenced code's lines; every
// line and column of the TypeScript as written).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, defineTool, z, type Codemode } from "../../src/index.js";

const lookup = defineTool({
  name: "lookup",
  description: "One record.",
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string(), tags: z.array(z.string()) }),
  execute: async ({ id }) => ({ id, tags: ["a", "b"] }),
});

let cm: Codemode;
beforeAll(async () => {
  cm = await createCodemode({ tools: [lookup] });
});
afterAll(async () => {
  await cm.close();
});

const TS_PROGRAM = [
  `import type { Something } from "elsewhere";`,
  `interface Row { id: string; tags: string[] }`,
  `type Page<T> = { rows: T[]; next?: string };`,
  `declare const injected: number;`,
  `function pick<T extends object>(rows: T[], n: number = 1, label?: string): T[] {`,
  `  return rows.slice(0, n);`,
  `}`,
  `const r = (await tools.lookup({ id: "x" })) as Row;`,
  `const page: Page<Row> = { rows: [r] } satisfies Page<Row>;`,
  `const first = pick<Row>(page.rows)[0]!;`,
  `text(first.tags.join(",") as string);`,
  `return page.rows.length;`,
].join("\n");

describe("TypeScript", () => {
  it("runs with types stripped and says so in details", async () => {
    const result = await cm.run(TS_PROGRAM);
    expect(result.structuredContent).toMatchObject({ status: "ok", value: 1 });
    expect(result.content[0]!.text.split("\n\n")[0]).toBe("a,b");
    expect(result.details.source).toStrictEqual({ typescript: true });
  });

  it("reports a runtime error at the line and column the user wrote", async () => {
    const result = await cm.run(`const a: number = 1;\nconst o: { x?: { y: string } } = {};\nconst v: string = o.x!.y;`);
    expect(result.structuredContent.error).toMatchObject({ kind: "exception", message: "TypeError: cannot read property 'y' of undefined", line: 3, column: 23 });
    expect(result.content[0]!.text).toContain("\n3 | const v: string = o.x!.y;\n  |                       ^\n");
  });

  it("reports a syntax error of the stripped program at the user's position", async () => {
    const result = await cm.run(`const a: number = 1;\nconst b: string = ;`);
    expect(result.structuredContent.error).toMatchObject({ kind: "syntax", line: 2, column: 19 });
    expect(result.details.source).toStrictEqual({ typescript: true });
  });

  it("costs nothing for JavaScript: no note, the program runs as written", async () => {
    const result = await cm.run(`const a = 1; return a`);
    expect(result.structuredContent.value).toBe(1);
    expect(Object.hasOwn(result.details, "source")).toBe(false);
  });

  it("leaves a program longer than 512 KiB as it is: no stripping or parsing on the host's thread", async () => {
    const result = await cm.run(`${"// padding\n".repeat(50_000)}const a: number = 1;`);
    expect(result.structuredContent.error).toMatchObject({ kind: "syntax", line: 50_001 });
    expect(Object.hasOwn(result.structuredContent.error!, "hint")).toBe(false);
    expect(Object.hasOwn(result.details, "source")).toBe(false);
  });

  it("refuses what needs generated code, naming the construct and its line", async () => {
    const result = await cm.run(`const n: number = 1;\nclass A {\n  constructor(readonly id: string) {}\n}`);
    expect(result.structuredContent.error).toStrictEqual({
      kind: "syntax",
      message: "TypeScript parameter property is not supported: it needs generated code, and only types are stripped here",
      line: 3,
      column: 15,
      hint: "declare the field in the class body and assign it in the constructor (this.x = x)",
    });
  });
});

describe("Markdown fences", () => {
  it("runs the fenced code of a message with prose around it, with the fenced program's line numbers", async () => {
    const message = [
      "Here is the program:",
      "",
      "```ts",
      "const r = await tools.lookup({ id: 'x' });",
      "const n: number = r.tags.length;",
      "text(r.missing.length);",
      "```",
      "",
      "It prints the count.",
    ].join("\n");
    const result = await cm.run(message);
    expect(result.structuredContent.error).toMatchObject({ kind: "exception", message: "TypeError: cannot read property 'length' of undefined", line: 3 });
    expect(result.content[0]!.text).toContain("\n3 | text(r.missing.length);\n");
    expect(result.content[0]!.text).toContain('tools.lookup resolves to { id, tags }, which has no "missing"');
    expect(result.details.source).toStrictEqual({ fence: { language: "ts", blocks: 1, firstLine: 4 }, typescript: true });
  });

  it("runs an untagged fence, and joins the JavaScript blocks of a message in order", async () => {
    const untagged = await cm.run("```\ntext('one')\n```");
    expect(untagged.content[0]!.text).toBe("one");
    expect(untagged.details.source).toStrictEqual({ fence: { language: null, blocks: 1, firstLine: 2 } });
    const two = await cm.run('First:\n```js\nconst a = 2;\n```\nThen:\n```javascript\ntext(String(a * 21));\n```\n```json\n{"not": "code"}\n```');
    expect(two.content[0]!.text).toBe("42");
    expect(two.details.source).toStrictEqual({ fence: { language: "js", blocks: 2, firstLine: 3 } });
  });

  it("leaves a program without a fence alone, backticks in its strings included", async () => {
    const result = await cm.run('const s = "a ``` b".length;\ntext(`${s} ~~~`)');
    expect(result.content[0]!.text).toBe("7 ~~~");
    expect(Object.hasOwn(result.details, "source")).toBe(false);
  });
});
