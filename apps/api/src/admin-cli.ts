// The operator's admin CLI:
//   npm run admin -- account create --name NAME --tier TIER --credits N [--email E] [--unlimited] [--json]
//   npm run admin -- account list [--json]
//   npm run admin -- wallet topup --account ID --credits N [--json]
// It uses DATABASE_URL when set. On the embedded database it talks to the running service through its
// loopback admin route (PGlite belongs to one process), or opens DATA_DIR itself when none runs.
import fs from "node:fs";
import { createAccount, listAccounts, TIERS, type Tier } from "@cua/core/accounts/create-account";
import type { CoreDeps } from "@cua/core/deps";
import { topUp } from "@cua/core/wallet/wallet";
import { openDb } from "@cua/db/client";
import { loadKek } from "./app.ts";
import { loadEnv } from "./env.ts";
import { adminFile } from "./http/admin-routes.ts";

class UsageError extends Error {}

function parseArgs(argv: string[]) {
  const pos: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith("--")) {
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith("--")) {
        flags[a.slice(2)] = next;
        i++;
      } else flags[a.slice(2)] = true;
    } else pos.push(a);
  }
  return { pos, flags };
}

function need(flags: Record<string, string | true>, name: string): string {
  const v = flags[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

function int(flags: Record<string, string | true>, name: string): number {
  const v = need(flags, name);
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a non-negative integer`);
  return Number(v);
}

const USAGE = `usage:
  npm run admin -- account create --name NAME --tier ${TIERS.join("|")} --credits N [--email E] [--unlimited] [--json]
  npm run admin -- account list [--json]
  npm run admin -- wallet topup --account ID --credits N [--json]`;

async function main() {
  const { pos, flags } = parseArgs(process.argv.slice(2));
  const cmd = `${pos[0] ?? ""} ${pos[1] ?? ""}`.trim();
  let op: { name: string; body: Record<string, unknown>; run: (deps: CoreDeps) => Promise<unknown> };
  if (cmd === "account create") {
    const tier = need(flags, "tier") as Tier;
    if (!TIERS.includes(tier)) throw new UsageError(`--tier must be one of ${TIERS.join(", ")}`);
    const body = {
      name: need(flags, "name"),
      tier,
      credits: int(flags, "credits"),
      ...(typeof flags.email === "string" ? { email: flags.email } : {}),
      ...(flags.unlimited === true ? { unlimited: true } : {}),
    };
    op = { name: "account-create", body, run: (d) => createAccount(d, body) };
  } else if (cmd === "account list") {
    op = { name: "account-list", body: {}, run: (d) => listAccounts(d) };
  } else if (cmd === "wallet topup") {
    const body = { accountId: need(flags, "account"), credits: int(flags, "credits") };
    if (!/^[0-9a-f-]{36}$/.test(body.accountId)) throw new UsageError("--account must be an account id (UUID)");
    op = { name: "wallet-topup", body, run: (d) => topUp(d, { ...body, note: "admin CLI top-up" }) };
  } else {
    throw new UsageError(cmd ? `unknown command "${cmd}"` : "no command");
  }

  const env = loadEnv();
  let result: unknown;
  const file = adminFile(env.DATA_DIR);
  const running =
    !env.DATABASE_URL && fs.existsSync(file)
      ? (JSON.parse(fs.readFileSync(file, "utf8")) as { pid: number; port: number; token: string })
      : null;
  const alive =
    running &&
    (() => {
      try {
        process.kill(running.pid, 0);
        return true;
      } catch {
        return false;
      }
    })();
  if (running && alive) {
    const r = await fetch(`http://127.0.0.1:${running.port}/internal/admin/${op.name}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-admin-token": running.token },
      body: JSON.stringify(op.body),
    });
    const body = await r.json();
    if (!r.ok) throw new Error(body?.error?.message ?? `service answered ${r.status}`);
    result = body;
  } else {
    const h = await openDb({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR });
    try {
      const deps: CoreDeps = {
        db: h.db,
        clock: { now: () => new Date() },
        kek: loadKek(env),
        logger: { debug() {}, info() {}, warn() {}, error() {} },
      };
      result = await op.run(deps);
    } finally {
      await h.close();
    }
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } else if (Array.isArray(result)) {
    for (const a of result as any[])
      console.log(
        `${a.account_id}  ${a.tier.padEnd(12)} ${String(a.balance_credits).padStart(8)} credits  ${a.name}  ${a.console_emails.join(",")}`,
      );
    if (result.length === 0) console.log("no accounts");
  } else {
    for (const [k, v] of Object.entries(result as object)) console.log(`${k.padEnd(18)} ${v}`);
  }
}

main().catch((e) => {
  if (e instanceof UsageError) {
    console.error(`error: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  console.error(`error: ${e instanceof Error ? e.message : e}`);
  process.exit(1);
});
