// Starts the stack (support/stack.ts, run with tsx as its own process) and returns the teardown.
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");

export default async function globalSetup(): Promise<() => Promise<void>> {
  if (!fs.existsSync("/usr/bin/chromium")) {
    throw new Error("Debian's Chromium is missing: apt-get update && apt-get install -y chromium");
  }
  const child: ChildProcess = spawn(
    path.join(root, "node_modules/.bin/tsx"),
    [path.join(root, "e2e/support/stack.ts")],
    {
      cwd: root,
      env: process.env,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const ready = await new Promise<{ api: string; web: string }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /READY (\{.*\})/.exec(out);
      if (m) resolve(JSON.parse(m[1]!));
    });
    child.once("exit", (code) => reject(new Error(`the e2e stack exited (${code}) before it was ready`)));
  });
  process.env.E2E_API_URL = ready.api;
  return async () => {
    if (child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  };
}
