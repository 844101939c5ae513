// Cold start to first output: a new process imports an engine, sets it up and runs text("hi").
// The parent (bench/run.ts) times spawn → "hi" on this process's stdout. Run as
//   node dist/bench/cold-start.js codemode|codemode-unbundled|raw|vm|node [--phases]
// With --phases our modes also print, on stderr after the output, when each phase ended (ms since
// the process started): node's own start, the import, createCodemode, the first run.
const mode = process.argv[2];
const phases = process.argv.includes("--phases");

function emit(text: string): void {
  process.stdout.write(`${text}\n`);
}

switch (mode) {
  case "codemode":
  case "codemode-unbundled": {
    // The package as it ships (the bundle its exports name), or the compiled modules one by one.
    const entry = mode === "codemode" ? new URL("../bundle/index.js", import.meta.url).href : "../src/index.js";
    const started = performance.now();
    const { createCodemode } = (await import(entry)) as typeof import("../src/index.js");
    const imported = performance.now();
    const cm = await createCodemode();
    const created = performance.now();
    const result = await cm.run(`text("hi")`);
    const ran = performance.now();
    emit(result.content[0]?.text ?? "");
    if (phases) process.stderr.write(`${JSON.stringify({ node: started, import: imported, createCodemode: created, firstRun: ran })}\n`);
    await cm.close();
    break;
  }
  case "raw": {
    const { RawQuickJS } = await import("./raw.js");
    const raw = await RawQuickJS.create();
    emit((await raw.run(`text("hi")`)).join("\n"));
    break;
  }
  case "vm": {
    const vm = await import("node:vm");
    const context = vm.createContext({ text: (value: string) => emit(value) });
    vm.runInContext(`text("hi")`, context);
    break;
  }
  case "node":
    emit("hi");
    break;
  default:
    throw new Error(`unknown mode ${mode}`);
}
