import { newQuickJSWASMModuleFromVariant } from "quickjs-emscripten";
import v from "@jitl/quickjs-wasmfile-release-sync";
import { readFileSync } from "node:fs";
const mod = await newQuickJSWASMModuleFromVariant(v);
function cost(src, n = 300) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const rt = mod.newRuntime(); const ctx = rt.newContext();
    const host = ctx.newFunction("h", () => undefined); ctx.setProp(ctx.global, "__codemode_host", host); host.dispose();
    const c = ctx.newString(JSON.stringify({ tools: ["a", "b.c", "d"], globals: {} })); ctx.setProp(ctx.global, "__codemode_config", c); c.dispose();
    const t = performance.now();
    const r = ctx.evalCode(src, "p.js", { type: "global", strict: true });
    times.push(performance.now() - t);
    if (r.error) { console.log(ctx.dump(r.error)); r.error.dispose(); } else r.value.dispose();
    ctx.dispose(); rt.dispose();
  }
  times.sort((a, b) => a - b); return (times[n >> 1] * 1000).toFixed(0);
}
for (const f of process.argv.slice(2)) console.log(f, cost(readFileSync(f, "utf8")), "µs");
