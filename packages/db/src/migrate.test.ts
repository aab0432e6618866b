import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { applyMigrations, listMigrationFiles, pendingMigrations } from "./migrate.ts";
import { createEmptyDatabase } from "./testing.ts";

// Issue 2 "Database": prisma/migrations layout and the _prisma_migrations format, on real PostgreSQL.
describe("applyMigrations", () => {
  const dbs: { drop(): Promise<void> }[] = [];
  afterAll(async () => {
    for (const d of dbs) await d.drop();
  });

  it("applies every migration once, records Prisma's format, and is a no-op the second time", async () => {
    const d = await createEmptyDatabase();
    dbs.push(d);
    const c = new pg.Client({ connectionString: d.url });
    await c.connect();
    const runner = {
      exec: async (s: string) => void (await c.query(s)),
      query: async (s: string, p?: unknown[]) => (await c.query(s, p as unknown[])).rows,
    };
    const files = listMigrationFiles();
    expect(files.length).toBeGreaterThan(0);
    expect(await pendingMigrations(runner)).toEqual(files.map((f) => f.name));
    const first = await applyMigrations(runner);
    expect(first.applied).toEqual(files.map((f) => f.name));
    const rows = (
      await c.query(
        'SELECT migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name',
      )
    ).rows;
    expect(rows.map((r) => r.migration_name)).toEqual(files.map((f) => f.name));
    expect(rows.map((r) => r.checksum)).toEqual(files.map((f) => f.checksum));
    expect(rows.every((r) => r.finished_at instanceof Date && r.applied_steps_count === 1)).toBe(true);
    expect((await applyMigrations(runner)).applied).toEqual([]);
    expect(await pendingMigrations(runner)).toEqual([]);
    // a tampered history is refused, not silently accepted
    await c.query(`UPDATE "_prisma_migrations" SET checksum = 'x' WHERE migration_name = $1`, [files[0]!.name]);
    await expect(applyMigrations(runner)).rejects.toThrow(/checksum differs/);
    await c.end();
  });
});
