// Test databases: one migrated template per migrations digest, and a fresh clone of it per test file
// (trigger.dev's postgresTest habit). Real PostgreSQL only.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { type DbHandle, openDb } from "./client.ts";
import { applyMigrations, migrationsDigest } from "./migrate.ts";

export const TEST_PG_ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

const testDbName = () => `cua_test_${Math.floor(Date.now() / 1000)}_${randomBytes(5).toString("hex")}`;

export function templateName(): string {
  return `cua_template_${migrationsDigest()}`;
}

function urlFor(database: string): string {
  const u = new URL(TEST_PG_ADMIN_URL);
  u.pathname = `/${database}`;
  return u.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Called once from vitest's global setup: builds the template when the migrations changed, drops stale clones. */
export async function prepareTemplate(): Promise<void> {
  const name = templateName();
  await admin(async (c) => {
    await c.query("SELECT pg_advisory_lock(7270737)");
    try {
      // Drop clones left by crashed runs (older than 3 hours; concurrent runs keep theirs) and templates
      // of other migration histories that nobody is connected to.
      const all = await c.query<{ datname: string }>(
        "SELECT datname FROM pg_database WHERE (datname LIKE 'cua_test_%' OR datname LIKE 'cua_template_%') AND datname <> $1",
        [name],
      );
      const cutoff = Math.floor(Date.now() / 1000) - 3 * 3600;
      for (const { datname } of all.rows) {
        const born = /^cua_test_(\d+)_/.exec(datname)?.[1];
        if (datname.startsWith("cua_test_") && born && Number(born) > cutoff) continue;
        try {
          await c.query(`UPDATE pg_database SET datistemplate = false WHERE datname = $1`, [datname]);
          await c.query(`DROP DATABASE IF EXISTS "${datname}"`);
        } catch {
          // in use by a concurrent run: leave it
        }
      }
      const exists = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
      if (exists.rowCount) return;
      await c.query(`CREATE DATABASE "${name}"`);
      const t = new pg.Client({ connectionString: urlFor(name) });
      await t.connect();
      try {
        await applyMigrations({
          exec: async (sql) => {
            await t.query(sql);
          },
          query: async (sql, params) => (await t.query(sql, params as unknown[])).rows,
        });
      } finally {
        await t.end();
      }
      await c.query(`UPDATE pg_database SET datistemplate = true WHERE datname = $1`, [name]);
    } finally {
      await c.query("SELECT pg_advisory_unlock(7270737)");
    }
  });
}

export interface TestDatabase extends DbHandle {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh, migrated database cloned from the template. Call drop() in afterAll. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = testDbName();
  await admin((c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${templateName()}"`));
  const url = urlFor(name);
  const h = await openDb({ databaseUrl: url, migrate: false, poolSize: 5 });
  return {
    ...h,
    url,
    name,
    drop: async () => {
      await h.close();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}

/** An empty database URL (not cloned), for tests that run migrations themselves. */
export async function createEmptyDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = testDbName();
  await admin((c) => c.query(`CREATE DATABASE "${name}"`));
  return {
    url: urlFor(name),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => {}),
  };
}
