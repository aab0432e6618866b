import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "packages/*/test/**/*.test.ts",
      "apps/api/test/**/*.test.ts",
      "inngest/**/*.test.ts",
    ],
    exclude: ["**/node_modules/**", "**/generated/**"],
    pool: "forks",
    testTimeout: 60_000,
    // a file's server start takes 0.1-0.2 s; once in CI one took over 120 s (cause unknown: the harness now
    // prints the pending phase and PostgreSQL's waits every 30 s). A stall that long still fails the file at 240 s.
    hookTimeout: 240_000,
    globalSetup: ["./packages/db/test/global-setup.ts"],
  },
});
