// The console's procedure builders, served over /trpc only (no OpenAPI meta, so never under /v1).
// - Every non-GET request (tRPC mutations are POST) must carry an Origin whose host is the service's own:
//   the Host header, X-Forwarded-Host (set by the console's same-origin proxy) or PUBLIC_BASE_URL's host.
//   Otherwise 403 FORBIDDEN_ORIGIN. Browsers always send Origin on POST; a cross-site page cannot forge
//   it nor add X-Forwarded-Host without a CORS preflight, which this service never grants.
// - `consoleProcedure` also requires a session cookie (`svc_session`): HttpOnly, SameSite=Lax, Path=/,
//   Secure when the request came over https (PUBLIC_BASE_URL https, X-Forwarded-Proto https or TLS).
//   A session within 15 days of its expiry is extended and the cookie set again (sliding expiry).

import { CoreError } from "@cua/base/errors";
import { type IssuedSession, type Operator, validateSessionToken } from "@cua/core/console/session";
import { type Ctx, header } from "./context.ts";
import { t } from "./init.ts";

export const SESSION_COOKIE = "svc_session";

export function readCookie(cookieHeader: string | undefined, name: string): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function isSecureRequest(ctx: Ctx): boolean {
  if (ctx.deps.env.PUBLIC_BASE_URL?.startsWith("https:")) return true;
  const proto = header(ctx.req, "x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase();
  return proto === "https" || ctx.req.protocol === "https";
}

function cookie(ctx: Ctx, value: string, maxAgeSeconds: number, expires: Date): string {
  const attrs = [
    `${SESSION_COOKIE}=${value}`,
    "Path=/",
    `Max-Age=${maxAgeSeconds}`,
    `Expires=${expires.toUTCString()}`,
    "HttpOnly",
    "SameSite=Lax",
  ];
  if (isSecureRequest(ctx)) attrs.push("Secure");
  return attrs.join("; ");
}

export function setSessionCookie(ctx: Ctx, s: IssuedSession): void {
  const now = ctx.deps.clock.now().getTime();
  const maxAge = Math.max(0, Math.floor((s.expiresAt.getTime() - now) / 1000));
  ctx.res.headers["Set-Cookie"] = cookie(ctx, s.token, maxAge, s.expiresAt);
  ctx.res.headers["Cache-Control"] = "no-store";
}

export function clearSessionCookie(ctx: Ctx): void {
  ctx.res.headers["Set-Cookie"] = cookie(ctx, "", 0, new Date(0));
}

/** The client address for attempt limits: the socket peer, or X-Forwarded-For's last hop when the peer is
 * a local proxy (the console's rewrite runs on the same host). */
export function clientIp(ctx: Ctx): string {
  const peer = ctx.req.socket.remoteAddress ?? "unknown";
  const loopback = peer === "::1" || peer.startsWith("127.") || peer.startsWith("::ffff:127.");
  const xff = header(ctx.req, "x-forwarded-for");
  if (loopback && xff) {
    const hops = xff
      .split(",")
      .map((h) => h.trim())
      .filter(Boolean);
    const last = hops[hops.length - 1];
    if (last && last.length <= 64) return last;
  }
  return peer;
}

function allowedHosts(ctx: Ctx): Set<string> {
  const hosts = new Set<string>();
  const host = header(ctx.req, "host");
  if (host) hosts.add(host.toLowerCase());
  const fwd = header(ctx.req, "x-forwarded-host")?.split(",")[0]?.trim();
  if (fwd) hosts.add(fwd.toLowerCase());
  if (ctx.deps.env.PUBLIC_BASE_URL) hosts.add(new URL(ctx.deps.env.PUBLIC_BASE_URL).host.toLowerCase());
  return hosts;
}

export function checkOrigin(ctx: Ctx): void {
  if (ctx.req.method === "GET" || ctx.req.method === "HEAD") return;
  const origin = header(ctx.req, "origin");
  if (!origin)
    throw new CoreError("FORBIDDEN_ORIGIN", "Console requests that change state must carry an Origin header.");
  let host: string;
  try {
    host = new URL(origin).host.toLowerCase();
  } catch {
    throw new CoreError("FORBIDDEN_ORIGIN", "The Origin header is not a URL.");
  }
  if (!allowedHosts(ctx).has(host))
    throw new CoreError("FORBIDDEN_ORIGIN", `The origin ${origin} may not call the console.`);
}

const noStore = t.middleware(({ ctx, next }) => {
  ctx.res.headers["Cache-Control"] = "no-store";
  return next();
});

/** Console procedures without a session (sign-up, sign-in): the Origin check only. */
export const consolePublicProcedure = t.procedure.use(noStore).use(({ ctx, next }) => {
  checkOrigin(ctx);
  return next();
});

/** Console procedures of a signed-in operator: Origin check, then the session; ctx.operator is set. */
export const consoleProcedure = consolePublicProcedure.use(async ({ ctx, next }) => {
  const token = readCookie(header(ctx.req, "cookie"), SESSION_COOKIE);
  const session = token ? await validateSessionToken(ctx.deps, token) : null;
  if (!session) {
    if (token !== undefined) clearSessionCookie(ctx);
    throw new CoreError("UNAUTHENTICATED", "Sign in first: the console session is missing or has expired.");
  }
  if (session.refreshed && token) setSessionCookie(ctx, { token, expiresAt: session.expiresAt });
  const operator: Operator = session.operator;
  return next({ ctx: { ...ctx, operator, sessionExpiresAt: session.expiresAt } });
});
