import type { CoreDeps } from "../deps.ts";

/** The database-only part of the machine service's deps (reads need nothing else). */
export type MachineDeps0 = Pick<CoreDeps, "db" | "clock" | "logger">;
