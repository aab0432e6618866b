// The console's own session procedures (not registry operations: they create the caller the registry's
// console procedures use): sign-up, sign-in, sign-out and the current operator. Each is one core call plus
// the cookie.

import { invalidateSession, sessionIdOf } from "@cua/core/console/session";
import { signIn } from "@cua/core/console/sign-in";
import { signUp } from "@cua/core/console/sign-up";
import { Timestamp } from "@cua/core/operations/common-schemas";
import { z } from "zod";
import {
  clearSessionCookie,
  clientIp,
  consoleProcedure,
  consolePublicProcedure,
  readCookie,
  SESSION_COOKIE,
  setSessionCookie,
} from "./console-procedures.ts";
import { header } from "./context.ts";
import { router } from "./init.ts";

const Email = z.string().max(254).describe("the console user's email address");

const SignUpInput = z.strictObject({
  email: Email,
  password: z.string().max(256).describe("at least 8 characters"),
  account_name: z.string().max(200).optional().describe("name of the new account; default: the email's domain"),
});

const SignInInput = z.strictObject({
  email: Email,
  password: z.string().max(1024).describe("the password"),
});

const Me = z.object({
  user_id: z.string().describe("console user id"),
  email: z.string().describe("console user's email"),
  account_id: z.string().describe("the account the user operates"),
  account_name: z.string().describe("the account's name"),
  tier: z.string().describe("the account's tier"),
  session_expires_at: Timestamp.describe("when the session ends unless used again"),
});

const SignedIn = z.object({
  signed_in: z.literal(true).describe("always true"),
  email: z.string().describe("the signed-in email"),
  session_expires_at: Timestamp.describe("session expiry (sliding)"),
});

export const consoleAuthRouter = router({
  signUp: consolePublicProcedure
    .input(SignUpInput)
    .output(SignedIn)
    .mutation(async ({ ctx, input }) => {
      const s = await signUp(
        ctx.deps,
        { email: input.email, password: input.password, accountName: input.account_name },
        { ip: clientIp(ctx) },
      );
      setSessionCookie(ctx, s);
      return { signed_in: true as const, email: s.email, session_expires_at: s.expiresAt.toISOString() };
    }),
  signIn: consolePublicProcedure
    .input(SignInInput)
    .output(SignedIn)
    .mutation(async ({ ctx, input }) => {
      const s = await signIn(ctx.deps, input, { ip: clientIp(ctx) });
      setSessionCookie(ctx, s);
      return {
        signed_in: true as const,
        email: input.email.trim().toLowerCase(),
        session_expires_at: s.expiresAt.toISOString(),
      };
    }),
  signOut: consolePublicProcedure
    .input(z.void())
    .output(z.object({ signed_out: z.literal(true).describe("always true") }))
    .mutation(async ({ ctx }) => {
      const token = readCookie(header(ctx.req, "cookie"), SESSION_COOKIE);
      if (token) await invalidateSession(ctx.deps, sessionIdOf(token));
      clearSessionCookie(ctx);
      return { signed_out: true as const };
    }),
  me: consoleProcedure
    .input(z.void())
    .output(Me)
    .query(({ ctx }) => {
      const op = ctx.operator;
      return {
        user_id: op.userId,
        email: op.email,
        account_id: op.accountId,
        account_name: op.accountName,
        tier: op.tier,
        session_expires_at: ctx.sessionExpiresAt.toISOString(),
      };
    }),
});
