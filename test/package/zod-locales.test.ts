// The package's `z` is zod's own namespace, with every locale but English bundled as a function
// that loads zod's CommonJS build of it when called (rolldown.config.js): each must still say
// exactly what zod's does, for every locale zod ships.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { z as zod } from "zod";
import { describe, expect, it } from "vitest";
import { ROOT } from "../mcp/helpers.js";

const ENTRY = pathToFileURL(join(ROOT, "dist", "bundle", "index.js")).href;

/** Issues of several kinds, each phrased by the locale. */
function messages(z: typeof zod, locale: string): string[] {
  const schema = z.object({ name: z.string().min(3), count: z.number().int().max(10), kind: z.enum(["a", "b"]), tags: z.array(z.string()).nonempty(), url: z.url() }).strict();
  const result = schema.safeParse(
    { name: "x", count: 11.5, kind: "c", tags: [], url: "nope", extra: 1 },
    { error: (z.locales as Record<string, () => { localeError: zod.core.$ZodErrorMap }>)[locale]!().localeError },
  );
  return result.error!.issues.map((issue) => issue.message);
}

describe("the shipped bundle's z.locales", () => {
  it("has every locale zod has, each phrasing issues exactly as zod's own", async () => {
    const { z } = (await import(ENTRY)) as { z: typeof zod };
    expect(Object.keys(z.locales).sort()).toStrictEqual(Object.keys(zod.locales).sort());
    for (const locale of Object.keys(zod.locales)) expect({ locale, messages: messages(z, locale) }).toStrictEqual({ locale, messages: messages(zod, locale) });
    // And the messages are the locale's, not English.
    expect(messages(z, "de")).not.toStrictEqual(messages(z, "en"));
  });
});
