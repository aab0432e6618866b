// The operator console's procedures, served over /trpc only (no OpenAPI meta: never part of /v1).
import { router } from "../../trpc/init.ts";
import { consoleAuthRouter } from "./auth.ts";
import { consoleKeysRouter } from "./keys.ts";
import { consoleMachinesRouter } from "./machines.ts";
import { consoleProviderKeysRouter } from "./provider-keys.ts";
import { consoleRunsRouter } from "./runs.ts";
import { consoleUsageRouter } from "./usage.ts";
import { consoleWalletRouter } from "./wallet.ts";

export const consoleRouter = router({
  auth: consoleAuthRouter,
  wallet: consoleWalletRouter,
  usage: consoleUsageRouter,
  keys: consoleKeysRouter,
  providerKeys: consoleProviderKeysRouter,
  machines: consoleMachinesRouter,
  runs: consoleRunsRouter,
});
