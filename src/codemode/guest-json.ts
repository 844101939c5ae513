// Parsing JSON that a program produced. `JSON.parse` itself never pollutes a prototype, but a
// `"__proto__"` key survives as an own property and turns into a prototype write the moment a
// tool merges the input into another object. Such keys are dropped on the way in.
export function parseGuestJson(json: string): unknown {
  return json.includes('"__proto__"') ? JSON.parse(json, dropProtoKeys) : JSON.parse(json);
}

function dropProtoKeys(key: string, value: unknown): unknown {
  return key === "__proto__" ? undefined : value;
}
