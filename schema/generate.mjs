// Writes schema/codemode.schema.json from the zod schema codemode.json is validated with
// (src/cli/config-schema.ts). Run after a build: npm run build && node schema/generate.mjs
// test/cli/config.test.ts fails while the file differs from what this writes.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { configJsonSchema } from "../dist/src/cli/config-schema.js";

const file = fileURLToPath(new URL("codemode.schema.json", import.meta.url));
writeFileSync(file, JSON.stringify(configJsonSchema(), null, 2) + "\n");
console.log(`wrote ${file}`);
