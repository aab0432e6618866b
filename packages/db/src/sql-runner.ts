// A plain SQL connection (pg or embedded PGlite) for migrations and test database management.
import path from "node:path";
import type { SqlRunner } from "./migrate.ts";

export interface ClosableSqlRunner extends SqlRunner {
  close(): Promise<void>;
}

export function embeddedDbDir(dataDir: string): string {
  return path.join(path.resolve(dataDir), "pglite");
}

export async function openSqlRunner(opts: { databaseUrl?: string; dataDir?: string }): Promise<ClosableSqlRunner> {
  if (opts.databaseUrl) {
    const pg = (await import("pg")).default;
    const client = new pg.Client({ connectionString: opts.databaseUrl });
    await client.connect();
    return {
      exec: async (sql) => {
        await client.query(sql);
      },
      query: async (sql, params) => (await client.query(sql, params as unknown[])).rows,
      close: () => client.end(),
    };
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const db = new PGlite(embeddedDbDir(opts.dataDir ?? ".data"));
  return pgliteRunner(db);
}

export function pgliteRunner(db: import("@electric-sql/pglite").PGlite): ClosableSqlRunner {
  return {
    exec: async (sql) => {
      await db.exec(sql);
    },
    query: async (sql, params) => (await db.query(sql, params as unknown[])).rows as any[],
    close: () => db.close(),
  };
}
