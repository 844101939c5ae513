// Programs of the kind models write, each with one typical mistake: the model must be able to fix
// it from `content` alone — the fix, at the line of its own program. One row per mistake; the
// classes are sandbox APIs that do not exist, misuse of structured results, tool calls that are
// refused, syntax errors, TypeScript that needs generated code, limits reached by busy or polling
// programs, and promises nobody waits for.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCodemode, defineTool, z, type Codemode } from "../../src/index.js";

const listItems = defineTool({
  name: "list_items",
  description: "Items matching a query.",
  input: z.object({ query: z.string().optional(), limit: z.number().optional() }),
  output: z.object({ items: z.array(z.object({ id: z.string(), title: z.string() })), total: z.number() }),
  execute: async () => ({ items: [{ id: "a", title: "Alpha" }], total: 1 }),
});
const sessionStatus = defineTool({
  name: "session_status",
  description: "One session.",
  input: z.object({ id: z.string() }),
  views: {
    compact: z.object({ id: z.string(), state: z.string() }),
    full: z.object({ id: z.string(), state: z.string(), policy: z.object({ mode: z.string() }) }),
  },
  execute: async ({ id }) => ({ id, state: "active", policy: { mode: "strict" } }),
});
const listIssues = defineTool({
  name: "list_issues",
  namespace: "github",
  description: "Issues of a repository.",
  input: z.object({ repo: z.string() }),
  output: z.object({ issues: z.array(z.object({ number: z.number() })) }),
  execute: async () => ({ issues: [{ number: 1 }] }),
});
const failNow = { name: "fail_now", description: "Always fails.", execute: async () => Promise.reject(new Error("the disk is full")) };

interface Mistake {
  name: string;
  code: string;
  /** The fix, as the model must read it in content. */
  fix: string;
  /** The line of the program that content names. */
  line: number;
  status?: "ok" | "error";
  timeoutMs?: number;
  limits?: { maxToolCalls?: number };
}

const MISTAKES: Mistake[] = [
  // ---- sandbox APIs that do not exist ------------------------------------------------------------
  {
    name: "require a Node module",
    code: `const fs = require("fs");\ntext(fs.readFileSync("a.txt", "utf8"));`,
    fix: "there is no require() here: a program is one script with no modules, files or network; what the host offers is tools.*",
    line: 1,
  },
  { name: "static import", code: `import { readFile } from "node:fs/promises";\ntext(await readFile("a.txt"));`, fix: "drop the import; call host capabilities as tools.<name>(args)", line: 1 },
  {
    name: "dynamic import",
    code: `const name = "x";\nconst cp = await import("node:child_process");`,
    fix: 'drop the import of "node:child_process"; call host capabilities as tools.<name>(args)',
    line: 2,
  },
  {
    name: "fetch",
    code: `const page = await fetch("https://example.com");\ntext(await page.text());`,
    fix: "there is no network here: fetch() does not exist; only tools.* reach the outside",
    line: 1,
  },
  { name: "process.env", code: `const region = "eu";\nconst token = process.env.API_TOKEN;`, fix: "there is no process here (no environment, argv or exit)", line: 2 },
  { name: "Buffer", code: `text(Buffer.from("hello").toString("base64"));`, fix: "there is no Buffer here", line: 1 },
  { name: "setInterval", code: `let n = 0;\nsetInterval(() => n++, 10);`, fix: "setInterval does not exist here: loop with await sleep(ms), or use setTimeout", line: 2 },
  { name: "print instead of text", code: `const total = 3;\nprint("total: " + total);`, fix: "print() does not exist: text(value) is what reaches you", line: 2 },
  { name: "localStorage", code: `localStorage.setItem("seen", "1");`, fix: "store(key, value) and load(key) keep JSON values between runs of a session", line: 1 },
  { name: "misspelled sandbox global", code: `const items = [1, 2];\ntxt(items.length);`, fix: "txt is not defined: did you mean text?", line: 2 },
  { name: "a tool called without tools.", code: `const r = await list_items({ query: "a" });`, fix: "list_items is a tool: call it as await tools.list_items(args)", line: 1 },

  // ---- misuse of a structured result -------------------------------------------------------------
  {
    name: "for…of over the result object",
    code: `const r = await tools.list_items({});\nfor (const item of r) text(item.title);`,
    fix: "r is the object tools.list_items resolves to ({ items, total }), not an array: iterate r.items",
    line: 2,
  },
  {
    name: ".map on the result object",
    code: `const r = await tools.list_items({});\nconst titles = r.map((i) => i.title);`,
    fix: "r is the object tools.list_items resolves to ({ items, total }), not an array: use r.items.map(…)",
    line: 2,
  },
  { name: "array destructuring of the result object", code: `const [first] = await tools.list_items({});`, fix: "not an array: iterate (await tools.list_items({})).items", line: 1 },
  {
    name: "for await over the result",
    code: `const r = await tools.list_items({});\nfor await (const item of r) text(item.title);`,
    fix: "the result is already here: for (const item of r.items)",
    line: 2,
  },
  {
    name: "JSON.parse of an object",
    code: `const r = await tools.list_items({});\nconst data = JSON.parse(r);`,
    fix: "r is already an object (tools.list_items resolves to parsed JSON: { items, total }): use it directly, without JSON.parse",
    line: 2,
  },
  {
    name: "reading .content[0].text",
    code: `const r = await tools.list_items({});\ntext(r.content[0].text);`,
    fix: 'tools.list_items resolves to { items, total }, which has no "content": a tool resolves to its structured result itself (not an MCP result with content or text)',
    line: 2,
  },
  {
    name: "reading .text of a structured result",
    code: `const r = await tools.list_items({});\nconst lines = r.text.split("\\n");`,
    fix: 'tools.list_items resolves to { items, total }, which has no "text"',
    line: 2,
  },
  {
    name: "a field only the full view has",
    code: `const s = await tools.session_status({ id: "a" });\ntext(s.policy.mode);`,
    fix: 's.policy is only in the full result of tools.session_status: pass result_view: "full" in the call at line 1',
    line: 2,
  },
  {
    name: "a misspelled result key",
    code: `const r = await tools.list_items({});\ntext(r.itmes.length);`,
    fix: 'tools.list_items resolves to { items, total }, which has no "itmes": did you mean .items?',
    line: 2,
  },
  {
    name: "a misspelled key of an item in a callback",
    code: `const r = await tools.list_items({});\ntext(r.items.map((i) => i.titel.toUpperCase()).join());`,
    fix: 'items[0] in the result of tools.list_items has no "titel": did you mean .title?',
    line: 2,
  },
  {
    name: "a destructured key the result lacks",
    code: `const { rows } = await tools.list_items({});\ntext(rows.length);`,
    fix: 'tools.list_items resolves to { items, total }, which has no "rows"',
    line: 2,
  },
  { name: "a missing await", code: `const r = tools.list_items({});\ntext(r.items.length);`, fix: "r is the promise of tools.list_items() at line 1, not its result: await it", line: 2 },
  {
    name: "a property read from the promise",
    code: `const items = await tools.list_items({}).items;\ntext(items.length);`,
    fix: ".items is read from the promise of tools.list_items() at line 1, not from its result: write (await tools.list_items(…)).items",
    line: 2,
  },
  {
    name: "Object.keys of a key the result lacks",
    code: `const data = await tools.list_items({});\nObject.keys(data.result).forEach((k) => text(k));`,
    fix: 'tools.list_items resolves to { items, total }, which has no "result"',
    line: 2,
  },
  { name: "a misspelled built-in property", code: `const name = "report";\ntext(name.lenght.toString());`, fix: "name.lenght is undefined: did you mean .length?", line: 2 },
  {
    name: "a namespace called as a tool",
    code: `const issues = await tools.github({ repo: "a/b" });`,
    fix: "tools.github is a namespace of tools, not a tool: call one of tools.github.list_issues",
    line: 1,
  },

  // ---- tool calls that are refused ---------------------------------------------------------------
  { name: "an unknown tool", code: `const x = 1;\nawait tools.list_item({});`, fix: "tools.list_item is not a tool. Did you mean tools.list_items", line: 2 },
  { name: "a misspelled input key", code: `await tools.list_items({ qery: "a" });`, fix: 'tool "list_items" input has unknown key "qery"; did you mean "query"?', line: 1 },
  { name: "an input of the wrong type", code: `const n = 1;\nawait tools.list_items({ query: 42 });`, fix: 'tool "list_items" input "query" must be string, received number', line: 2 },
  {
    name: "ptc_subagent with a misspelled option",
    code: `const a = 1;\nawait tools.ptc_subagent({ agent: "echo", task: "x", backgroud: true });`,
    fix: 'tool "ptc_subagent" input has unknown key "backgroud"; did you mean "background"?',
    line: 2,
  },
  { name: "a tool failure nothing caught", code: `const a = 1;\nawait tools.fail_now({});`, fix: "ToolError: the disk is full (line 2, column 21)", line: 2 },

  // ---- syntax ------------------------------------------------------------------------------------
  {
    name: "await in a forEach callback",
    code: `const ids = ["a"];\nids.forEach((id) => {\n  await tools.list_items({ query: id });\n});`,
    fix: "mark the enclosing function async (async (x) => { … }); in a loop over items use for (const x of items)",
    line: 3,
  },
  { name: "an unclosed brace", code: `for (const x of [1]) {\n  if (x) {\n    text(x);\n}\ntext("end");`, fix: 'the "{" opened at line 2, column 10 is never closed: add the missing "}"', line: 2 },
  { name: "a bracket closed by the wrong one", code: `const a = 1;\nconst b = Math.max(a, 2];`, fix: 'the "(" opened at line 2, column 19 is closed by "]" at line 2, column 24', line: 2 },
  { name: "an unterminated string", code: `const a = 1;\ntext("hello);`, fix: "the string opened at line 2, column 6 is never closed: end it with the same quote on that line", line: 2 },
  { name: "an unterminated template literal", code: "const a = 1;\ntext(`hello ${a}\n);", fix: "the template literal opened at line 2, column 6 is never closed: add the closing `", line: 2 },
  { name: "a closing brace too many", code: `const r = await tools.list_items({});\ntext(r.total);\n}`, fix: 'the "}" at line 3, column 1 has no "{" before it to close: remove it', line: 3 },
  { name: "JSX", code: `const r = await tools.list_items({});\nconst el = <ul>{r.items.length}</ul>;`, fix: "there is no JSX here: build the text with a template literal", line: 2 },
  { name: "export in a program", code: `const value = 1;\nexport default value;`, fix: "drop the export; end the program with return value", line: 2 },
  { name: "assigning a const", code: `const total = 0;\nfor (const i of [1, 2]) total += i;`, fix: "total is declared with const: declare it with let to assign to it again", line: 2 },
  // QuickJS reports this one at a later statement: the line is the assignment's.
  { name: "assigning a const, then more code", code: `const n = 1;\nlet m = 2;\nn = 3;\nm = 4;\ntext(n + m);`, fix: "n is declared with const: declare it with let to assign to it again", line: 3 },
  {
    name: "Promise.all of several promises instead of one array",
    code: `const [a, b] = await Promise.all(tools.list_items({ query: "a" }), tools.list_items({ query: "b" }));`,
    fix: 'Promise.all takes one array of promises: Promise.all([tools.list_items({ query: "a" }), tools.list_items({ query: "b" })])',
    line: 1,
  },
  {
    name: "a tool constructed with new",
    code: `const r = await new tools.list_items({});`,
    fix: "tools.list_items is a function, not a class: call it without new, as await tools.list_items({ … })",
    line: 1,
  },
  {
    name: "a method of a tool",
    code: `const r = await tools.list_items.run({});`,
    fix: "tools.list_items is the tool itself, a function: call it as await tools.list_items({ … }) (it has no run())",
    line: 1,
  },
  { name: "Intl", code: `const format = new Intl.NumberFormat("en");\ntext(format.format(3));`, fix: "Intl does not exist here: format numbers with toFixed(digits)", line: 1 },
  { name: "holding too much at once", code: `const pages = [];\nfor (;;) pages.push("x".repeat(1e6) + pages.length);`, fix: "work through it in parts (a page, a slice or a file at a time)", line: 2 },
  { name: "recursion without an end", code: `function depth(n) { return depth(n + 1) + 1; }\ntext(depth(0));`, fix: "a function called itself too deeply: give the recursion a base case", line: 1 },
  { name: "exit()", code: `text("done");\nexit(0);`, fix: "exit() does not exist: end the program with return", line: 2 },
  {
    name: "a TypeScript enum",
    code: `const x = 1;\nenum Color { Red, Green }\ntext(Color.Red);`,
    fix: "TypeScript enum is not supported: it needs generated code, and only types are stripped here (line 2, column 1)\n2 | enum Color { Red, Green }\n  | ^\nuse a plain object instead",
    line: 2,
  },
  { name: "a TypeScript namespace", code: `namespace Util { export const two = 2 }\ntext(Util.two);`, fix: "TypeScript namespace is not supported", line: 1 },
  {
    name: "a TypeScript parameter property",
    code: `class Repo {\n  constructor(private name: string) {}\n}`,
    fix: "declare the field in the class body and assign it in the constructor (this.x = x)",
    line: 2,
  },

  // ---- limits reached by busy or polling programs ------------------------------------------------
  {
    name: "a busy-wait",
    code: `const until = Date.now() + 60_000;\nwhile (Date.now() < until) {}`,
    fix: "to wait, use await sleep(ms) instead of spinning; to stop in time, check budget().ms_left in long loops (the loop at line 2)",
    line: 2,
    timeoutMs: 300,
  },
  {
    name: "polling until the deadline",
    code: `let r;\ndo {\n  r = await tools.list_items({});\n  await sleep(20);\n} while (r.total < 5);`,
    fix: "poll with await sleep(ms) between calls and stop before the deadline (budget().ms_left)",
    line: 3,
    timeoutMs: 400,
  },
  {
    name: "polling past the call limit",
    code: `const wanted = 5;\nfor (;;) if ((await tools.list_items({})).total >= wanted) break;`,
    fix: "50 of the calls went to tools.list_items: when polling, wait between calls with await sleep(1000)",
    line: 2,
    limits: { maxToolCalls: 50 },
  },
  { name: "awaiting a promise nothing resolves", code: `const a = 1;\nawait new Promise((resolve) => {});`, fix: "a new Promise whose resolve is never called?", line: 2 },

  // ---- promises nobody waits for (the run itself succeeds) ---------------------------------------
  {
    name: "a tool call neither awaited nor kept",
    code: `tools.list_items({ query: "x" });\ntext("done");`,
    fix: "tools.list_items(…) at line 1 is neither awaited nor kept, so the program does not wait for it — write await tools.list_items(…)",
    line: 1,
    status: "ok",
  },
  {
    name: "forEach with an async callback",
    code: `const r = await tools.list_items({});\nr.items.forEach(async (item) => {\n  await tools.list_items({ query: item.id });\n});`,
    fix: "r.items.forEach(async …) at line 2 does not wait for its callbacks",
    line: 2,
    status: "ok",
  },
  {
    name: "a then() chain nobody waits for",
    code: `tools.list_items({}).then((r) => text(String(r.total)));`,
    fix: "tools.list_items(…) at line 1 is neither awaited nor kept",
    line: 1,
    status: "ok",
  },
  {
    name: "Promise.all without await",
    code: `const ids = ["a", "b"];\nPromise.all(ids.map((id) => tools.list_items({ query: id })));`,
    fix: "Promise.all(…) at line 2 is not awaited, so the program does not wait for it — write await Promise.all(…)",
    line: 2,
    status: "ok",
  },
  {
    name: "an async main() without await",
    code: `async function main() {\n  await tools.list_items({});\n}\nmain();`,
    fix: "main() at line 4 calls an async function without await, so the program does not wait for it",
    line: 4,
    status: "ok",
  },
  {
    name: "an exception in a setTimeout callback",
    code: `setTimeout(() => {\n  null.x;\n}, 1);\nawait sleep(20);`,
    fix: "a setTimeout callback threw and nothing caught it (line 2, column 7): TypeError: cannot read property 'x' of null",
    line: 2,
    status: "ok",
  },
  {
    name: "a failed call nothing waited for",
    code: `tools.fail_now({});\nawait sleep(20);\ntext("end");`,
    fix: "tools.fail_now(…) at line 1 is neither awaited nor kept, so the program does not wait for it; it failed and nothing caught it: the disk is full",
    line: 1,
    status: "ok",
  },
  // ---- a promise used as its value: no exception, a wrong value, so a warning names the line ----
  {
    name: "a field of a call's promise in a string",
    code: `const r = tools.list_items({});\ntext("items: " + r.total);`,
    fix: "line 2: .total was read from a promise, not from the value it resolves to (it gave undefined): await the promise where it is made (const r = await tools.name(…)) or write (await promise).total",
    line: 2,
    status: "ok",
  },
  {
    name: "a field of an async function's promise in a condition",
    code: `async function count() {\n  return (await tools.list_items({})).total;\n}\nconst n = count();\nif (n.ok) text("some");`,
    fix: "line 5: .ok was read from a promise",
    line: 5,
    status: "ok",
  },
  {
    name: "JSON.stringify of a call's promise",
    code: `const r = tools.list_items({});\n\ntext(JSON.stringify(r));`,
    fix: "line 3: JSON.stringify met a promise, which it writes as {}: await the promise first and stringify its value",
    line: 3,
    status: "ok",
  },
  {
    name: "a call's promise passed on as an argument",
    code: `const first = tools.list_items({});\nconst r = await tools.session_status({ id: first });`,
    fix: `TypeError: tools.session_status(): the value's "id" is a promise, which JSON turns into {}: await it (a forgotten await) and pass its value`,
    line: 2,
  },
  {
    name: "a Map stored between runs",
    code: `const seen = new Map([["a", 1]]);\nstore("seen", seen);`,
    fix: `TypeError: store("seen"): the value is a Map, which JSON turns into {}: pass Object.fromEntries(map) or [...map]`,
    line: 2,
  },
  {
    name: "a call's promise in a template literal",
    code: `const r = tools.list_items({});\ntext(\`got \${r}\`);`,
    fix: 'line 2: a promise was turned into a string (it shows as "[a Promise: await it to get its value]"): await it first and use its value',
    line: 2,
    status: "ok",
  },
];

let cm: Codemode;
beforeAll(async () => {
  cm = await createCodemode({
    tools: [listItems, sessionStatus, listIssues, failNow],
    agents: [
      { name: "echo", description: "echo", driver: "script", scriptCode: "text(task)" },
      // Runs until it is stopped: a task a program polls past its deadline.
      { name: "slow", description: "never done", driver: "function", run: ({ signal }) => new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })) },
    ],
  });
});
afterAll(async () => {
  await cm.close();
});

describe("a model fixes its program from the first error it sees", () => {
  it("covers at least 30 distinct mistakes", () => {
    expect(new Set(MISTAKES.map((m) => m.name)).size).toBe(MISTAKES.length);
    expect(MISTAKES.length).toBeGreaterThanOrEqual(30);
  });

  it("polling a task until the deadline names the call and the last status it saw", async () => {
    const code = `const { task_id } = await tools.ptc_subagent({ agent: "slow", task: "wait", background: true });\nlet out;\ndo {\n  out = await tools.ptc_task_output({ task_id });\n  await sleep(25);\n} while (out.status !== "succeeded");`;
    const result = await cm.run(code, { timeoutMs: 2_000 });
    const content = result.content[0]!.text;
    expect(result.structuredContent.error).toMatchObject({ kind: "timeout", line: 4 });
    expect(content).toMatch(
      /^Script failed \(timeout\): the program was still polling when its 2000 ms deadline passed: it called tools\.ptc_task_output \d+ times; the last statuses it saw: [0-9A-Z]{26} running \(line 4, column 15\)/,
    );
    expect(content).toContain(
      "wait for the tasks in one call instead of polling: await tools.ptc_task_wait({ task_ids }) returns when they have ended, or shortly before the deadline with timed_out: true (the call at line 4)",
    );
    const running = (await cm.callTool("ptc_task_list", { status: ["running"] })).structuredContent as { tasks: { id: string }[] };
    for (const task of running.tasks) await cm.callTool("ptc_task_stop", { task_id: task.id });
  });

  for (const mistake of MISTAKES) {
    it(mistake.name, async () => {
      const result = await cm.run(mistake.code, { timeoutMs: mistake.timeoutMs ?? 5_000, ...(mistake.limits ? { limits: mistake.limits } : {}) });
      const content = result.content.map((block) => block.text).join("\n");
      expect(result.structuredContent.status, content).toBe(mistake.status ?? "error");
      expect(content).toContain(mistake.fix);
      if ((mistake.status ?? "error") === "error") {
        expect(result.structuredContent.error?.line, content).toBe(mistake.line);
        expect(content.split("\n")[0]).toContain(`(line ${mistake.line}, column `);
        // The code frame shows that line as the user wrote it.
        expect(content).toContain(`\n${mistake.line} | ${mistake.code.split("\n")[mistake.line - 1]!.replace(/\t/g, " ")}\n`);
      } else {
        expect(content).toMatch(new RegExp(`\\bline ${mistake.line}\\b`));
        // Still in details.warnings, for a UI.
        expect(result.details.warnings.join("\n")).toContain(mistake.fix);
      }
    });
  }
});
