// The bridge's names are declared once, in src/engine/protocol.ts; sandbox/prelude.js (plain
// JavaScript inside the sandbox) spells them as literals. These tests hold the two together: the
// operations the prelude sends are exactly HOST_OPS, and the tags it writes are the ones the host reads.
import { runInNewContext } from "node:vm";
import { parse } from "acorn";
import { describe, expect, it } from "vitest";
import { CLOCK_MARK, HOST_OPS, RESULT_TAG } from "../../src/engine/protocol.js";
import { splitClock } from "../../src/codemode/ledger.js";
import { preludeSource } from "../../src/package-files.js";

interface Node {
  type: string;
  [key: string]: unknown;
}

/** The first argument of every `host(…)` call in the prelude, as written. */
function hostOperations(source: string): unknown[] {
  const found: unknown[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (!value || typeof value !== "object") return;
    const node = value as Node;
    if (node.type === "CallExpression") {
      const callee = node.callee as Node;
      const first = (node.arguments as Node[])[0];
      if (callee.type === "Identifier" && callee.name === "host") found.push(first?.type === "Literal" ? first.value : `<${first?.type}>`);
    }
    for (const key of Object.keys(node)) if (key !== "type") visit(node[key]);
  };
  visit(parse(source, { ecmaVersion: "latest" }));
  return found;
}

interface PreludeFace {
  result(value: unknown): string | undefined;
  install(configJson: string): void;
}

/** The prelude evaluated in a plain V8 context, its host function recording what it is sent. */
function evaluatePrelude(answer: (op: string, ...args: unknown[]) => unknown = () => undefined) {
  const sent: unknown[][] = [];
  const sandbox: Record<string, unknown> = {
    __codemode_host: (...args: unknown[]) => {
      sent.push(args);
      return answer(...(args as [string, ...unknown[]]));
    },
  };
  const face = runInNewContext(preludeSource(), sandbox) as PreludeFace;
  return { face, sent, sandbox };
}

describe("the bridge between the prelude and the host", () => {
  it("sends exactly the operations protocol.ts declares", () => {
    const operations = hostOperations(preludeSource());
    expect(operations.every((op) => typeof op === "string")).toBe(true);
    expect([...new Set(operations)].sort()).toStrictEqual([...HOST_OPS].sort());
  });

  it("tags the program's value as the host reads it", () => {
    const { face } = evaluatePrelude();
    expect(face.result({ a: 1 })).toBe(`${RESULT_TAG.value}{"a":1}`);
    expect(face.result(() => 1)).toBe(`${RESULT_TAG.notJson}the return value is a function, not a JSON value`);
    expect(face.result(undefined)).toBeUndefined();
  });

  it("puts a replayable run's clock readings before a call's arguments as ledger.ts splits them", () => {
    const { face, sent, sandbox } = evaluatePrelude((op) => (op === "call" ? 1 : undefined)); // the host answers a call with its id
    face.install(JSON.stringify({ tools: ["echo"], globals: {}, determinism: { seed: [1, 2, 3, 4], clock: [1_700_000_000_000, 1] } }));
    runInNewContext(`Date.now(); tools.echo({ x: 1 })`, sandbox);
    const call = sent.find(([op]) => op === "call")!;
    expect(call[0]).toBe("call");
    expect(call[1]).toBe("echo");
    expect((call[2] as string).startsWith(CLOCK_MARK)).toBe(true);
    expect(splitClock(call[2] as string)).toStrictEqual({ args: '{"x":1}', readings: [1_700_000_000_000, 1] });
  });
});
