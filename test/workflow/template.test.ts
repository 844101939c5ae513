// The template grammar: what parses, where an error is reported, and how values render.
import { describe, expect, it } from "vitest";
import { parseTemplate, renderTemplate, TemplateError, type Reference } from "../../src/workflow/index.js";
import { valueAt } from "../../src/workflow/template.js";

function failure(text: string): { message: string; template: string; character: number } {
  try {
    parseTemplate(text);
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    return { message: error.message, template: error.template, character: error.character };
  }
  throw new Error(`parsed: ${text}`);
}

describe("parseTemplate", () => {
  it("reads references, paths with indices and quoted keys, and keeps the text around them", () => {
    expect(parseTemplate("Tools allowed: {{ .nodes.inspect.output.session.lineage.permission_policy.tools }}!")).toStrictEqual({
      parts: [
        { text: "Tools allowed: " },
        { ref: { kind: "node", node: "inspect", path: ["session", "lineage", "permission_policy", "tools"], source: "nodes.inspect.output.session.lineage.permission_policy.tools" } },
        { text: "!" },
      ],
    });
    expect(parseTemplate("{{.inputs.session_id}}")).toStrictEqual({
      parts: [{ ref: { kind: "input", name: "session_id", source: "inputs.session_id" } }],
      whole: { kind: "input", name: "session_id", source: "inputs.session_id" },
    });
    const ref = parseTemplate(`{{ .nodes.list.output.tasks[0]["odd key"].0 }}`).whole as Extract<Reference, { kind: "node" }>;
    expect(ref.path).toStrictEqual(["tasks", 0, "odd key", "0"]);
    expect(parseTemplate("{{ .nodes.a.output }}").whole).toStrictEqual({ kind: "node", node: "a", path: [], source: "nodes.a.output" });
    // A string literal writes literal braces; a lone "}}" is text.
    expect(parseTemplate('{{ "{{" }} x }} {{ "\\"q\\"" }}')).toStrictEqual({ parts: [{ text: '{{ x }} "q"' }] });
  });

  it("reports the offending template, the character and what was expected there", () => {
    expect(failure("ab {{ .nodes.x.outputs.y }}")).toStrictEqual({
      message: 'expected ".output" after ".nodes.x", as in {{ .nodes.x.output.<path> }}',
      template: "{{ .nodes.x.outputs.y }}",
      character: 15,
    });
    expect(failure("{{ .input.x }}")).toStrictEqual({
      message: 'expected "inputs" or "nodes" after ".", not "input"; a reference is {{ .inputs.<name> }} or {{ .nodes.<id>.output.<path> }}',
      template: "{{ .input.x }}",
      character: 5,
    });
    expect(failure("{{ nodes.x.output }}")).toStrictEqual({
      message: 'expected "." to start a reference; a reference is {{ .inputs.<name> }} or {{ .nodes.<id>.output.<path> }}',
      template: "{{ nodes.x.output }}",
      character: 4,
    });
    expect(failure("{{ .inputs.a.b }}").message).toBe("an input reference ends after its name: {{ .inputs.a }} (inputs have no fields)");
    expect(failure("{{ .nodes.a.output.b..c }}").message).toBe('expected a field name after "."');
    expect(failure("{{ .nodes.a.output.b[x] }}").message).toBe('expected an array index (digits) or a quoted key in "[…]"');
    expect(failure("{{ .nodes.a.output.b c }}").message).toBe('unexpected " " in the path; fields are written .name, array elements [0]');
    expect(failure("{{ }}").message).toBe("empty template; a reference is {{ .inputs.<name> }} or {{ .nodes.<id>.output.<path> }}");
    expect(failure("x {{ .inputs.a")).toStrictEqual({ message: '"{{" is not closed with "}}"', template: "{{ .inputs.a", character: 3 });
    expect(failure(`{{ .nodes.${"a".repeat(200)} }}`).template).toHaveLength(80);
  });
});

describe("renderTemplate", () => {
  const values: Record<string, unknown> = { n: 3, list: ["a", "b"], text: "hi" };
  const resolve = (ref: Reference) => (ref.kind === "input" ? values[ref.name] : undefined);

  it("a whole-string reference keeps the value's type; in text, non-strings render as JSON", () => {
    expect(renderTemplate(parseTemplate("{{ .inputs.n }}"), resolve)).toBe(3);
    expect(renderTemplate(parseTemplate("{{ .inputs.list }}"), resolve)).toStrictEqual(["a", "b"]);
    expect(renderTemplate(parseTemplate("{{ .inputs.n }}"), resolve, true)).toBe("3");
    expect(renderTemplate(parseTemplate("{{ .inputs.text }}: {{ .inputs.list }} x{{ .inputs.n }}"), resolve)).toBe('hi: ["a","b"] x3');
  });

  it("a field missing at run time is an empty value", () => {
    expect(renderTemplate(parseTemplate("{{ .inputs.gone }}"), resolve)).toBe("");
    expect(renderTemplate(parseTemplate("[{{ .nodes.a.output.x }}]"), resolve)).toBe("[]");
  });

  it("reads own fields only: nothing is found on a prototype", () => {
    const output = { session: { tags: ["x"] } };
    expect(valueAt(output, ["session", "tags", 0])).toBe("x");
    expect(valueAt(output, ["session", "tags", "0"])).toBe("x");
    expect(valueAt(output, ["session", "constructor"])).toBeUndefined();
    expect(valueAt(output, ["session", "__proto__"])).toBeUndefined();
    expect(valueAt(output, ["session", "tags", "length"])).toBeUndefined();
    expect(valueAt(output, ["session", "tags", 5])).toBeUndefined();
    expect(valueAt("text", ["length"])).toBeUndefined();
  });
});
