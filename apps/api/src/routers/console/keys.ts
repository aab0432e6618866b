// API keys of both modes: the operator mints keys with any scope set, lists and revokes them.
import { createOperatorKey, listOperatorKeys, revokeOperatorKey } from "@cua/core/console/operator-keys";
import { ALL_SCOPES, defaultScopes } from "@cua/core/keys/scopes";
import { z } from "zod";
import { consoleProcedure } from "../../trpc/console-procedures.ts";
import { router } from "../../trpc/init.ts";
import { DeletedKey, DeleteKeyInput, KeyItem } from "../keys.types.ts";
import { CreatedKey, CreateKeyInput, ScopeCatalog } from "./console.types.ts";

export const consoleKeysRouter = router({
  scopes: consoleProcedure
    .input(z.void())
    .output(ScopeCatalog)
    .query(() => ({ scopes: [...ALL_SCOPES], defaults: { live: defaultScopes("live"), test: defaultScopes("test") } })),
  list: consoleProcedure
    .input(z.void())
    .output(z.object({ keys: z.array(KeyItem).describe("active keys of both modes, newest first") }))
    .query(({ ctx }) => listOperatorKeys(ctx.deps, ctx.operator)),
  create: consoleProcedure
    .input(CreateKeyInput)
    .output(CreatedKey)
    .mutation(({ ctx, input }) => createOperatorKey(ctx.deps, ctx.operator, input)),
  revoke: consoleProcedure
    .input(DeleteKeyInput)
    .output(DeletedKey)
    .mutation(({ ctx, input }) => revokeOperatorKey(ctx.deps, ctx.operator, input.key_id)),
});
