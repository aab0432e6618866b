// An operator's account bootstrap: account, a live and a test key holding every scope, a console
// user with a generated password, and an opening wallet top-up recorded in the ledger.

import { validationError } from "@cua/base/errors";
import { hex, newUuid } from "@cua/base/ids";
import { generatePassword, hashPassword } from "../auth/password.ts";
import type { CoreDeps } from "../deps.ts";
import { insertKey } from "../keys/create-key.ts";
import { ALL_SCOPES } from "../keys/scopes.ts";
import { topUp } from "../wallet/wallet.ts";

export const TIERS = ["free", "starter", "professional", "enterprise"] as const;
export type Tier = (typeof TIERS)[number];

export interface CreatedAccount {
  account_id: string;
  live_key: string;
  test_key: string;
  console_email: string;
  console_password: string;
}

export async function createAccount(
  deps: CoreDeps,
  input: { name: string; tier: Tier; credits: number; email?: string; password?: string; unlimited?: boolean },
): Promise<CreatedAccount> {
  if (!input.name.trim()) throw validationError("name", "must not be empty");
  if (!TIERS.includes(input.tier)) throw validationError("tier", `must be one of ${TIERS.join(", ")}`);
  if (!Number.isSafeInteger(input.credits) || input.credits < 0)
    throw validationError("credits", "must be a non-negative integer");
  if (input.unlimited !== undefined && typeof input.unlimited !== "boolean")
    throw validationError("unlimited", "must be a boolean");
  const accountId = newUuid();
  const email = (input.email ?? `owner-${hex(4)}@console.local`).toLowerCase();
  const password = input.password ?? generatePassword();
  const passwordHash = await hashPassword(password);
  const keys = await deps.db.$transaction(async (tx) => {
    await tx.account.create({
      data: { id: accountId, name: input.name.trim(), tier: input.tier, unlimited: input.unlimited === true },
    });
    await tx.consoleUser.create({ data: { id: newUuid(), accountId, email, passwordHash } });
    const live = await insertKey(tx, { accountId, mode: "live", name: "owner (live)", scopes: [...ALL_SCOPES] });
    const test = await insertKey(tx, { accountId, mode: "test", name: "owner (test)", scopes: [...ALL_SCOPES] });
    return { live: live.raw, test: test.raw };
  });
  if (input.credits > 0) await topUp(deps, { accountId, credits: input.credits, note: "opening balance" });
  return {
    account_id: accountId,
    live_key: keys.live,
    test_key: keys.test,
    console_email: email,
    console_password: password,
  };
}

export async function listAccounts(deps: CoreDeps) {
  const rows = await deps.db.account.findMany({
    orderBy: { createdAt: "asc" },
    include: { users: { select: { email: true } }, _count: { select: { apiKeys: { where: { revokedAt: null } } } } },
  });
  return rows.map((a) => ({
    account_id: a.id,
    name: a.name,
    tier: a.tier,
    balance_credits: a.balanceCredits,
    console_emails: a.users.map((u) => u.email),
    active_keys: a._count.apiKeys,
    created_at: a.createdAt.toISOString(),
  }));
}
