// The bundled build the package ships (`npm run build` writes it after tsc): the compiled modules
// of dist/src and their pure-JavaScript dependencies in a few files under dist/bundle, one entry
// per way in (the library, the CLI, each worker thread). A new process imported the package in
// ~200 ms from ~250 files and imports the bundle in ~90 (most of it was module resolution and
// loading, not running the code). Left outside, as the package's dependencies: native code, the
// QuickJS variant (its WASM file is found beside it and snapshot.ts checks its version), and what
// the code loads only on first use (the TypeScript parser, Redis, globbing, the MCP SDK).
const EXTERNAL = [
  "better-sqlite3",
  "quickjs-emscripten",
  "quickjs-emscripten-core",
  "@jitl/quickjs-wasmfile-release-sync",
  "typescript",
  "ts-blank-space",
  "acorn",
  "tinyglobby",
  "bullmq",
  "ioredis",
  "synckit",
  "@modelcontextprotocol/sdk",
];

// zod's `z.locales` holds every language zod speaks: ~270 KB of the library entry that every
// import compiled, for a namespace a host rarely touches. Each locale but English (zod's default,
// which `z` installs at load) is bundled as a function of the same shape that loads zod's own
// CommonJS build of that locale when it is called: `z.locales` keeps every key, each returns
// what zod's does, and the import compiles none of them.
const ZOD_LOCALE = /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]([a-zA-Z-]+)\.js$/;

const zodLocalesOnCall = {
  name: "zod-locales-on-call",
  load(id) {
    const locale = ZOD_LOCALE.exec(id)?.[1];
    if (locale === undefined || locale === "en" || locale === "index") return null;
    return [
      'import { createRequire } from "node:module";',
      "export default function () {",
      `  const locale = createRequire(import.meta.url)("zod/v4/locales/${locale}.cjs");`,
      // zod's CommonJS build exports the function itself (its `sealCjsExports`); older builds had `default`.
      '  return (typeof locale === "function" ? locale : locale.default)();',
      "}",
    ].join("\n");
  },
};

export default {
  plugins: [zodLocalesOnCall],
  input: {
    index: "dist/src/index.js",
    "cli/main": "dist/src/cli/main.js",
    // Worker threads, found by src/package-files.ts under the same names.
    "engine/worker": "dist/src/engine/worker.js",
    "workspace/scan-worker": "dist/src/workspace/scan-worker.js",
    "tasks/redis/store-thread": "dist/src/tasks/redis/store-thread.js",
  },
  platform: "node",
  // ES module builds where a package has one (jsonc-parser's main is a UMD wrapper whose require calls a bundle cannot follow).
  resolve: { mainFields: ["module", "main"] },
  external: (id) => id.startsWith("node:") || EXTERNAL.some((name) => id === name || id.startsWith(`${name}/`)),
  output: { dir: "dist/bundle", format: "esm", entryFileNames: "[name].js", chunkFileNames: "[name]-[hash].js", cleanDir: true },
};
