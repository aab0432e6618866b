// Round-trip counter for benchmarks (issue 16): loaded into the measured service with
//   NODE_OPTIONS="--import <this file>" PG_COUNT_FILE=<path>
// it counts every statement sent through `pg` (Prisma's driver adapter and the service's own pools alike,
// BEGIN and COMMIT included) and, on SIGUSR2, writes the running totals ({ total, byStatement }) to
// PG_COUNT_FILE; a benchmark subtracts two readings. Only a process that sent statements writes (tsx's
// launcher process loads this file too). PG_COUNT_DETAIL=1 keys the counts by the calling source
// line as well (a stack trace per statement: for profiles, not for timings).
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const file = process.env.PG_COUNT_FILE;
if (file) {
  const require = createRequire(path.join(process.cwd(), "package.json"));
  const pg = require("pg");
  const detail = process.env.PG_COUNT_DETAIL === "1";
  const counts = new Map();
  let total = 0;
  const shape = (text) => text.replace(/\s+/g, " ").trim().slice(0, 100);
  const caller = () => {
    const lines = (new Error().stack ?? "").split("\n").slice(3);
    const hit = lines.find((l) => /\/(packages|inngest|apps)\//.test(l) && !/\/packages\/db\/|node_modules/.test(l));
    const m = hit && /\/((?:packages|inngest|apps)\/[^:)]+):(\d+)/.exec(hit);
    return m ? `${m[1]}:${m[2]}` : "-";
  };
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, values, cb) {
    total++;
    const text = typeof config === "string" ? config : (config?.text ?? "?");
    const key = detail ? `${caller()} | ${shape(text)}` : shape(text);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return original.call(this, config, values, cb);
  };
  process.on("SIGUSR2", () => {
    if (total === 0) return;
    const tmp = `${file}.${process.pid}`;
    fs.writeFileSync(tmp, JSON.stringify({ total, byStatement: Object.fromEntries(counts) }));
    fs.renameSync(tmp, file);
  });
}
