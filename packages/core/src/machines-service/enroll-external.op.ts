// POST /v1/machines/external: enroll a customer-operated machine (DECISIONS.md "External machines").
// Idempotency-Key is required; its scope is the account and mode (survives key rotation) for 24 h, so an
// exact replay returns the same device token. 201 with Cache-Control: no-store.
import { defineOperation } from "../operations/define.ts";
import { enrollExternalMachine } from "./enroll-external.ts";
import { EnrollBody, EnrollResponse } from "./schemas.ts";

export const enrollExternalOp = defineOperation({
  id: "machinesExternal.enroll",
  method: "POST",
  path: "/machines/external",
  scope: "machines:write",
  idempotency: "required-per-account",
  successStatus: 201,
  input: EnrollBody,
  output: EnrollResponse,
  docs: {
    tags: ["External machines"],
    summary: "Enroll an external machine",
    description:
      "Creates a machine driven by your own driver (protocol version 1) and returns its device token once. Idempotency-Key is required (400 IDEMPOTENCY_KEY_REQUIRED): its scope is the account, it survives API-key rotation for 24 hours, and an exact replay returns the same token; another body is 422 IDEMPOTENCY_KEY_REUSED. 201, Cache-Control: no-store. Costs 0 credits.",
  },
  handler: (ctx, input) => {
    ctx.res.headers["Cache-Control"] = "no-store";
    return enrollExternalMachine(ctx.deps, ctx.caller, input);
  },
});
