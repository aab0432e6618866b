// The console's tRPC router (served at /trpc): every console procedure, generated from core's operation
// registry (./operations.ts), plus the console's session procedures (console.auth). The /v1 operations are
// compiled Fastify routes (apps/api/src/http/v1-routes.ts); `openApiRouter` holds them as procedures only so
// that trpc-to-openapi generates /openapi.json from their meta and schemas (it is never served).

import { consoleAuthRouter } from "./console-auth.ts";
import { router } from "./init.ts";
import { consoleProcedures, v1Procedures } from "./operations.ts";

export const appRouter = router({
  console: router({ ...consoleProcedures(), auth: consoleAuthRouter }),
});

export type AppRouter = typeof appRouter;

/** The /v1 operations with their trpc-to-openapi meta, for the OpenAPI document only. */
export const openApiRouter = router(v1Procedures());
