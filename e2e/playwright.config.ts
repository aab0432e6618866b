// End-to-end tests of the console in Debian's Chromium (never `npx playwright install`), against the real
// stack started by global-setup.ts: a fresh PostgreSQL database, the API and the built console.
import { defineConfig } from "@playwright/test";

// Ports are picked once in the main process and inherited by the workers through the environment.
process.env.E2E_WEB_PORT ??= String(20_000 + (process.pid % 10_000));
process.env.E2E_API_PORT ??= String(30_000 + (process.pid % 10_000));
const baseURL = `http://127.0.0.1:${process.env.E2E_WEB_PORT}`;
process.env.E2E_BASE_URL = baseURL;

export default defineConfig({
  testDir: "./tests",
  outputDir: "../test-results/e2e",
  globalSetup: "./global-setup.ts",
  timeout: 90_000,
  expect: { timeout: 15_000 },
  fullyParallel: false,
  workers: 2,
  retries: 0,
  reporter: [["list"]],
  use: {
    baseURL,
    browserName: "chromium",
    viewport: { width: 1280, height: 800 },
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
  },
});
