// @cua/executor: the embedded durable executor for Inngest functions (docs/executor.md).
//   import { createExecutor } from "@cua/executor";
//   import { createPrismaStore } from "@cua/executor/prisma-store";
export { INTERNAL_EVENTS } from "./context.ts";
export { triggerMatchesName } from "./events/router.ts";
export { createExecutor } from "./executor.ts";
export { UNSUPPORTED_FUNCTION_OPTIONS, validateFunctionConfig } from "./functions.ts";
export { UnsupportedOpError } from "./protocol/wire.ts";
export { defaultBackoff, maxAttemptsOf } from "./runner/retries.ts";
export type {
  EventPayload,
  ExecutorStore,
  RunFilter,
  RunRecord,
  RunStatus,
  SerializedError,
} from "./store/store.ts";
export { StoreDataError } from "./store/store.ts";
export type {
  Executor,
  ExecutorHealth,
  ExecutorLogger,
  ExecutorOptions,
  RunPendingView,
  RunStepView,
  RunView,
  SendEventInput,
  SendResult,
} from "./types.ts";
