// What crosses the shared-memory bridge from a worker: a batch of messages reads back exactly
// as it was written, whichever of the two text forms it took.
import { describe, expect, it } from "vitest";
import { formatBatch, parseBatch } from "../../src/engine/bridge-format.js";
import type { WorkerToHost } from "../../src/engine/protocol.js";

const call = (callId: number, args: unknown, path = "echo", runId = "r1"): WorkerToHost => ({ type: "call", runId, callId, path, args: JSON.stringify(args) });

describe("a batch of the run's messages", () => {
  it("of tool calls alone reads back exactly, arguments with quotes, escapes, NULs and lone surrogates included", () => {
    const batch = [call(1, { i: 1 }), call(2, { s: 'a "quoted" \\ \u0001 \0 \ud800 é' }, "ns.tool"), call(3, [])];
    const text = formatBatch(batch);
    expect(text.startsWith("{") || text.startsWith("[")).toBe(false);
    expect(parseBatch(text)).toStrictEqual(batch);
  });

  it("goes as JSON when it holds anything but calls, or a field that holds the separator", () => {
    const mixed: WorkerToHost[] = [call(1, { i: 1 }), { type: "flush", runId: "r1", text: ["hi"], console: [] }];
    const marked = [call(1, {}, "odd\u0001name")];
    for (const batch of [mixed, marked]) {
      expect(formatBatch(batch)).toBe(JSON.stringify(batch));
      expect(parseBatch(formatBatch(batch))).toStrictEqual(batch);
    }
  });
});
