// The runtime's tool set: where each tool is in a program's namespace, which tools a program, a
// task's agent and a model see, and the refusal of two tools at one path.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ToolSet, toolMapFacts, toolPath } from "../../src/codemode/tool-set.js";
import { defineTool, type Tool } from "../../src/tools/index.js";

const tool = (name: string, namespace?: string): Tool => defineTool({ name, ...(namespace ? { namespace } : {}), description: name, input: z.object({}), execute: () => "ok" });

describe("ToolSet", () => {
  const own = tool("ptc_task_list");
  const entry = tool("ptc_run_code");
  const read = tool("read_file");
  const upstreamRead = tool("read_file", "fs");

  it("places tools at their full paths; entry points are for models only; the runtime's own come first", () => {
    const set = new ToolSet();
    set.add([read, upstreamRead], "host");
    set.add([own], "runtime");
    set.add([entry], "entry");
    expect([...set.paths.keys()]).toStrictEqual(["ptc_task_list", "read_file", "fs.read_file"]);
    expect(set.all()).toStrictEqual([own, entry, read, upstreamRead]);
    expect(set.programTools()).toStrictEqual([own, read, upstreamRead]);
    expect([toolPath(upstreamRead), set.isHost(read), set.isHost(own)]).toStrictEqual(["fs.read_file", true, false]);
    expect([set.find("fs.read_file"), set.find("ptc_run_code")]).toStrictEqual([upstreamRead, entry]);
  });

  it("filters by full path: an agent allowed read_file does not get fs.read_file, and never an entry point", () => {
    const set = new ToolSet();
    set.add([own], "runtime");
    set.add([entry], "entry");
    set.add([read, upstreamRead], "host");
    const allow = (path: string) => path === "read_file" || path === "ptc_run_code";
    expect([...set.allowed(allow).keys()]).toStrictEqual(["read_file"]);
    expect(set.visible(allow)).toStrictEqual([read]);
    expect(set.visible(undefined)).toStrictEqual([own, entry, read, upstreamRead]);
    expect(set.allowed(undefined)).toBe(set.paths);
  });

  it("refuses two tools at one path, naming both, and is unchanged after", () => {
    const set = new ToolSet();
    set.add([read], "host");
    expect(() => set.add([own, tool("read_file")], "runtime")).toThrow('options.tools: two tools are reached as tools.read_file ("read_file" and "read_file"); rename one');
    expect(set.all()).toStrictEqual([read]);
    expect([...set.paths.keys()]).toStrictEqual(["read_file"]);
    // An entry point is not in the namespace: it clashes with nothing there.
    set.add([tool("read_file")], "entry");
    expect(set.all()).toHaveLength(2);
  });

  it("the facts a run reads follow the set: a tool added after a run is bound, and its approval policy seen; a filter gets its own", () => {
    const set = new ToolSet();
    set.add([read], "host");
    expect(toolMapFacts(set.paths)).toStrictEqual({ paths: ["read_file"], approvalPolicy: false });
    // Asked again for the same set: the same answer (worked out once).
    expect(toolMapFacts(set.paths)).toBe(toolMapFacts(set.paths));
    const deploy = defineTool({ name: "deploy", description: "deploys", approval: "required", input: z.object({}), execute: () => "ok" });
    set.add([deploy, upstreamRead], "host");
    expect(toolMapFacts(set.paths)).toStrictEqual({ paths: ["read_file", "deploy", "fs.read_file"], approvalPolicy: true });
    expect(toolMapFacts(set.allowed((path) => path !== "deploy"))).toStrictEqual({ paths: ["read_file", "fs.read_file"], approvalPolicy: false });
    expect(toolMapFacts(set.paths)).toStrictEqual({ paths: ["read_file", "deploy", "fs.read_file"], approvalPolicy: true });
  });
});
