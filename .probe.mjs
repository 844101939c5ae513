import { createCodemode, defineTool, z } from "./dist/src/index.js";
const list = defineTool({ name: "list_items", description: "d", input: z.object({ q: z.string().optional() }), output: z.object({ items: z.array(z.object({ id: z.string(), title: z.string() })), total: z.number() }), execute: async () => ({ items: [{ id: "a", title: "A" }], total: 1 }) });
const cm = await createCodemode({ tools: [list] });
const progs = process.argv.slice(2);
for (const p of progs) { const r = await cm.run(p, { timeoutMs: 500 }); console.log("----", JSON.stringify(p)); console.log(r.content[0].text); console.log(JSON.stringify(r.structuredContent.error), JSON.stringify(r.details.warnings)); }
await cm.close();
