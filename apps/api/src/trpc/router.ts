import { healthRouter } from "../routers/health.ts";
import { idempotencyRouter } from "../routers/idempotency.ts";
import { keysRouter } from "../routers/keys.ts";
import { llmKeysRouter } from "../routers/llm-keys.ts";
import { modelsRouter } from "../routers/models.ts";
import { usageRouter } from "../routers/usage.ts";
import { router } from "./init.ts";

export const appRouter = router({
  health: healthRouter,
  keys: keysRouter,
  usage: usageRouter,
  idempotency: idempotencyRouter,
  llmKeys: llmKeysRouter,
  models: modelsRouter,
});

export type AppRouter = typeof appRouter;
