import { describe, it, expect } from "vitest";
import { z } from "zod";
import { boundText, defineTool, errorResult, toolRejection, guestValue, invokeTool, toTool, toolResult, ToolError, type ToolContext } from "../../src/tools/index.js";
import { newCalls, sessionStatusTool, skillViewTool } from "./sample-tools.js";

const ctx = (): ToolContext => ({ signal: new AbortController().signal, callId: "c", runId: "r", depth: 0 });

describe("errorResult", () => {
  it("gives the model the message and programs { error: { code, reason, message } }", () => {
    const err = new ToolError("tool_denied", 'tool "x" result view is pinned to "full" by the caller', { reason: "result_view_pinned" });
    const result = errorResult(err);
    expect(result).toStrictEqual({
      content: [{ type: "text", text: 'tool "x" result view is pinned to "full" by the caller' }],
      structuredContent: { error: { code: "tool_denied", reason: "result_view_pinned", message: 'tool "x" result view is pinned to "full" by the caller' } },
      isError: true,
    });
    expect(JSON.parse(JSON.stringify(result))).toStrictEqual(result);
  });

  it("omits reason when there is none, and treats other throws as tool_failed", () => {
    const plain = errorResult(new Error("boom"));
    expect(plain.structuredContent).toStrictEqual({ error: { code: "tool_failed", message: "boom" } });
    expect(Object.hasOwn(plain.structuredContent!.error as object, "reason")).toBe(false);
    expect(errorResult("just a string").structuredContent).toStrictEqual({ error: { code: "tool_failed", message: "just a string" } });
  });

  it("bounds the model text by the output budget", () => {
    const result = errorResult(new Error("x".repeat(1000)), { outputBudget: 300 });
    expect(Buffer.byteLength(result.content[0]!.text)).toBeLessThanOrEqual(300);
    expect((result.structuredContent!.error as { message: string }).message).toHaveLength(1000);
  });
});

describe("guestValue", () => {
  it("is structuredContent for a tool with an output schema or views", async () => {
    const tool = sessionStatusTool(newCalls());
    const result = await invokeTool(tool, { session_id: "s" }, { ctx: ctx() });
    expect(guestValue(tool, result)).toBe(result.structuredContent);
  });

  it("is the text joined with newlines for a tool without output schema", () => {
    const tool = toTool({ name: "t", description: "d", execute: () => "" });
    expect(
      guestValue(tool, {
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("a\nb");
  });

  it("turns an isError result into a thrown ToolError carrying its code and reason", () => {
    const tool = skillViewTool(newCalls());
    const result = errorResult(new ToolError("tool_denied", "no", { reason: "hook_denied" }));
    let thrown: unknown;
    try {
      guestValue(tool, result);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ToolError);
    expect((thrown as ToolError).toJSON()).toStrictEqual({ name: "ToolError", code: "tool_denied", reason: "hook_denied", message: "no" });
    expect(() => guestValue(tool, { content: [{ type: "text", text: "upstream said no" }], isError: true })).toThrow(new ToolError("tool_failed", "upstream said no"));
  });

  it("rejects a result that is not a ToolCallResult, or a tool that is not a tool", () => {
    const tool = skillViewTool(newCalls());
    expect(() => guestValue(tool, null as never)).toThrow(new TypeError('guestValue: "result" must be a ToolCallResult { content: [...] }, received null'));
    expect(() => guestValue(tool, { content: [] })).toThrow(new TypeError('guestValue: tool "skill_view" declares an output, so "result.structuredContent" must be an object, received undefined'));
    expect(() => guestValue({} as never, { content: [] })).toThrow(new TypeError("guestValue: tool must be a tool created by defineTool() or toTool(), received object"));
  });
});

describe("toolRejection", () => {
  it("keeps name, code, reason and the last 2,000 characters of the message", () => {
    const long = `${"head ".repeat(500)}the actual cause`;
    const g = toolRejection(new ToolError("tool_failed", long));
    expect(g.name).toBe("ToolError");
    expect(g.code).toBe("tool_failed");
    expect(Object.hasOwn(g, "reason")).toBe(false);
    expect(g.message).toHaveLength(2000);
    expect(g.message.endsWith("the actual cause")).toBe(true);
    expect(g.message.startsWith("…")).toBe(true);
    const astral = toolRejection(new Error(`x${"😀".repeat(1500)}`)).message;
    expect(astral.startsWith("…😀")).toBe(true);
    expect(astral.length).toBeLessThanOrEqual(2000);
    expect(toolRejection(new TypeError("bad"))).toStrictEqual({ name: "TypeError", code: "tool_failed", message: "bad" });
    expect(toolRejection(new ToolError("tool_denied", "no", { reason: "hook_denied" }))).toStrictEqual({ name: "ToolError", code: "tool_denied", reason: "hook_denied", message: "no" });
  });
});

describe("ToolError", () => {
  it("validates its own fields", () => {
    expect(() => new ToolError("Bad Code", "m")).toThrow(new TypeError('ToolError: "code" must be a snake_case string, received string'));
    expect(() => new ToolError("tool_failed", 1 as never)).toThrow(new TypeError('ToolError: "message" must be a string, received number'));
    expect(() => new ToolError("tool_failed", "m", { reason: "" })).toThrow(new TypeError('ToolError: "reason" must be a non-empty string, received string'));
  });
});

describe("toolResult and boundText", () => {
  it("a branded toolResult is recognised even with only an output", async () => {
    const tool = defineTool({ name: "w", description: "d", input: z.object({}), execute: () => toolResult("the record") });
    expect((await invokeTool(tool, {}, { ctx: ctx() })).content).toStrictEqual([{ type: "text", text: "the record" }]);
    expect(() => toolResult(1, { modelOutput: 2 as never })).toThrow(new TypeError('toolResult: "modelOutput" must be a string, received number'));
  });

  it("boundText keeps head and tail within the budget and says what was cut", () => {
    expect(boundText("short", 300)).toStrictEqual({ text: "short", truncated: false, totalBytes: 5 });
    const cut = boundText("a".repeat(1000), 300);
    // The marker is sized for the longest number it could print, so the text may end a byte short.
    expect(cut).toStrictEqual({ text: `${"a".repeat(133)}\n\n[… 777 of 1000 bytes of output cut; the full output was not saved …]\n\n${"a".repeat(90)}`, truncated: true, totalBytes: 1000 });
    expect(Buffer.byteLength(cut.text)).toBe(299);
    // Four-byte characters are never split.
    const emoji = boundText("😀".repeat(100), 300);
    expect(emoji.text).toBe(`${"😀".repeat(33)}\n\n[… 176 of 400 bytes of output cut; the full output was not saved …]\n\n${"😀".repeat(23)}`);
  });
});
