// Console sign-up: a new account (tier free, 0 credits, no API keys), its console user with a scrypt
// password hash, and a session. Limited per client IP like sign-in.

import { CoreError, validationError } from "@cua/base/errors";
import { newUuid } from "@cua/base/ids";
import { hashPassword } from "../auth/password.ts";
import type { CoreDeps } from "../deps.ts";
import { beginAttempt, ipBucket } from "./attempt-limit.ts";
import { checkNewPassword, normalizeEmail } from "./credentials.ts";
import { createSession, type IssuedSession } from "./session.ts";

export interface SignUpInput {
  email: string;
  password: string;
  /** the account's display name; default: the email's domain */
  accountName?: string;
}

export async function signUp(
  deps: CoreDeps,
  input: SignUpInput,
  client: { ip: string },
): Promise<IssuedSession & { userId: string; accountId: string; email: string }> {
  const email = normalizeEmail(input.email);
  checkNewPassword(input.password);
  const name = (input.accountName ?? "").trim() || email.split("@")[1]!;
  if (name.length > 200) throw validationError("body.account_name", "must be at most 200 characters");
  // every sign-up counts towards the per-IP allowance, successful ones included (accounts are not free to mint)
  await beginAttempt(deps, [ipBucket("sign-up", client.ip)], "sign-up");
  const passwordHash = await hashPassword(input.password);
  const accountId = newUuid();
  const userId = newUuid();
  try {
    await deps.db.$transaction(async (tx) => {
      await tx.account.create({ data: { id: accountId, name, tier: "free", balanceCredits: 0 } });
      await tx.consoleUser.create({ data: { id: userId, accountId, email, passwordHash } });
    });
  } catch (e) {
    if ((e as { code?: string }).code === "P2002") throw new CoreError("EMAIL_TAKEN");
    throw e;
  }
  const session = await createSession(deps, userId);
  return { ...session, userId, accountId, email };
}
