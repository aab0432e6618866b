// Starts the service on its configuration (embedded defaults when nothing is set).
import { createAccount } from "@cua/core/accounts/create-account";
import { createApp } from "./app.ts";
import { loadEnv, useEnvSnapshot } from "./env.ts";

async function main() {
  useEnvSnapshot();
  let env: ReturnType<typeof loadEnv>;
  try {
    env = loadEnv();
  } catch (e) {
    console.error((e as Error).message);
    process.exit(2);
  }
  const app = await createApp(env);
  if (app.deps.dbKind === "pglite" && (await app.deps.db.account.count()) === 0) {
    const created = await createAccount(app.deps, {
      name: "Default",
      tier: "enterprise",
      credits: env.FIRST_RUN_CREDITS,
    });
    console.log(
      [
        "",
        "First run: created the default account (shown once; keep it safe).",
        `  account_id        ${created.account_id}`,
        `  live API key      ${created.live_key}`,
        `  test API key      ${created.test_key}`,
        `  console email     ${created.console_email}`,
        `  console password  ${created.console_password}`,
        `  wallet            ${env.FIRST_RUN_CREDITS} credits`,
        "",
      ].join("\n"),
    );
  }
  // the handlers are installed before the service says it listens: until process.on() is called, SIGTERM has
  // its default action and kills the process at once (a SIGTERM sent right after "API listening" did, with
  // the OCR warm-up starting in between; apps/api/test/embedded.test.ts)
  let closing = false;
  const stop = async (sig: string) => {
    if (closing) return;
    closing = true;
    console.log(`${sig}: shutting down`);
    await app.close();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  await app.server.listen({ port: env.PORT, host: env.HOST });
  const addr = app.server.server.address();
  const port = typeof addr === "object" && addr ? addr.port : env.PORT;
  console.log(`API listening on http://${env.HOST}:${port} (database: ${app.deps.dbKind}; docs at /docs)`);
  // load what the managed engine needs now (the local engine's OCR models, on their worker thread), so the
  // first live predict does not wait for them
  const managed = app.deps.engines.managed();
  managed.warmUp?.().then(
    (w) => console.log(`${managed.id} engine ready (OCR backend ${w.backend}, ${w.ms} ms)`),
    (e: unknown) => console.error(`${managed.id} engine warm-up failed: ${e instanceof Error ? e.message : String(e)}`),
  );
}

void main().catch((e) => {
  console.error("failed to start:", e instanceof Error ? e.message : e);
  process.exit(1);
});
