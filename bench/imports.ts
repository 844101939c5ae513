// What importing the package costs a new process, and where it goes: the whole package, then each
// heavy dependency on its own (every measure a fresh `node`, median of several), and what a process
// that imports the shipped bundle and runs a program loads, by package.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

export interface ImportCost {
  name: string;
  ms: number;
}

const distIndex = fileURLToPath(new URL("../src/index.js", import.meta.url));
const bundleIndex = fileURLToPath(new URL("../bundle/index.js", import.meta.url));

function importMs(specifier: string, times: number): number {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const script = `const t = performance.now(); await import(${JSON.stringify(specifier)}); process.stdout.write(String(performance.now() - t));`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", cwd: fileURLToPath(new URL("../..", import.meta.url)) });
    if (child.status !== 0) throw new Error(`importing ${specifier} failed: ${child.stderr}`);
    samples.push(Number(child.stdout));
  }
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1];
}

/**
 * What a new process loads when it imports the package as shipped and runs `text("hi")`, by
 * package: the bundle's chunks it loaded (and, per package, the modules bundled into them, read
 * from the comment rolldown heads each with), plus anything loaded from node_modules directly
 * (ES modules through a module-load hook, CommonJS through the require cache). The host thread
 * only: the hook does not see worker threads.
 */
export function loadedModules(): Record<string, number> {
  const hook = `
    let port;
    export async function initialize(data) { port = data.port; }
    export async function load(url, context, next) { port.postMessage(url); return next(url, context); }`;
  const script = `
    import { createRequire, register } from "node:module";
    import { MessageChannel } from "node:worker_threads";
    const { port1, port2 } = new MessageChannel();
    const seen = [];
    port1.on("message", (url) => seen.push(url));
    register("data:text/javascript," + encodeURIComponent(${JSON.stringify(hook)}), { data: { port: port2 }, transferList: [port2] });
    const { createCodemode } = await import(${JSON.stringify(pathToFileURL(bundleIndex).href)});
    const cm = await createCodemode();
    await cm.run('text("hi")');
    await cm.close();
    setTimeout(() => { process.stdout.write(JSON.stringify({ esm: seen, cjs: Object.keys(createRequire(import.meta.url).cache) })); process.exit(0); }, 200);`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  if (child.status !== 0) throw new Error(`tracing the import failed: ${child.stderr}`);
  const { esm, cjs } = JSON.parse(child.stdout) as { esm: string[]; cjs: string[] };
  const byPackage: Record<string, number> = {};
  const count = (key: string) => (byPackage[key] = (byPackage[key] ?? 0) + 1);
  const packageOf = (path: string) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path)?.[1];
  for (const url of esm) {
    if (url.startsWith("node:")) {
      count("node: built-ins");
      continue;
    }
    const path = fileURLToPath(url);
    if (!path.includes("/dist/bundle/")) {
      count(packageOf(path) ?? path);
      continue;
    }
    count("bundle chunks");
    for (const match of readFileSync(path, "utf8").matchAll(/^\/\/ (\S+)$/gm)) count(`bundled: ${packageOf(match[1]!) ?? "codemode-runtime"}`);
  }
  for (const path of cjs) count(`required: ${packageOf(path) ?? path}`);
  return byPackage;
}

export function importCosts(times = 5): ImportCost[] {
  const rows: ImportCost[] = [
    { name: "the package as shipped (dist/bundle/index.js)", ms: importMs(pathToFileURL(bundleIndex).href, times) },
    { name: "the same, unbundled (dist/src/index.js)", ms: importMs(pathToFileURL(distIndex).href, times) },
  ];
  for (const dependency of ["zod", "yaml", "tinyglobby", "better-sqlite3", "quickjs-emscripten", "@modelcontextprotocol/sdk/client/index.js"]) {
    rows.push({ name: dependency, ms: importMs(dependency, times) });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  for (const row of importCosts()) console.log(`${row.name.padEnd(48)} ${row.ms.toFixed(1)} ms`);
  console.log(loadedModules());
}
