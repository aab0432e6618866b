// Console procedures not yet generated from the operation registry (being migrated group by group).
import { consoleMachinesRouter } from "./machines.ts";

export const legacyConsoleRouters = {
  machines: consoleMachinesRouter,
};
