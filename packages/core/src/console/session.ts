// Console sessions, Lucia's current recipe: a 20-byte random token encoded base32 (lowercase, no padding)
// goes to the browser in a cookie; the database keeps only SHA-256(token) in hex as the session id.
// Sessions last 30 days and slide: a session used within 15 days of its expiry is extended to 30 days.
import { sha256 } from "@oslojs/crypto/sha2";
import { encodeBase32LowerCaseNoPadding, encodeHexLowerCase } from "@oslojs/encoding";
import type { CoreDeps } from "../deps.ts";

export const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
export const SESSION_REFRESH_WITHIN_MS = 15 * 24 * 3600 * 1000;
/** 20 bytes in base32 = 32 characters of [a-z2-7] */
const TOKEN_RE = /^[a-z2-7]{32}$/;

export type Tier = "free" | "starter" | "professional" | "enterprise";

/** The signed-in console user and the account they operate. */
export interface Operator {
  userId: string;
  email: string;
  accountId: string;
  accountName: string;
  tier: Tier;
  sessionId: string;
}

export interface IssuedSession {
  token: string;
  expiresAt: Date;
}

export function generateSessionToken(): string {
  const bytes = new Uint8Array(20);
  crypto.getRandomValues(bytes);
  return encodeBase32LowerCaseNoPadding(bytes);
}

export function sessionIdOf(token: string): string {
  return encodeHexLowerCase(sha256(new TextEncoder().encode(token)));
}

export async function createSession(deps: CoreDeps, userId: string): Promise<IssuedSession> {
  const token = generateSessionToken();
  const expiresAt = new Date(deps.clock.now().getTime() + SESSION_TTL_MS);
  await deps.db.consoleSession.create({ data: { id: sessionIdOf(token), userId, expiresAt } });
  return { token, expiresAt };
}

export interface ValidatedSession {
  operator: Operator;
  expiresAt: Date;
  /** true when the expiry was extended by this validation: the cookie must be set again */
  refreshed: boolean;
}

/** Resolves a session token; null when it is malformed, unknown or expired (expired rows are deleted). */
export async function validateSessionToken(deps: CoreDeps, token: string): Promise<ValidatedSession | null> {
  if (!TOKEN_RE.test(token)) return null;
  const id = sessionIdOf(token);
  const row = await deps.db.consoleSession.findUnique({
    where: { id },
    include: { user: { include: { account: { select: { id: true, name: true, tier: true } } } } },
  });
  if (!row) return null;
  const now = deps.clock.now().getTime();
  if (now >= row.expiresAt.getTime()) {
    await deps.db.consoleSession.deleteMany({ where: { id } });
    return null;
  }
  let expiresAt = row.expiresAt;
  let refreshed = false;
  if (now >= row.expiresAt.getTime() - SESSION_REFRESH_WITHIN_MS) {
    expiresAt = new Date(now + SESSION_TTL_MS);
    await deps.db.consoleSession.update({ where: { id }, data: { expiresAt } });
    refreshed = true;
  }
  return {
    operator: {
      userId: row.user.id,
      email: row.user.email,
      accountId: row.user.account.id,
      accountName: row.user.account.name,
      tier: row.user.account.tier,
      sessionId: id,
    },
    expiresAt,
    refreshed,
  };
}

export async function invalidateSession(deps: CoreDeps, sessionId: string): Promise<void> {
  await deps.db.consoleSession.deleteMany({ where: { id: sessionId } });
}

/** Signs a user out everywhere (e.g. after a password change). */
export async function invalidateUserSessions(deps: CoreDeps, userId: string): Promise<void> {
  await deps.db.consoleSession.deleteMany({ where: { userId } });
}

/** Deletes expired session rows; cheap to call now and then. */
export async function purgeExpiredSessions(deps: CoreDeps): Promise<number> {
  const r = await deps.db.consoleSession.deleteMany({ where: { expiresAt: { lte: deps.clock.now() } } });
  return r.count;
}
