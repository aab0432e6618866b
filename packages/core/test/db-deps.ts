// Core dependencies over a fresh PostgreSQL database for one test file (the database is real; the
// clock is the wall clock; the logger collects error messages so a test can assert on them).

import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import type { CoreDeps } from "../src/deps.ts";

export async function coreDepsOnTestDatabase(): Promise<{ tdb: TestDatabase; deps: CoreDeps; errors: string[] }> {
  const tdb = await createTestDatabase();
  const errors: string[] = [];
  const deps: CoreDeps = {
    db: tdb.db,
    clock: { now: () => new Date() },
    kek: Buffer.alloc(32, 7),
    logger: { debug() {}, info() {}, warn() {}, error: (m: string) => void errors.push(m) },
  };
  return { tdb, deps, errors };
}
