// POST /v1/machines/external: enroll a customer-operated machine (DECISIONS.md "External machines").
// Idempotency-Key is required; its scope is the account and mode (survives key rotation) for 24 h, so an
// exact replay returns the same device token. 201 with Cache-Control: no-store.
import { CoreError } from "@cua/core/errors";
import { enrollExternalMachine } from "@cua/core/machines-service/enroll-external";
import { header } from "../trpc/context.ts";
import { idempotent } from "../trpc/idempotent.ts";
import { router, t } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";
import { EnrollBody, EnrollResponse, machineMeta } from "./machines.types.ts";

// before body validation: a missing key is a 400 header error (check order: 400 format before 422)
const requireIdempotencyKey = t.middleware(({ ctx, next }) => {
  if (header(ctx.req, "idempotency-key") === undefined) {
    throw new CoreError("IDEMPOTENCY_KEY_REQUIRED", "Enrollment requires an Idempotency-Key header.", {
      suggestion:
        "Send Idempotency-Key: <up to 128 characters of [A-Za-z0-9_-:]>; reuse it to get the same device token back.",
    });
  }
  return next();
});

export const machinesExternalRouter = router({
  enroll: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines/external",
        "Enroll an external machine",
        "Creates a machine driven by your own driver (protocol version 1) and returns its device token once. Idempotency-Key is required (400 IDEMPOTENCY_KEY_REQUIRED): its scope is the account, it survives API-key rotation for 24 hours, and an exact replay returns the same token; another body is 422 IDEMPOTENCY_KEY_REUSED. 201, Cache-Control: no-store. Costs 0 credits.",
        {
          scope: "machines:write",
          successStatus: 201,
          idempotent: true,
          tag: "External machines",
          errors: [
            "IDEMPOTENCY_KEY_REQUIRED",
            "IDEMPOTENCY_IN_FLIGHT",
            "IDEMPOTENCY_KEY_REUSED",
            "INVALID_IDEMPOTENCY_KEY",
          ],
        },
      ),
    )
    .use(requireIdempotencyKey)
    .input(EnrollBody)
    .output(EnrollResponse)
    .mutation(({ ctx, input }) => {
      ctx.res.headers["Cache-Control"] = "no-store";
      return idempotent(
        ctx,
        input,
        async () => {
          const r = await enrollExternalMachine(ctx.deps, ctx.principal, input);
          ctx.res.status = 201;
          return r;
        },
        { scope: `account:${ctx.principal.accountId}:${ctx.principal.mode}` },
      );
    }),
});
