// Console procedures not yet generated from the operation registry (being migrated group by group).
import { consoleMachinesRouter } from "./machines.ts";
import { consoleProviderKeysRouter } from "./provider-keys.ts";
import { consoleRunsRouter } from "./runs.ts";
import { consoleUsageRouter } from "./usage.ts";
import { consoleWalletRouter } from "./wallet.ts";

export const legacyConsoleRouters = {
  wallet: consoleWalletRouter,
  usage: consoleUsageRouter,
  providerKeys: consoleProviderKeysRouter,
  machines: consoleMachinesRouter,
  runs: consoleRunsRouter,
};
