// The one tRPC router: every /v1 operation and every console procedure, generated from core's operation
// registry (./operations.ts), plus the console's session procedures (console.auth).

import { consoleAuthRouter } from "./console-auth.ts";
import { router } from "./init.ts";
import { consoleProcedures, v1Procedures } from "./operations.ts";

export const appRouter = router({
  ...v1Procedures(),
  console: router({ ...consoleProcedures(), auth: consoleAuthRouter }),
});

export type AppRouter = typeof appRouter;
