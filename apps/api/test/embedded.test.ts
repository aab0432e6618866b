// Issue 2: with no DATABASE_URL the service keeps its data in PGlite under DATA_DIR and survives
// restarts; it prints first-run credentials on an empty embedded database; the admin CLI works both
// against the running service and on its own. Configuration errors are clear (issue 2 "Configuration").
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { call, REPO_ROOT, spawnService, stopChild } from "./helpers.ts";

const run = promisify(execFile);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cua-embedded-"));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

function admin(args: string[], env: Record<string, string> = {}) {
  return run(
    path.join(REPO_ROOT, "node_modules/.bin/tsx"),
    [path.join(REPO_ROOT, "apps/api/src/admin-cli.ts"), ...args],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "warn", ...env },
    },
  );
}

const clean = { DATABASE_URL: "", REDIS_URL: "", SECRETS_KEY: "" };
const envFor = () => {
  const e: Record<string, string> = { DATA_DIR: dataDir };
  // drop inherited settings so the embedded defaults apply
  for (const k of Object.keys(clean)) delete process.env[k];
  return e;
};

describe("embedded defaults", () => {
  let liveKey = "";
  let accountId = "";

  it("first start creates the default account, prints its credentials once, and serves them", async () => {
    const svc = spawnService(envFor());
    try {
      const url = await svc.url();
      const out = svc.output();
      expect(out).toContain("First run");
      liveKey = /live API key\s+(sk-svc-live-[0-9a-f]{48})/.exec(out)![1]!;
      accountId = /account_id\s+([0-9a-f-]{36})/.exec(out)![1]!;
      expect(out).toMatch(/console password\s+\S{8,}/);
      const r = await call(url, "GET", "/v1/usage", { key: liveKey });
      expect(r.status).toBe(200);
      expect(r.body.wallet.balance_credits).toBe(1000);
      expect(fs.existsSync(path.join(dataDir, "pglite"))).toBe(true);
      expect(fs.statSync(path.join(dataDir, "secrets.key")).mode & 0o077).toBe(0);

      // the admin CLI talks to the running service (the embedded database belongs to it)
      const created = JSON.parse(
        (await admin(["account", "create", "--name", "Acme", "--tier", "starter", "--credits", "40", "--json"])).stdout,
      );
      expect(Object.keys(created).sort()).toEqual([
        "account_id",
        "console_email",
        "console_password",
        "live_key",
        "test_key",
      ]);
      const k = await call(url, "GET", "/v1/keys", { key: created.live_key });
      expect(k.status).toBe(200);
      // both keys hold every scope, keys included
      expect(k.body.keys[0].scopes).toEqual(
        expect.arrayContaining(["keys", "llm_keys", "machines:write", "terminal:exec"]),
      );
      expect(k.body.keys[0].tier).toBe("starter");
      await admin(["wallet", "topup", "--account", created.account_id, "--credits", "60"]);
      expect((await call(url, "GET", "/v1/usage", { key: created.live_key })).body.wallet.balance_credits).toBe(100);
      const list = JSON.parse((await admin(["account", "list", "--json"])).stdout);
      expect(list.map((a: { name: string }) => a.name)).toEqual(["Default", "Acme"]);
    } finally {
      await stopChild(svc.child);
    }
  });

  it("a restart keeps the data and prints no new credentials", async () => {
    const svc = spawnService(envFor());
    try {
      const url = await svc.url();
      expect(svc.output()).not.toContain("First run");
      const u = await call(url, "GET", "/v1/usage", { key: liveKey });
      expect(u.status).toBe(200);
      // the first run's request was written to the embedded database (at the latest on shutdown)
      expect(u.body.by_endpoint).toEqual([{ endpoint: "GET /v1/usage", requests: 1, credits_charged: 0 }]);
    } finally {
      await stopChild(svc.child);
    }
  });

  it("with no service running, the admin CLI opens the embedded database itself", async () => {
    expect(fs.existsSync(path.join(dataDir, "admin.json"))).toBe(false);
    await admin(["wallet", "topup", "--account", accountId, "--credits", "5"]);
    const list = JSON.parse((await admin(["account", "list", "--json"])).stdout);
    expect(list.find((a: { account_id: string }) => a.account_id === accountId).balance_credits).toBe(1005);
  });

  it("the admin CLI rejects bad input with a usage message and exit code 2", async () => {
    await expect(admin(["account", "create", "--name", "X", "--tier", "gold", "--credits", "1"])).rejects.toMatchObject(
      {
        code: 2,
        stderr: expect.stringContaining("--tier must be one of"),
      },
    );
    await expect(admin(["wallet", "topup", "--account", accountId, "--credits", "-3"])).rejects.toMatchObject({
      code: 2,
    });
    await expect(admin(["bogus"])).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("usage:") });
  });

  it("invalid configuration stops the service at start with a clear message", async () => {
    const svc = spawnService({ ...envFor(), PORT: "99999", LOG_LEVEL: "loud", DATABASE_URL: "mysql://x" });
    const code = await new Promise<number | null>((r) => svc.child.on("exit", (c) => r(c)));
    expect(code).toBe(2);
    expect(svc.output()).toMatch(/Invalid configuration/);
    expect(svc.output()).toMatch(/PORT/);
    expect(svc.output()).toMatch(/LOG_LEVEL/);
    expect(svc.output()).toMatch(/DATABASE_URL: must be a postgresql:\/\/ URL/);
  });

  it("SIGTERM right after start, while the OCR models load on their worker threads, exits 0 (no abort)", async () => {
    const svc = spawnService(envFor());
    await svc.url();
    // the managed engine's warm-up (OCR workers loading onnxruntime sessions) is still going on here; a
    // worker terminated inside onnxruntime used to abort the process ("terminate called ... Napi::Error")
    await stopChild(svc.child, "SIGTERM");
    expect(svc.child.exitCode, svc.output().slice(-2000)).toBe(0);
    expect(svc.output()).not.toContain("Napi::Error");
  });

  it("desktop programs under /tmp are refused at start: isolated machines have a /tmp of their own (docs/security.md)", async () => {
    const svc = spawnService({ ...envFor(), MACHINE_BIN_PATH: "/usr/bin:/tmp/progs" });
    const code = await new Promise<number | null>((r) => svc.child.on("exit", (c) => r(c)));
    expect(code).toBe(2);
    expect(svc.output()).toContain("MACHINE_BIN_PATH: /tmp/progs: isolated machines have a private /tmp");
  });
});
