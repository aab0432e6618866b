// Operator routes for the admin CLI while the service holds the embedded database (PGlite is one
// process's): loopback only, authenticated by a random token written to DATA_DIR/admin.json (0600).
import { randomBytes, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { CoreError } from "@cua/base/errors";
import { createAccount, listAccounts } from "@cua/core/accounts/create-account";
import { topUp } from "@cua/core/wallet/wallet";
import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../app-deps.ts";

export function adminFile(dataDir: string) {
  return path.join(path.resolve(dataDir), "admin.json");
}

export function registerAdminRoutes(app: FastifyInstance, deps: AppDeps) {
  if (deps.dbKind !== "pglite") return;
  const token = randomBytes(32).toString("hex");
  const tokenBuf = Buffer.from(token);
  app.addHook("onListen", async () => {
    const addr = app.server.address();
    const port = typeof addr === "object" && addr ? addr.port : deps.env.PORT;
    fs.writeFileSync(adminFile(deps.env.DATA_DIR), JSON.stringify({ pid: process.pid, port, token }), { mode: 0o600 });
  });
  app.addHook("onClose", async () => {
    fs.rmSync(adminFile(deps.env.DATA_DIR), { force: true });
  });
  app.post("/internal/admin/:command", async (req) => {
    const given = Buffer.from(String(req.headers["x-admin-token"] ?? ""));
    const loopback = ["127.0.0.1", "::1", "::ffff:127.0.0.1"].includes(req.ip);
    if (!loopback || given.length !== tokenBuf.length || !timingSafeEqual(given, tokenBuf))
      throw new CoreError("NOT_FOUND");
    const body = (req.body ?? {}) as Record<string, any>;
    const { command } = req.params as { command: string };
    if (command === "account-create") return createAccount(deps, body as any);
    if (command === "account-list") return listAccounts(deps);
    if (command === "wallet-topup")
      return topUp(deps, { accountId: body.accountId, credits: body.credits, note: "admin CLI top-up" });
    throw new CoreError("NOT_FOUND");
  });
}
