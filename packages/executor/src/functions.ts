// The functions this executor runs: their configs as the SDK reports them in an in-band sync, checked
// for options the executor does not implement, and recorded (executor_functions) with one cron item
// per cron trigger. Runs of functions the app no longer has are failed instead of waiting forever.
import type { ExecutorContext } from "./context.ts";
import { compileExpression } from "./events/expression.ts";
import type { SyncedApp } from "./protocol/sdk-handler.ts";
import { failRun } from "./runner/endings.ts";
import { parseCron } from "./scheduler/cron.ts";
import { cronItemsOf } from "./scheduler/cron-ticks.ts";
import { isIsoDate, parseDuration } from "./scheduler/duration.ts";
import { type FunctionConfig, type FunctionRecord, isActiveStatus } from "./store/store.ts";

/** Function options this executor does not implement: a function using one is refused at start(). */
export const UNSUPPORTED_FUNCTION_OPTIONS = [
  "batchEvents",
  "rateLimit",
  "throttle",
  "concurrency",
  "debounce",
  "priority",
  "timeouts",
  "singleton",
  "idempotency",
] as const;

/** Refuse, loudly, function configs whose semantics this executor would silently get wrong. */
export function validateFunctionConfig(config: FunctionConfig): void {
  for (const key of UNSUPPORTED_FUNCTION_OPTIONS) {
    if (config[key] !== undefined && config[key] !== null) {
      throw new Error(
        `executor: function "${config.id}" uses "${key}", which the embedded executor does not implement`,
      );
    }
  }
  for (const t of config.triggers ?? []) {
    if (t.cron !== undefined) {
      if (typeof t.cron !== "string") throw new Error(`executor: function "${config.id}" has an invalid cron trigger`);
      parseCron(t.cron);
      if (typeof t.jitter === "string" && t.jitter) parseDuration(t.jitter);
      continue;
    }
    if (typeof t.event !== "string")
      throw new Error(`executor: function "${config.id}" has a trigger without an event name`);
    if (t.expression) compileExpression(t.expression);
  }
  for (const c of config.cancel ?? []) {
    if (c.if) compileExpression(c.if);
    if (c.timeout && !isIsoDate(c.timeout)) parseDuration(c.timeout);
  }
}

/** Validate and record the synced app's functions; returns the records this process serves. */
export async function registerFunctions(ctx: ExecutorContext, app: SyncedApp): Promise<FunctionRecord[]> {
  for (const config of app.functions) validateFunctionConfig(config);
  const records: FunctionRecord[] = app.functions.map((config) => ({
    id: config.id,
    appId: app.appId,
    name: config.name ?? config.id,
    config,
  }));
  await ctx.store.transaction(async (tx) => {
    const removed = (await tx.listFunctions()).filter(
      (f) => f.appId === app.appId && !records.some((r) => r.id === f.id),
    );
    await tx.replaceFunctions(app.appId, records);
    // one cron item per (function, cron trigger); triggers that changed or went away lose theirs
    const cronItems = cronItemsOf(records, ctx.now());
    await tx.deleteCronItems(
      [...removed.map((f) => f.id), ...records.map((r) => r.id)],
      cronItems.map((i) => i.dedupeKey),
    );
    for (const item of cronItems) await tx.enqueue(item);
    // runs of functions the app no longer has would wait forever: end them, loudly
    for (const run of await tx.activeRunsOf(removed.map((f) => f.id))) {
      const locked = await tx.lockRun(run.id);
      if (locked && isActiveStatus(locked.status)) {
        await failRun(ctx, tx, locked, {
          name: "FunctionRemovedError",
          message: `executor: function "${run.functionId}" is no longer part of app "${app.appId}"`,
        });
      }
    }
  });
  return records;
}
