import { defineConfig } from "prisma/config";

// Only `prisma generate` uses this file; migrations run through scripts/migrate-cli.ts
// (the native schema engine cannot be installed here, see STACK-NOTES.md).
export default defineConfig({
  schema: "prisma/schema",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres" },
});
