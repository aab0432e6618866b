// Applies prisma/migrations/<ts>_<name>/migration.sql files in order, recording them in
// `_prisma_migrations` in Prisma's own format (sha256 checksum of the file), so the native
// `prisma migrate deploy` can take over wherever its engine exists. No schema engine needed.
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../prisma/migrations");

/** The least a SQL connection must do: run a multi-statement script, and a parameterised query. */
export interface SqlRunner {
  exec(sql: string): Promise<void>;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export function listMigrationFiles(dir = MIGRATIONS_DIR): MigrationFile[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(dir, d.name, "migration.sql")))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

/** A digest of every migration, used to name test template databases. */
export function migrationsDigest(dir = MIGRATIONS_DIR): string {
  const h = createHash("sha256");
  for (const m of listMigrationFiles(dir)) h.update(`${m.name}:${m.checksum}\n`);
  return h.digest("hex").slice(0, 16);
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

// Any constant: serialises concurrent deploys of several processes on one database.
const LOCK_ID = 72707369;

export interface DeployResult {
  applied: string[];
}

export async function applyMigrations(db: SqlRunner, dir = MIGRATIONS_DIR): Promise<DeployResult> {
  const files = listMigrationFiles(dir);
  await db.exec(CREATE_TABLE);
  await db.query("SELECT pg_advisory_lock($1)", [LOCK_ID]);
  try {
    const rows = await db.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
    );
    const done = new Map(rows.map((r) => [r.migration_name, r]));
    const applied: string[] = [];
    for (const m of files) {
      const prev = done.get(m.name);
      if (prev?.finished_at) {
        if (prev.checksum !== m.checksum) {
          throw new Error(`migration ${m.name} was edited after it was applied (checksum differs)`);
        }
        continue;
      }
      if (prev && !prev.finished_at) throw new Error(`migration ${m.name} failed earlier; resolve it by hand`);
      await db.exec("BEGIN");
      try {
        await db.exec(m.sql);
        await db.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), m.checksum, m.name],
        );
        await db.exec("COMMIT");
      } catch (e) {
        await db.exec("ROLLBACK");
        throw new Error(`migration ${m.name} failed: ${(e as Error).message}`);
      }
      applied.push(m.name);
    }
    for (const name of done.keys()) {
      if (!files.some((f) => f.name === name)) throw new Error(`database has migration ${name} that is not in ${dir}`);
    }
    return { applied };
  } finally {
    await db.query("SELECT pg_advisory_unlock($1)", [LOCK_ID]);
  }
}

export async function pendingMigrations(db: SqlRunner, dir = MIGRATIONS_DIR): Promise<string[]> {
  await db.exec(CREATE_TABLE);
  const rows = await db.query<{ migration_name: string }>(
    `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  );
  const have = new Set(rows.map((r) => r.migration_name));
  return listMigrationFiles(dir)
    .map((m) => m.name)
    .filter((n) => !have.has(n));
}
