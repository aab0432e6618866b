// The one tRPC router: every /v1 operation and every console procedure, generated from core's operation
// registry (./operations.ts), plus the console's session procedures (console.auth).

import { legacyConsoleRouters } from "../routers/console/console-router.ts";
import { healthRouter } from "../routers/health.ts";
import { idempotencyRouter } from "../routers/idempotency.ts";
import { llmKeysRouter } from "../routers/llm-keys.ts";
import { machinesRouter } from "../routers/machines.ts";
import { machinesExternalRouter } from "../routers/machines-external.ts";
import { modelsRouter } from "../routers/models.ts";
import { predictRouter } from "../routers/predict.ts";
import { runsRouter } from "../routers/runs.ts";
import { sessionsRouter } from "../routers/sessions.ts";
import { usageRouter } from "../routers/usage.ts";
import { consoleAuthRouter } from "./console-auth.ts";
import { router } from "./init.ts";
import { consoleProcedures, v1Procedures } from "./operations.ts";

export const appRouter = router({
  ...v1Procedures(),
  console: router({ ...consoleProcedures(), ...legacyConsoleRouters, auth: consoleAuthRouter }),
  health: healthRouter,
  usage: usageRouter,
  idempotency: idempotencyRouter,
  llmKeys: llmKeysRouter,
  models: modelsRouter,
  predict: predictRouter,
  sessions: sessionsRouter,
  runs: runsRouter,
  machines: machinesRouter,
  machinesExternal: machinesExternalRouter,
});

export type AppRouter = typeof appRouter;
