// Parsing JSON that a program produced. `JSON.parse` itself never pollutes a prototype, but a
// `"__proto__"` key survives as an own property and turns into a prototype write the moment a
// tool merges the input into another object. Such keys are dropped on the way in.
export function parseGuestJson(json: string): unknown {
  return json.includes('"__proto__"') ? JSON.parse(json, dropProtoKeys) : JSON.parse(json);
}

function dropProtoKeys(key: string, value: unknown): unknown {
  return key === "__proto__" ? undefined : value;
}

/** Deepest nesting a program's return value may have: the host and whoever it hands the value to must be able to JSON.stringify it (V8 overflows its stack near 8,000 levels). */
export const MAX_VALUE_DEPTH = 1_000;

/**
 * Deepest nesting of a tool call's argument: past it, checks of the input (and what a tool does
 * with it) overflow the host's stack, after the tool already ran (5,000 levels did, 3,000 not).
 */
export const MAX_ARGUMENT_DEPTH = 2_000;

/** Nesting depth of a JSON text, counted without parsing; stops counting past `limit`. */
export function jsonDepth(json: string, limit = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \\ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if (c === 93 /* ] */ || c === 125 /* } */) {
      depth--;
    }
  }
  return deepest;
}
