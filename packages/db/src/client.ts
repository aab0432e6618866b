// The database client factory: PostgreSQL when a URL is given, otherwise embedded PGlite under DATA_DIR.
// Same schema, same migrations (applied on open unless told not to).
import fs from "node:fs";
import { PrismaPg } from "@prisma/adapter-pg";
import { type Prisma, PrismaClient } from "./generated/client.ts";
import { applyMigrations } from "./migrate.ts";
import { embeddedDbDir, pgliteRunner } from "./sql-runner.ts";

export type Db = PrismaClient;
export type Tx = Prisma.TransactionClient;
/** Query helpers take either the client or a transaction first (midday's habit). */
export type DbOrTx = Db | Tx;

export interface OpenDbOptions {
  databaseUrl?: string;
  dataDir?: string;
  /** apply pending migrations on open (default true) */
  migrate?: boolean;
  poolSize?: number;
}

export interface DbHandle {
  db: Db;
  kind: "postgres" | "pglite";
  close(): Promise<void>;
}

export async function openDb(opts: OpenDbOptions): Promise<DbHandle> {
  if (opts.databaseUrl) {
    if (opts.migrate !== false) {
      const pg = (await import("pg")).default;
      const client = new pg.Client({ connectionString: opts.databaseUrl, connectionTimeoutMillis: 5000 });
      await client.connect();
      try {
        await applyMigrations({
          exec: async (sql) => {
            await client.query(sql);
          },
          query: async (sql, params) => (await client.query(sql, params as unknown[])).rows,
        });
      } finally {
        await client.end();
      }
    }
    const adapter = new PrismaPg({
      connectionString: opts.databaseUrl,
      max: opts.poolSize ?? 10,
      // a dead database answers within seconds (503 DB_UNAVAILABLE), never a hang
      connectionTimeoutMillis: 3000,
      idleTimeoutMillis: 30_000,
      query_timeout: 30_000,
    });
    const db = new PrismaClient({ adapter });
    return { db, kind: "postgres", close: () => db.$disconnect() };
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const { PrismaPGlite } = await import("pglite-prisma-adapter");
  const dir = embeddedDbDir(opts.dataDir ?? ".data");
  fs.mkdirSync(dir, { recursive: true });
  const pglite = new PGlite(dir);
  await pglite.waitReady;
  if (opts.migrate !== false) await applyMigrations(pgliteRunner(pglite));
  const db = new PrismaClient({ adapter: new PrismaPGlite(pglite) as any });
  return {
    db,
    kind: "pglite",
    close: async () => {
      await db.$disconnect();
      await pglite.close();
    },
  };
}

/** True when an error means the database could not be reached (maps to 503 DB_UNAVAILABLE). */
export function isDbUnavailable(e: unknown): boolean {
  const seen = new Set<unknown>();
  let cur: any = e;
  while (cur && typeof cur === "object" && !seen.has(cur)) {
    seen.add(cur);
    const code = String(cur.code ?? cur.errorCode ?? "");
    const msg = String(cur.message ?? "");
    if (
      [
        "ECONNREFUSED",
        "ECONNRESET",
        "ETIMEDOUT",
        "ENOTFOUND",
        "EHOSTUNREACH",
        "57P01",
        "57P03",
        "P1001",
        "P1017",
        "P2024",
      ].includes(code)
    )
      return true;
    if (cur.kind === "DatabaseNotReachable" || cur.cause?.kind === "DatabaseNotReachable") return true;
    // Prisma's interactive transactions over a saturated pool: no connection within maxWait, or the
    // transaction outlived its timeout while queued (either way rolled back: nothing was written).
    if (
      code === "P2028" &&
      /Unable to start a transaction in the given time|Transaction already closed|expired transaction/i.test(msg)
    )
      return true;
    if (
      /ECONNREFUSED|Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Can't reach database|Connection refused|the database system is (shutting down|starting up)|terminating connection/i.test(
        msg,
      )
    )
      return true;
    cur = cur.cause;
  }
  return false;
}
