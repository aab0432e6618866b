// The console's authentication over /trpc, black-box: sign-up, sign-in, sign-out, sessions (SHA-256 of the
// token stored, 30-day sliding expiry), cookie attributes, the Origin check and sign-in attempt limits.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionCookie, signUp, trpc, uniqueEmail } from "./console-helpers.ts";
import { startTestServer, type TestServer } from "./helpers.ts";

const DAY = 24 * 3600 * 1000;
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const tokenOf = (cookie: string) => cookie.slice("svc_session=".length);
const sha256 = (t: string) => createHash("sha256").update(t).digest("hex");

describe("sign-up", () => {
  it("creates a free account with 0 credits, no API keys, and a session cookie", async () => {
    const email = uniqueEmail("Signup").toUpperCase();
    const r = await trpc(s.url, "console.auth.signUp", { input: { email, password: "long enough pw" } });
    expect(r.status).toBe(200);
    expect(r.data).toMatchObject({ signed_in: true, email: email.toLowerCase() });
    const cookie = sessionCookie(r.setCookie);
    const me = await trpc(s.url, "console.auth.me", { query: true, cookie });
    expect(me.status).toBe(200);
    expect(me.data).toMatchObject({ email: email.toLowerCase(), tier: "free" });
    const acct = await s.app.deps.db.account.findUniqueOrThrow({
      where: { id: me.data.account_id },
      include: { apiKeys: true },
    });
    expect(acct.balanceCredits).toBe(0);
    expect(acct.tier).toBe("free");
    expect(acct.apiKeys).toHaveLength(0);
    const user = await s.app.deps.db.consoleUser.findUniqueOrThrow({ where: { email: email.toLowerCase() } });
    expect(user.passwordHash).toMatch(/^scrypt\$/);
    expect(user.passwordHash).not.toContain("long enough pw");
  });

  it("a taken email is 409 EMAIL_TAKEN (case-insensitive)", async () => {
    const { email } = await signUp(s.url);
    const r = await trpc(s.url, "console.auth.signUp", {
      input: { email: email.toUpperCase(), password: "another password" },
    });
    expect(r.status).toBe(409);
    expect(r.error.code).toBe("EMAIL_TAKEN");
    expect(r.setCookie).toBeNull();
  });

  it.each([
    [{ email: "not-an-email", password: "long enough pw" }, "body.email"],
    [{ email: "short@example.com", password: "short" }, "body.password"],
    [{ email: "extra@example.com", password: "long enough pw", admin: true }, "body.admin"],
  ])("bad input %j is 422 VALIDATION_ERROR at %s", async (input, path) => {
    const r = await trpc(s.url, "console.auth.signUp", { input });
    expect(r.status).toBe(422);
    expect(r.error.code).toBe("VALIDATION_ERROR");
    expect(r.error.details.map((d: { path: string }) => d.path).join(" ")).toContain(path);
  });
});

describe("sessions and cookies", () => {
  it("stores only SHA-256(token) as the session id; the cookie is HttpOnly, SameSite=Lax, Path=/, 30 days", async () => {
    const { cookie, res } = await signUp(s.url);
    const token = tokenOf(cookie);
    expect(token).toMatch(/^[a-z2-7]{32}$/);
    const row = await s.app.deps.db.consoleSession.findUnique({ where: { id: sha256(token) } });
    expect(row).not.toBeNull();
    expect(await s.app.deps.db.consoleSession.findUnique({ where: { id: token } })).toBeNull();
    const attrs = res.setCookie!.split(";").map((a) => a.trim());
    expect(attrs).toContain("HttpOnly");
    expect(attrs).toContain("SameSite=Lax");
    expect(attrs).toContain("Path=/");
    expect(attrs).not.toContain("Secure"); // plain http: a Secure cookie would never come back
    const maxAge = Number(attrs.find((a) => a.startsWith("Max-Age="))!.split("=")[1]);
    expect(maxAge).toBeGreaterThan(30 * 24 * 3600 - 60);
    expect(maxAge).toBeLessThanOrEqual(30 * 24 * 3600);
    expect(Math.abs(row!.expiresAt.getTime() - Date.now() - 30 * DAY)).toBeLessThan(60_000);
  });

  it("sets Secure when the request came over https (X-Forwarded-Proto)", async () => {
    const r = await trpc(s.url, "console.auth.signUp", {
      input: { email: uniqueEmail(), password: "long enough pw" },
      headers: { "x-forwarded-proto": "https" },
    });
    expect(r.status).toBe(200);
    expect(r.setCookie).toMatch(/;\s*Secure/);
  });

  it("sets Secure when PUBLIC_BASE_URL is https, and accepts that origin", async () => {
    const t = await startTestServer({ PUBLIC_BASE_URL: "https://console.example.com" }, s.db);
    try {
      const r = await trpc(t.url, "console.auth.signUp", {
        input: { email: uniqueEmail(), password: "long enough pw" },
        origin: "https://console.example.com",
      });
      expect(r.status).toBe(200);
      expect(r.setCookie).toMatch(/;\s*Secure/);
    } finally {
      await t.stop();
    }
  });

  it("a session within 15 days of expiry is extended to 30 days and the cookie set again", async () => {
    const { cookie } = await signUp(s.url);
    const id = sha256(tokenOf(cookie));
    // 20 days left: no refresh, no cookie
    await s.app.deps.db.consoleSession.update({ where: { id }, data: { expiresAt: new Date(Date.now() + 20 * DAY) } });
    let me = await trpc(s.url, "console.auth.me", { query: true, cookie });
    expect(me.status).toBe(200);
    expect(me.setCookie).toBeNull();
    // 10 days left: extended to 30 days, cookie re-set with the same token
    await s.app.deps.db.consoleSession.update({ where: { id }, data: { expiresAt: new Date(Date.now() + 10 * DAY) } });
    me = await trpc(s.url, "console.auth.me", { query: true, cookie });
    expect(me.status).toBe(200);
    expect(sessionCookie(me.setCookie)).toBe(cookie);
    const row = await s.app.deps.db.consoleSession.findUniqueOrThrow({ where: { id } });
    expect(Math.abs(row.expiresAt.getTime() - Date.now() - 30 * DAY)).toBeLessThan(60_000);
    expect(new Date(me.data.session_expires_at).getTime()).toBe(row.expiresAt.getTime());
  });

  it("an expired session is 401 UNAUTHENTICATED, its row deleted and the cookie cleared", async () => {
    const { cookie } = await signUp(s.url);
    const id = sha256(tokenOf(cookie));
    await s.app.deps.db.consoleSession.update({ where: { id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const me = await trpc(s.url, "console.auth.me", { query: true, cookie });
    expect(me.status).toBe(401);
    expect(me.error.code).toBe("UNAUTHENTICATED");
    expect(me.setCookie).toMatch(/^svc_session=;.*Max-Age=0/);
    expect(await s.app.deps.db.consoleSession.findUnique({ where: { id } })).toBeNull();
  });

  it.each([
    ["no cookie", undefined],
    ["a malformed token", "svc_session=../../etc"],
    ["an unknown token", `svc_session=${"a".repeat(32)}`],
  ])("%s is 401 UNAUTHENTICATED on every console procedure", async (_label, cookie) => {
    for (const path of ["console.auth.me", "console.wallet.balance", "console.keys.list", "console.llmKeys.list"]) {
      const r = await trpc(s.url, path, { query: true, cookie });
      expect(r.status, path).toBe(401);
      expect(r.error.code).toBe("UNAUTHENTICATED");
    }
    const m = await trpc(s.url, "console.wallet.topUp", { input: { credits: 5 }, cookie });
    expect(m.status).toBe(401);
  });

  it("an API key is not a console credential", async () => {
    const acct = await s.account();
    const r = await trpc(s.url, "console.wallet.balance", { query: true, headers: { "x-api-key": acct.live_key } });
    expect(r.status).toBe(401);
    expect(r.error.code).toBe("UNAUTHENTICATED");
  });
});

describe("sign-in and sign-out", () => {
  it("signs in with the right password (email case-insensitive) and out again", async () => {
    const { email, password } = await signUp(s.url);
    const r = await trpc(s.url, "console.auth.signIn", { input: { email: ` ${email.toUpperCase()} `, password } });
    expect(r.status).toBe(200);
    const cookie = sessionCookie(r.setCookie);
    expect((await trpc(s.url, "console.auth.me", { query: true, cookie })).status).toBe(200);
    const out = await trpc(s.url, "console.auth.signOut", { cookie });
    expect(out.status).toBe(200);
    expect(out.data).toEqual({ signed_out: true });
    expect(out.setCookie).toMatch(/^svc_session=;.*Max-Age=0/);
    expect(await s.app.deps.db.consoleSession.findUnique({ where: { id: sha256(tokenOf(cookie)) } })).toBeNull();
    const me = await trpc(s.url, "console.auth.me", { query: true, cookie });
    expect(me.status).toBe(401);
  });

  it("the first-run style account (created with a console login) can sign in", async () => {
    const acct = await s.account();
    const r = await trpc(s.url, "console.auth.signIn", {
      input: { email: acct.console_email, password: acct.console_password },
    });
    expect(r.status).toBe(200);
    const me = await trpc(s.url, "console.auth.me", { query: true, cookie: sessionCookie(r.setCookie) });
    expect(me.data.account_id).toBe(acct.account_id);
  });

  it("a wrong password and an unknown email give the same 401 INVALID_CREDENTIALS", async () => {
    const { email } = await signUp(s.url);
    const wrong = await trpc(s.url, "console.auth.signIn", { input: { email, password: "not the password" } });
    const unknown = await trpc(s.url, "console.auth.signIn", {
      input: { email: uniqueEmail("nobody"), password: "not the password" },
    });
    for (const r of [wrong, unknown]) {
      expect(r.status).toBe(401);
      expect(r.error.code).toBe("INVALID_CREDENTIALS");
      expect(r.error.message).toBe("Email or password is wrong.");
      expect(r.setCookie).toBeNull();
    }
  });

  it("an unknown email costs a password verification too (no fast path)", async () => {
    const { email } = await signUp(s.url);
    const time = async (e: string) => {
      const t0 = performance.now();
      await trpc(s.url, "console.auth.signIn", { input: { email: e, password: "not the password" } });
      return performance.now() - t0;
    };
    const known: number[] = [];
    const unknownT: number[] = [];
    for (let i = 0; i < 3; i++) {
      known.push(await time(email));
      unknownT.push(await time(uniqueEmail("ghost")));
    }
    const med = (a: number[]) => a.sort((x, y) => x - y)[1]!;
    // scrypt (N=16384) takes tens of milliseconds; a lookup-only rejection would take ~1 ms
    expect(med(unknownT)).toBeGreaterThan(med(known) * 0.5);
  });

  it("after 10 failed attempts for an email, the 11th is 429 with Retry-After, even with the right password", async () => {
    const { email, password } = await signUp(s.url);
    for (let i = 0; i < 10; i++) {
      const r = await trpc(s.url, "console.auth.signIn", { input: { email, password: `wrong ${i} password` } });
      expect(r.status).toBe(401);
    }
    const r = await trpc(s.url, "console.auth.signIn", { input: { email, password } });
    expect(r.status).toBe(429);
    expect(r.error.code).toBe("RATE_LIMIT_EXCEEDED");
    const retryAfter = Number(r.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    expect(r.error.retry_after).toBe(retryAfter);
    expect(r.setCookie).toBeNull();
    // another email is not affected
    const other = await signUp(s.url);
    const ok = await trpc(s.url, "console.auth.signIn", { input: { email: other.email, password: other.password } });
    expect(ok.status).toBe(200);
  });

  it("the per-email counter is in the database: it holds across API processes", async () => {
    const { email, password } = await signUp(s.url);
    for (let i = 0; i < 10; i++)
      await trpc(s.url, "console.auth.signIn", { input: { email, password: "wrong password!" } });
    const t = await startTestServer({}, s.db);
    try {
      const r = await trpc(t.url, "console.auth.signIn", { input: { email, password } });
      expect(r.status).toBe(429);
    } finally {
      await t.stop();
    }
  });

  it("successful sign-ins do not use up the allowance", async () => {
    const { email, password } = await signUp(s.url);
    for (let i = 0; i < 12; i++) {
      const r = await trpc(s.url, "console.auth.signIn", { input: { email, password } });
      expect(r.status).toBe(200);
    }
  });

  it("after 100 attempts from one client address, further attempts from it are 429", async () => {
    const xff = "203.0.113.77";
    const attempts = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        trpc(s.url, "console.auth.signIn", {
          input: { email: `spray-${i}@example.com`, password: "password1" },
          headers: { "x-forwarded-for": xff },
        }),
      ),
    );
    expect(attempts.every((a) => a.status === 401)).toBe(true);
    const blocked = await trpc(s.url, "console.auth.signIn", {
      input: { email: "spray-x@example.com", password: "password1" },
      headers: { "x-forwarded-for": xff },
    });
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get("retry-after")).toMatch(/^\d+$/);
    const elsewhere = await trpc(s.url, "console.auth.signIn", {
      input: { email: "spray-x@example.com", password: "password1" },
      headers: { "x-forwarded-for": "198.51.100.1" },
    });
    expect(elsewhere.status).toBe(401);
  });
});

describe("Origin check on every state-changing request", () => {
  it("a POST without Origin is 403 FORBIDDEN_ORIGIN (sign-in, sign-up and signed-in mutations)", async () => {
    const { email, password, cookie } = await signUp(s.url);
    for (const [path, input] of [
      ["console.auth.signIn", { email, password }],
      ["console.auth.signUp", { email: uniqueEmail(), password }],
      ["console.wallet.topUp", { credits: 10 }],
      ["console.auth.signOut", undefined],
    ] as const) {
      const r = await trpc(s.url, path, { input, cookie, origin: null });
      expect(r.status, path).toBe(403);
      expect(r.error.code).toBe("FORBIDDEN_ORIGIN");
      expect(r.setCookie).toBeNull();
    }
    const me = await trpc(s.url, "console.wallet.balance", { query: true, cookie });
    expect(me.data.balance_credits).toBe(0);
  });

  it("a POST from another origin is 403 FORBIDDEN_ORIGIN", async () => {
    const { cookie } = await signUp(s.url);
    for (const origin of ["https://evil.example", "http://127.0.0.1:1", "null"]) {
      const r = await trpc(s.url, "console.wallet.topUp", { input: { credits: 10 }, cookie, origin });
      expect(r.status, origin).toBe(403);
      expect(r.error.code).toBe("FORBIDDEN_ORIGIN");
    }
  });

  it("behind the console's proxy, the Origin may match X-Forwarded-Host", async () => {
    const { cookie } = await signUp(s.url);
    const r = await trpc(s.url, "console.wallet.topUp", {
      input: { credits: 10 },
      cookie,
      origin: "http://console.local:3000",
      headers: { "x-forwarded-host": "console.local:3000" },
    });
    expect(r.status).toBe(200);
  });

  it("GET queries need no Origin", async () => {
    const { cookie } = await signUp(s.url);
    const r = await trpc(s.url, "console.wallet.balance", { query: true, cookie });
    expect(r.status).toBe(200);
  });
});
