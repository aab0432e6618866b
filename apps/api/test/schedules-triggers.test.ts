// Webhook and chain triggers through the real server (SPEC.md "Trigger", "States and transitions / Trigger",
// "Schedules and triggers", "Authentication" 6, "Limits"; DECISIONS.md "Schedules and triggers" and the
// Compatibility amendment). Webhook requests are signed here the way a sender signs them.
import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, REPO_ROOT, startTestServer, type TestServer } from "./helpers.ts";
import { testMachine, waitFor } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  acct = await s.account({ tier: "enterprise", credits: 1000 });
  machine = await testMachine(s, acct.test_key);
}, 120_000);
afterAll(() => s.stop());

const schedule = async (name: string, task = "work #steps=1") => {
  const r = await call(s.url, "POST", "/v1/schedules", {
    key: acct.test_key,
    body: { name, machine_id: machine, task_prompt: task, frequency: "daily" },
  });
  if (r.status !== 201) throw new Error(r.text);
  return r.body.id as string;
};
const addTrigger = (id: string, body: Record<string, unknown>, key = acct.test_key) =>
  call(s.url, "POST", `/v1/schedules/${id}/triggers`, { key, body });
const history = async (id: string) =>
  (await call(s.url, "GET", `/v1/schedules/${id}/runs`, { key: acct.test_key })).body.data as any[];

function sign(secret: string, body: string | Buffer, t = Math.floor(Date.now() / 1000)): string {
  const v1 = createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");
  return `t=${t},v1=${v1}`;
}
const fire = (url: string, body: string | Buffer, headers: Record<string, string>) =>
  call(url, "POST", "", { raw: body, headers: { "Content-Type": "application/json", ...headers } });

describe("webhook triggers (SPEC Authentication 6: Service-Signature over t. + raw body)", () => {
  let sched: string;
  let url: string;
  let secret: string;
  let triggerId: string;

  beforeAll(async () => {
    sched = await schedule("hooked");
    const r = await addTrigger(sched, { kind: "webhook" });
    expect(r.status).toBe(201);
    url = r.body.webhook_url;
    secret = r.body.webhook_secret;
    triggerId = r.body.id;
  });

  it("creation answers webhook_url and the whsec_ secret once; reads never show the secret", async () => {
    expect(url).toMatch(new RegExp(`^${s.url}/v1/triggers/webhook/whk_[0-9a-f]{32}$`));
    expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(triggerId).toMatch(/^trg_[0-9a-f]{24}$/);
    const list = await call(s.url, "GET", `/v1/schedules/${sched}/triggers`, { key: acct.test_key });
    expect(list.body).toMatchObject({ object: "list", has_more: false });
    expect(list.body.data[0]).toMatchObject({
      id: triggerId,
      kind: "webhook",
      enabled: true,
      webhook_url: url,
      rate_limit_per_minute: 60,
      schedule_id: sched,
    });
    expect(list.text).not.toContain(secret);
    expect(list.body.data[0]).not.toHaveProperty("webhook_secret");
  });

  it("a signed body starts a run with the payload; the same body within 60 s is deduplicated", async () => {
    const body = JSON.stringify({ invoice: "INV-7" });
    const r = await fire(url, body, { "Service-Signature": sign(secret, body) });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-service-webhook-deduplicated")).toBe("false");
    expect(r.body).toMatchObject({ received: true, schedule_id: sched, deduplicated: false });
    expect(r.body.request_id).toBe(r.headers.get("x-service-request-id"));
    const run = (await call(s.url, "GET", `/v1/runs/${r.body.run_id}`, { key: acct.test_key })).body;
    expect(run.task).toContain("work #steps=1");
    expect(run.task).toContain('{"invoice":"INV-7"}');
    expect((await history(sched))[0]).toMatchObject({ trigger: "webhook", run_id: r.body.run_id });
    const again = await fire(url, body, { "Service-Signature": sign(secret, body) });
    expect(again.status).toBe(200);
    expect(again.headers.get("x-service-webhook-deduplicated")).toBe("true");
    expect(again.body).toMatchObject({ deduplicated: true, run_id: r.body.run_id });
    expect((await history(sched)).filter((h) => h.trigger === "webhook")).toHaveLength(1);
  });

  it("401 INVALID_SIGNATURE when the signature is missing, malformed, stale, tampered or made with another secret", async () => {
    const body = JSON.stringify({ n: Math.random() });
    const stale = Math.floor(Date.now() / 1000) - 301;
    const cases: Record<string, string>[] = [
      {},
      { "Service-Signature": "v1=abc" },
      { "Service-Signature": "t=now,v1=00" },
      { "Service-Signature": sign(secret, body, stale) },
      { "Service-Signature": sign(secret, `${body} `) },
      { "Service-Signature": sign(`whsec_${"0".repeat(64)}`, body) },
    ];
    for (const h of cases) envelope(await fire(url, body, h), 401, "INVALID_SIGNATURE");
  });

  it("any content type is signed as raw bytes; over 1,000,000 bytes is 413", async () => {
    const text = "plain text payload";
    const r = await call(url, "POST", "", {
      raw: text,
      headers: { "Content-Type": "text/plain", "Service-Signature": sign(secret, text) },
    });
    expect(r.status).toBe(200);
    const big = Buffer.alloc(1_000_001, 97);
    envelope(
      await call(url, "POST", "", {
        raw: big,
        headers: { "Content-Type": "text/plain", "Service-Signature": sign(secret, big) },
      }),
      413,
      "PAYLOAD_TOO_LARGE",
    );
    const ok = Buffer.alloc(1_000_000, 98);
    expect(
      (
        await call(url, "POST", "", {
          raw: ok,
          headers: { "Content-Type": "text/plain", "Service-Signature": sign(secret, ok) },
        })
      ).status,
    ).toBe(200);
  });

  it("rate_limit_per_minute: deliveries beyond it in a minute are 429", async () => {
    const id = await schedule("limited");
    const t = (await addTrigger(id, { kind: "webhook", rate_limit_per_minute: 2 })).body;
    for (let i = 0; i < 2; i++) {
      const b = `{"i":${i}}`;
      expect((await fire(t.webhook_url, b, { "Service-Signature": sign(t.webhook_secret, b) })).status).toBe(200);
    }
    const e = envelope(
      await fire(t.webhook_url, '{"i":3}', { "Service-Signature": sign(t.webhook_secret, '{"i":3}') }),
      429,
      "RATE_LIMIT_EXCEEDED",
    );
    expect(e.retryable).toBe(true);
    envelope(await addTrigger(id, { kind: "webhook", rate_limit_per_minute: 601 }), 422, "VALIDATION_ERROR");
  });

  it("disabled: 410 WEBHOOK_DISABLED; enabled again it fires", async () => {
    const path = `/v1/schedules/${sched}/triggers/${triggerId}`;
    const d = await call(s.url, "PATCH", path, { key: acct.test_key, body: { enabled: false } });
    expect(d.body.enabled).toBe(false);
    const b = '{"x":"disabled"}';
    envelope(await fire(url, b, { "Service-Signature": sign(secret, b) }), 410, "WEBHOOK_DISABLED");
    await call(s.url, "PATCH", path, { key: acct.test_key, body: { enabled: true } });
    expect((await fire(url, b, { "Service-Signature": sign(secret, b) })).status).toBe(200);
  });

  it("deleting and recreating rotates the URL and the secret; the old ones stop working", async () => {
    const id = await schedule("rotated");
    const a = (await addTrigger(id, { kind: "webhook" })).body;
    const del = await call(s.url, "DELETE", `/v1/schedules/${id}/triggers/${a.id}`, { key: acct.test_key });
    expect(del.body).toMatchObject({ id: a.id, deleted: true });
    const b = (await addTrigger(id, { kind: "webhook" })).body;
    expect(b.webhook_url).not.toBe(a.webhook_url);
    expect(b.webhook_secret).not.toBe(a.webhook_secret);
    const body = '{"r":1}';
    envelope(
      await fire(a.webhook_url, body, { "Service-Signature": sign(a.webhook_secret, body) }),
      404,
      "TRIGGER_NOT_FOUND",
    );
    envelope(
      await fire(b.webhook_url, body, { "Service-Signature": sign(a.webhook_secret, body) }),
      401,
      "INVALID_SIGNATURE",
    );
    expect((await fire(b.webhook_url, body, { "Service-Signature": sign(b.webhook_secret, body) })).status).toBe(200);
  });

  it("the secret is in the create answer and its exact idempotent replay only (SPEC Trigger)", async () => {
    const id = await schedule("replayed");
    const headers = { "Idempotency-Key": `trg-${id}` };
    const a = await call(s.url, "POST", `/v1/schedules/${id}/triggers`, {
      key: acct.test_key,
      body: { kind: "webhook" },
      headers,
    });
    const b = await call(s.url, "POST", `/v1/schedules/${id}/triggers`, {
      key: acct.test_key,
      body: { kind: "webhook" },
      headers,
    });
    expect(b.headers.get("x-service-idempotent-replay")).toBe("true");
    expect(b.body.webhook_secret).toBe(a.body.webhook_secret);
    const list = await call(s.url, "GET", `/v1/schedules/${id}/triggers`, { key: acct.test_key });
    expect(list.body.data).toHaveLength(1);
  });

  it("identical bodies sent at once start one run; the others are deduplicated", async () => {
    const id = await schedule("burst");
    const t = (await addTrigger(id, { kind: "webhook" })).body;
    const body = '{"burst":true}';
    const sig = sign(t.webhook_secret, body);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => fire(t.webhook_url, body, { "Service-Signature": sig })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(answers.filter((a) => a.body.deduplicated === false)).toHaveLength(1);
    expect(new Set(answers.map((a) => a.body.run_id)).size).toBe(1);
    expect((await history(id)).filter((h) => h.trigger === "webhook")).toHaveLength(1);
  });

  it("a JSON body is inspected like every JSON body: too deep is 422, not JSON is 400 MALFORMED_JSON", async () => {
    const deep = `${"[".repeat(70)}${"]".repeat(70)}`;
    envelope(await fire(url, deep, { "Service-Signature": sign(secret, deep) }), 422, "VALIDATION_ERROR");
    envelope(await fire(url, "{nope", { "Service-Signature": sign(secret, "{nope") }), 400, "MALFORMED_JSON");
  });

  it("trigger ids: 400 INVALID_TRIGGER_ID, 404 TRIGGER_NOT_FOUND; triggers:write is required", async () => {
    envelope(
      await call(s.url, "DELETE", `/v1/schedules/${sched}/triggers/nope`, { key: acct.test_key }),
      400,
      "INVALID_TRIGGER_ID",
    );
    envelope(
      await call(s.url, "DELETE", `/v1/schedules/${sched}/triggers/trg_00112233445566778899aabb`, {
        key: acct.test_key,
      }),
      404,
      "TRIGGER_NOT_FOUND",
    );
    const k = await call(s.url, "POST", "/v1/keys", { key: acct.test_key, body: { scopes: ["schedules:write"] } });
    const e = envelope(await addTrigger(sched, { kind: "webhook" }, k.body.key), 403, "INSUFFICIENT_SCOPE");
    expect(e.required_scope).toBe("triggers:write");
  });
});

describe("docs/schedules.md signing examples (bash, Python, TypeScript) are accepted as written", () => {
  it("each snippet's request is a 200 received answer", async () => {
    const id = await schedule("docs");
    const t = (await addTrigger(id, { kind: "webhook" })).body;
    const md = fs.readFileSync(path.join(REPO_ROOT, "docs/schedules.md"), "utf8");
    const block = (lang: string) => new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(md)![1]!;
    const env = { ...process.env, SECRET: t.webhook_secret, URL: t.webhook_url };
    // asynchronously: the server answering them runs in this process
    const run = promisify(execFile);
    const outputs = await Promise.all([
      run("bash", ["-c", block("bash")], { env, encoding: "utf8" }),
      run("python3", ["-c", `import os\nSECRET = os.environ["SECRET"]\nURL = os.environ["URL"]\n${block("python")}`], {
        env,
        encoding: "utf8",
      }),
      run(process.execPath, ["--input-type=module", "-e", `const { SECRET, URL } = process.env;\n${block("ts")}`], {
        env,
        encoding: "utf8",
      }),
    ]).then((r) => r.map((x) => x.stdout));
    for (const out of outputs) expect(out.replace(/\s/g, "")).toContain('"received":true');
    expect(outputs[2]).toMatch(/^200 (true|false) /);
  });
});

describe("chain triggers (DECISIONS: on_complete|on_failure|on_any, pass_output, no cycles, 5 levels)", () => {
  beforeAll(async () => {
    // a fresh account: a test key holds at most 10 schedules (SPEC Limits)
    acct = await s.account({ tier: "enterprise", credits: 1000 });
    machine = await testMachine(s, acct.test_key);
  });
  it("a chain of three schedules fires in order, passing the output; on_failure does not fire on success", async () => {
    const a = await schedule("A");
    const b = await schedule("B");
    const c = await schedule("C");
    const onFail = await schedule("F");
    const ab = await addTrigger(b, { kind: "chain", source_schedule_id: a });
    expect(ab.status).toBe(201);
    expect(ab.body).toMatchObject({
      kind: "chain",
      source_schedule_id: a,
      event: "on_complete",
      webhook_url: null,
      pass_output: true,
    });
    expect(
      (await addTrigger(c, { kind: "chain", source_schedule_id: b, event: "on_any", pass_output: false })).status,
    ).toBe(201);
    expect((await addTrigger(onFail, { kind: "chain", source_schedule_id: a, event: "on_failure" })).status).toBe(201);
    await call(s.url, "POST", `/v1/schedules/${a}/run`, { key: acct.test_key });
    const hc = await waitFor(
      "C fired",
      () => history(c),
      (h) => h.length > 0 && h[0].run_id !== null,
      60_000,
    );
    const hb = await history(b);
    const ha = await history(a);
    expect(hb[0].trigger).toBe("triggered");
    expect(hc[0].trigger).toBe("triggered");
    expect(Date.parse(ha[0].executed_at)).toBeLessThanOrEqual(Date.parse(hb[0].executed_at));
    expect(Date.parse(hb[0].executed_at)).toBeLessThanOrEqual(Date.parse(hc[0].executed_at));
    const runB = (await call(s.url, "GET", `/v1/runs/${hb[0].run_id}`, { key: acct.test_key })).body;
    expect(runB.task).toContain("Output of the previous run");
    const runC = (await call(s.url, "GET", `/v1/runs/${hc[0].run_id}`, { key: acct.test_key })).body;
    expect(runC.task).toBe("work #steps=1"); // pass_output: false
    expect(await history(onFail)).toHaveLength(0);
  });

  it("refuses cycles (422), unowned sources (404 SOURCE_SCHEDULE_NOT_FOUND) and chains deeper than 5 levels", async () => {
    const x = await schedule("X");
    const y = await schedule("Y");
    expect((await addTrigger(y, { kind: "chain", source_schedule_id: x })).status).toBe(201);
    const e = envelope(await addTrigger(x, { kind: "chain", source_schedule_id: y }), 422, "VALIDATION_ERROR");
    expect(e.message).toContain("cycle");
    envelope(await addTrigger(x, { kind: "chain", source_schedule_id: x }), 422, "VALIDATION_ERROR");
    const other = await s.account();
    const om = await testMachine(s, other.test_key);
    const foreign = await call(s.url, "POST", "/v1/schedules", {
      key: other.test_key,
      body: { name: "o", machine_id: om, task_prompt: "t", frequency: "daily" },
    });
    envelope(
      await addTrigger(x, { kind: "chain", source_schedule_id: foreign.body.id }),
      404,
      "SOURCE_SCHEDULE_NOT_FOUND",
    );
    envelope(await addTrigger(x, { kind: "chain" }), 422, "VALIDATION_ERROR");
    // a fresh account: s0 -> s1 -> ... -> s5 is 5 levels; a sixth is refused
    const d = await s.account();
    const dm = await testMachine(s, d.test_key);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++)
      ids.push(
        (
          await call(s.url, "POST", "/v1/schedules", {
            key: d.test_key,
            body: { name: `d${i}`, machine_id: dm, task_prompt: "t", frequency: "daily" },
          })
        ).body.id,
      );
    for (let i = 1; i <= 5; i++)
      expect((await addTrigger(ids[i]!, { kind: "chain", source_schedule_id: ids[i - 1] }, d.test_key)).status).toBe(
        201,
      );
    const deep = envelope(
      await addTrigger(ids[6]!, { kind: "chain", source_schedule_id: ids[5] }, d.test_key),
      422,
      "VALIDATION_ERROR",
    );
    expect(deep.message).toContain("5");
  });
});
