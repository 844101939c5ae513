/** Small JSON helpers shared by the projection, descriptors and channels. */

/** Assigns without the `__proto__` setter: a record key named `__proto__` stays a plain key. */
export function setKey(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A value as it comes out of a JSON round trip (Dates become strings, undefined and functions
 * disappear, -0 becomes 0), so what programs receive never changes when serialised.
 * Returns undefined for values JSON drops entirely.
 */
export function jsonClone(value: unknown): unknown {
  if (value === undefined || typeof value === "function" || typeof value === "symbol") return undefined;
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? (Object.is(value, -0) ? 0 : value) : null;
  const text = JSON.stringify(value);
  return text === undefined ? undefined : JSON.parse(text);
}

/** Stringify for a model: strings as they are, everything else as JSON. */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text;
  } catch {
    return String(value);
  }
}
