import { newQuickJSWASMModuleFromVariant } from "quickjs-emscripten";
import v from "@jitl/quickjs-wasmfile-release-sync";
import { readFileSync } from "node:fs";
const mod = await newQuickJSWASMModuleFromVariant(v);
const files = process.argv.slice(2); const srcs = files.map((f) => readFileSync(f, "utf8"));
const times = files.map(() => []);
for (let round = 0; round < 2000; round++) {
  const k = round % files.length;
  const rt = mod.newRuntime(); const ctx = rt.newContext();
  const host = ctx.newFunction("h", () => undefined); ctx.setProp(ctx.global, "__codemode_host", host); host.dispose();
  const c = ctx.newString(JSON.stringify({ tools: ["a", "b.c", "d"], globals: {} })); ctx.setProp(ctx.global, "__codemode_config", c); c.dispose();
  const t = performance.now();
  const r = ctx.evalCode(srcs[k], "p.js", { type: "global", strict: true });
  times[k].push(performance.now() - t);
  if (r.error) { console.log(ctx.dump(r.error)); r.error.dispose(); } else r.value.dispose();
  ctx.dispose(); rt.dispose();
}
files.forEach((f, k) => { const s = times[k].sort((a, b) => a - b); console.log(f, (s[s.length >> 1] * 1000).toFixed(0), "µs median,", (s[s.length >> 3] * 1000).toFixed(0), "p12"); });
