import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Rebuilds dist/ first when a source is newer than its compiled file: workers run from dist/.
    globalSetup: ["test/setup/fresh-build.ts"],
    // Sandbox runs live in worker threads; forks keep each test file's workers in its own process.
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
