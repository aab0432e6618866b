// Sign-up, sign-in, sign-out and the current operator. Each procedure is one core call plus the cookie.

import { invalidateSession, sessionIdOf } from "@cua/core/console/session";
import { signIn } from "@cua/core/console/sign-in";
import { signUp } from "@cua/core/console/sign-up";
import { z } from "zod";
import {
  clearSessionCookie,
  clientIp,
  consoleProcedure,
  consolePublicProcedure,
  readCookie,
  SESSION_COOKIE,
  setSessionCookie,
} from "../../trpc/console-procedures.ts";
import { header } from "../../trpc/context.ts";
import { router } from "../../trpc/init.ts";
import { Me, SignedIn, SignInInput, SignUpInput } from "./console.types.ts";

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
