#!/usr/bin/env node
// The `codemode` CLI (also installed as `codemode-runtime`, so `npx -y codemode-runtime …` finds
// it by the package's name): runs the compiled entry point. A published package ships dist/
// (built by `prepack`); a checkout builds it with `npm run build`. It is the bundled build
// (dist/bundle, see rolldown.config.js): a new process loads a few files instead of ~250.
let main;
try {
  ({ main } = await import("../dist/bundle/cli/main.js"));
} catch (error) {
  if (error?.code !== "ERR_MODULE_NOT_FOUND" || !String(error.message).includes("dist/bundle/cli/main.js")) throw error;
  process.stderr.write('codemode: the CLI is not built (dist/bundle/cli/main.js is missing); run "npm run build" in this checkout\n');
  process.exit(2);
}

const code = await main(process.argv.slice(2));
// Sandbox workers and upstream servers are closed by then; exit without waiting on stray handles.
process.exit(code);
