import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import autocannon from "autocannon";

export const ROOT = path.resolve(import.meta.dirname, "..");

export function spawnAndWait(
  file: string,
  env: Record<string, string>,
  pattern: RegExp,
): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(ROOT, "node_modules/.bin/tsx"), [file], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const on = (d: Buffer) => {
      out += d;
      const m = pattern.exec(out);
      if (m) resolve({ child, match: m });
    };
    child.stdout!.on("data", on);
    child.stderr!.on("data", on);
    child.on("exit", (c) => reject(new Error(`${file} exited ${c}: ${out}`)));
  });
}

export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export async function load(opts: autocannon.Options): Promise<Figures> {
  const r = await autocannon({ connections: 20, duration: 8, ...opts });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

/**
 * Several loads measured in turns (`rounds` rounds of `seconds` each, every load once per round), so that a
 * change of load on a shared machine falls on every row alike and the ratios between them stay meaningful.
 * req/s is the mean of the rounds, p50 their median, p99 their highest.
 */
export async function loadInterleaved(
  loads: autocannon.Options[],
  opts: { rounds?: number; seconds?: number } = {},
): Promise<Figures[]> {
  const rounds = opts.rounds ?? 4;
  const per: Figures[][] = loads.map(() => []);
  for (let r = 0; r < rounds; r++)
    for (let i = 0; i < loads.length; i++) per[i]!.push(await load({ ...loads[i]!, duration: opts.seconds ?? 2 }));
  return per.map((fs) => {
    const p50s = fs.map((f) => f.p50).sort((a, b) => a - b);
    return {
      rps: fs.reduce((a, f) => a + f.rps, 0) / fs.length,
      p50: p50s[Math.floor(p50s.length / 2)]!,
      p99: Math.max(...fs.map((f) => f.p99)),
      errors: fs.reduce((a, f) => a + f.errors, 0),
      non2xx: fs.reduce((a, f) => a + f.non2xx, 0),
    };
  });
}

export function row(name: string, f: Figures, base?: Figures): string {
  const ratio = base ? `  ${(f.rps / base.rps).toFixed(2)}x bare rps` : "";
  return `${name.padEnd(46)} ${f.rps.toFixed(0).padStart(7)} req/s  p50 ${f.p50.toFixed(1).padStart(6)} ms  p99 ${f.p99.toFixed(1).padStart(6)} ms${f.non2xx ? `  non2xx ${f.non2xx}` : ""}${ratio}`;
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/**
 * The real service in its own process on a fresh PostgreSQL database, with one enterprise account:
 * what every service benchmark starts from. `stop()` kills it and drops the database.
 */
export async function startBenchService(opts: { credits?: number; env?: Record<string, string>; ready?: RegExp } = {}) {
  const { createAccount } = await import("@cua/core/accounts/create-account");
  const { createTestDatabase, prepareTemplate } = await import("@cua/db/testing");
  await prepareTemplate();
  const db = await createTestDatabase();
  const deps = {
    db: db.db,
    clock: { now: () => new Date() },
    kek: Buffer.alloc(32, 1),
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  };
  const account = await createAccount(deps, { name: "bench", tier: "enterprise", credits: opts.credits ?? 0 });
  const api = await spawnAndWait(
    "apps/api/src/main.ts",
    {
      DATABASE_URL: db.url,
      PORT: "0",
      LOG_LEVEL: "error",
      SECRETS_KEY: "01".repeat(32),
      RATE_LIMIT_SCALE: "1000",
      DATA_DIR: "/tmp/cua-bench",
      ...opts.env,
    },
    // measure after the engine's warm-up (main.ts loads the OCR models right after listening); an
    // upstream engine has no warm-up: such benches pass `ready: /API listening on (http:\/\/\S+)/`
    opts.ready ?? /API listening on (http:\/\/\S+)[\s\S]*engine (?:ready|warm-up failed)/,
  );
  return {
    db,
    account,
    url: api.match[1]!,
    child: api.child,
    async stop() {
      api.child.kill("SIGTERM");
      await new Promise((r) => api.child.once("exit", r));
      await db.drop();
    },
  };
}

// ------------------------------------------------------------------------------------------------
// Issue 16's table: each suite reports the rows it measured; `npm run bench -- perf` runs the suites that
// measure them and prints the table once at the end (figure, baseline measured in the same run, target).

export interface TargetRow {
  /** the issue's row name */
  row: string;
  /** what was measured, formatted ("0.31x", "12.4 ms") */
  value: string;
  /** the baseline it was measured against in the same run, formatted; "" when the row is absolute */
  baseline: string;
  /** the target, formatted (">= 0.25x") */
  target: string;
  met: boolean;
}

const targetRows: TargetRow[] = [];

export function reportTarget(r: TargetRow): void {
  const i = targetRows.findIndex((t) => t.row === r.row);
  if (i >= 0) targetRows[i] = r;
  else targetRows.push(r);
}

export function printTargets(title: string): void {
  if (!targetRows.length) return;
  const w = Math.max(...targetRows.map((r) => r.row.length));
  console.log(`\n== ${title} ==`);
  for (const r of targetRows) {
    const base = r.baseline ? `  (baseline ${r.baseline})` : "";
    console.log(
      `${r.row.padEnd(w)}  ${r.value.padStart(9)}  target ${r.target.padEnd(9)} ${r.met ? "met" : "NOT MET"}${base}`,
    );
  }
}
