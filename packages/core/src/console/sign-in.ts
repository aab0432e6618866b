// Console sign-in. Failures look and take the same whether the email is unknown or the password wrong:
// an unknown email is verified against a dummy scrypt hash. Attempts are limited per email and per IP.

import { CoreError, validationError } from "@cua/base/errors";
import { hashPassword, verifyPassword } from "../auth/password.ts";
import type { CoreDeps } from "../deps.ts";
import { beginAttempt, emailBucket, ipBucket } from "./attempt-limit.ts";
import { MAX_PASSWORD_LENGTH } from "./credentials.ts";
import { createSession, type IssuedSession } from "./session.ts";

let dummyHash: Promise<string> | undefined;
/** A real hash with the same parameters as stored ones, so unknown emails cost the same to reject. */
const dummy = () => {
  dummyHash ??= hashPassword("dummy password for timing equality");
  return dummyHash;
};

export async function signIn(
  deps: CoreDeps,
  input: { email: string; password: string },
  client: { ip: string },
): Promise<IssuedSession & { userId: string }> {
  const email = input.email.trim().toLowerCase();
  if (email.length === 0 || email.length > 254) throw validationError("body.email", "must be an email address");
  if (input.password.length > MAX_PASSWORD_LENGTH) throw new CoreError("INVALID_CREDENTIALS");
  const attempt = await beginAttempt(deps, [emailBucket("sign-in", email), ipBucket("sign-in", client.ip)]);
  const user = await deps.db.consoleUser.findUnique({ where: { email }, select: { id: true, passwordHash: true } });
  const ok = await verifyPassword(input.password, user?.passwordHash ?? (await dummy()));
  if (!user || !ok) throw new CoreError("INVALID_CREDENTIALS");
  await attempt.release();
  const session = await createSession(deps, user.id);
  return { ...session, userId: user.id };
}
