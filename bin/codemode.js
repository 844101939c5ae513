#!/usr/bin/env node
// The `codemode` CLI: runs the built entry point (npm run build compiles src/ to dist/).
import { main } from "../dist/src/cli/main.js";

const code = await main(process.argv.slice(2));
// Sandbox workers and upstream servers are closed by then; exit without waiting on stray handles.
process.exit(code);
