import { createKey } from "@cua/core/keys/create-key";
import { listKeys } from "@cua/core/keys/list-keys";
import { revokeKey } from "@cua/core/keys/revoke-key";
import { z } from "zod";
import { idempotent } from "../trpc/idempotent.ts";
import { router } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";
import { CreatedKey, CreateKeyInput, DeletedKey, DeleteKeyInput, KeyItem } from "./keys.types.ts";

export const keysRouter = router({
  create: apiProcedure
    .meta({
      scope: "keys",
      idempotent: true,
      successStatus: 201,
      errors: ["KEY_LIMIT_REACHED", "IDEMPOTENCY_IN_FLIGHT", "IDEMPOTENCY_KEY_REUSED", "INVALID_IDEMPOTENCY_KEY"],
      openapi: {
        method: "POST",
        path: "/keys",
        tags: ["Account"],
        summary: "Create an API key",
        description:
          "Creates a key in the caller's mode. The raw key is in this response only. A key may grant only scopes it holds; `keys` is never a default.",
      },
    })
    .input(CreateKeyInput)
    .output(CreatedKey)
    .mutation(({ ctx, input }) =>
      idempotent(ctx, input, async () => {
        const created = await createKey(ctx.deps, ctx.principal, input);
        ctx.res.status = 201;
        return created;
      }),
    ),
  list: apiProcedure
    .meta({
      scope: "keys",
      openapi: {
        method: "GET",
        path: "/keys",
        tags: ["Account"],
        summary: "List API keys",
        description: "A test key sees test keys; a live key sees live and legacy keys.",
      },
    })
    .input(z.void())
    .output(z.object({ keys: z.array(KeyItem).describe("active keys") }))
    .query(({ ctx }) => listKeys(ctx.deps, ctx.principal)),
  revoke: apiProcedure
    .meta({
      scope: "keys",
      errors: ["INVALID_KEY_ID", "NOT_FOUND"],
      openapi: {
        method: "DELETE",
        path: "/keys/{key_id}",
        tags: ["Account"],
        summary: "Revoke an API key",
        description: "A key of the other mode or an unknown id is 404.",
      },
    })
    .input(DeleteKeyInput)
    .output(DeletedKey)
    .mutation(({ ctx, input }) => revokeKey(ctx.deps, ctx.principal, input.key_id)),
});
