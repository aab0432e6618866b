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
    hookTimeout: 120_000,
    globalSetup: ["./packages/db/test/global-setup.ts"],
  },
});
