// The service's process.env snapshot (useEnvSnapshot in apps/api/src/env.ts, docs/runs.md "Configuration"): the same values
// as the real environment, and child processes still get them (plus anything set afterwards). Run in a child
// process so that this test process keeps its own environment.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../..");

it("process.env after useEnvSnapshot: same values, a plain object, inherited by child processes", () => {
  const script = `
    import { execFileSync } from "node:child_process";
    import { useEnvSnapshot } from "./apps/api/src/env.ts";
    const before = { ...process.env };
    useEnvSnapshot();
    process.env.CUA_SET_AFTER = "later";
    const child = execFileSync("sh", ["-c", 'printf "%s|%s|%s" "$CUA_PROBE" "$CUA_SET_AFTER" "$CUA_EMPTY"'], { encoding: "utf8" });
    console.log(JSON.stringify({
      same: Object.entries(before).every(([k, v]) => process.env[k] === v),
      count: [Object.keys(before).length, Object.keys(process.env).length],
      plain: Object.getPrototypeOf(process.env) === Object.prototype,
      child,
    }));`;
  const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: ROOT,
    env: { ...process.env, CUA_PROBE: "a b\u00e9", CUA_EMPTY: "" },
    encoding: "utf8",
  });
  const r = JSON.parse(out.trim().split("\n").at(-1)!);
  expect(r.same).toBe(true);
  expect(r.count[1]).toBe(r.count[0] + 1); // the one set afterwards
  expect(r.plain).toBe(true);
  expect(r.child).toBe("a b\u00e9|later|");
});
