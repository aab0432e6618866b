// Issue 10 "Done when": a fast-check fuzz over every operation of /openapi.json against the real server, with
// 0 answers outside the SPEC envelope (SPEC.md "Errors", DECISIONS.md "Error envelope and statuses") and 0 5xx.
// The document is read from the running server, so the fuzz follows whatever operations it describes.
// A fixed seed and 2,500 requests keep it CI-sized; `npm run bench -- fuzz` runs a bigger one.
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { operationsOf, requestArbitrary, runFuzz } from "./fuzz/openapi-fuzz.ts";
import { call, startTestServer, type TestServer } from "./helpers.ts";
import { testMachine } from "./runs-helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none", RATE_LIMIT_SCALE: "1000" });
});
afterAll(() => s.stop());

it("2,500 hostile requests over every operation: 0 answers outside the envelope, 0 5xx, 0 unanswered", async () => {
  const acct = await s.account({ credits: 50 });
  const doc = (await call(s.url, "GET", "/openapi.json")).body;
  const ops = operationsOf(doc);
  expect(ops.length).toBeGreaterThan(30);
  // real ids to aim at, so requests also reach the code behind the id checks
  const machine = await testMachine(s, acct.test_key);
  const run = await call(s.url, "POST", "/v1/runs", {
    key: acct.test_key,
    body: { machine_id: machine, task: "#human" },
  });
  const session = await call(s.url, "POST", "/v1/sessions", { key: acct.test_key, body: {} });
  const ids = {
    id: [machine, run.body?.id].filter(Boolean),
    session_id: [session.body?.id ?? session.body?.session_id].filter(Boolean),
    provider: ["anthropic", "openai"],
    op: ["navigate", "click", "read", "write", "list", "dom"],
  };
  const reqs = fc.sample(requestArbitrary(ops, { keys: { live: acct.live_key, test: acct.test_key }, ids }), {
    seed: 20261125,
    numRuns: 2500,
  });
  const totals = await runFuzz(s.url, reqs, 6);
  const covered = new Set(reqs.map((r) => r.op));
  expect(covered.size).toBe(ops.length); // every operation was exercised
  console.log(`fuzz answers per status: ${JSON.stringify(totals.byStatus)}; unsendable: ${totals.unsendable}`);
  if (totals.problems.length) console.error(JSON.stringify(totals.problems.slice(0, 20), null, 2));
  expect({ fiveXX: totals.fiveXX, outsideEnvelope: totals.outsideEnvelope, noAnswer: totals.noAnswer }).toEqual({
    fiveXX: 0,
    outsideEnvelope: 0,
    noAnswer: 0,
  });
  expect(totals.sent).toBe(2500);
  // and the service still answers normally afterwards
  expect((await call(s.url, "GET", "/v1/health")).status).toBe(200);
}, 120_000);
