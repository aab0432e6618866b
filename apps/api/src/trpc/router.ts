import { consoleRouter } from "../routers/console/console-router.ts";
import { healthRouter } from "../routers/health.ts";
import { idempotencyRouter } from "../routers/idempotency.ts";
import { keysRouter } from "../routers/keys.ts";
import { llmKeysRouter } from "../routers/llm-keys.ts";
import { machinesRouter } from "../routers/machines.ts";
import { machinesExternalRouter } from "../routers/machines-external.ts";
import { modelsRouter } from "../routers/models.ts";
import { predictRouter } from "../routers/predict.ts";
import { runsRouter } from "../routers/runs.ts";
import { sessionsRouter } from "../routers/sessions.ts";
import { usageRouter } from "../routers/usage.ts";
import { router } from "./init.ts";

export const appRouter = router({
  console: consoleRouter,
  health: healthRouter,
  keys: keysRouter,
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
