// Issue 4 "Machines", test keys: mock machines (no processes, generated PNG, synthetic results, at most
// 5, ids mch_test_<hex>) through every machine endpoint, with the SPEC shapes, errors and check order.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let other: Awaited<ReturnType<TestServer["account"]>>;
let id: string;

const PNG_SIG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

async function keyWith(scopes: string[], base = acct.test_key): Promise<string> {
  const r = await call(s.url, "POST", "/v1/keys", { key: base, body: { scopes } });
  expect(r.status).toBe(201);
  return r.body.key;
}

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  acct = await s.account();
  other = await s.account();
  const r = await call(s.url, "POST", "/v1/machines", {
    key: acct.test_key,
    body: { display_name: "mock one", os_type: "linux", desktop_enabled: true },
  });
  expect(r.status).toBe(201);
  id = r.body.machine.id;
});
afterAll(() => s.stop());

describe("provisioning and records (test key)", () => {
  it("returns 201 with a running mock machine, id mch_test_<hex>", async () => {
    const r = await call(s.url, "GET", `/v1/machines/${id}`, { key: acct.test_key });
    expect(r.status).toBe(200);
    expect(id).toMatch(/^mch_test_[0-9a-f]+$/);
    expect(r.body).toMatchObject({
      id,
      kind: "managed",
      is_test: true,
      display_name: "mock one",
      os_type: "linux",
      desktop_enabled: true,
      status: "running",
      provider: "mock",
      ttl_minutes: null,
      expires_at: null,
      screen: { width: 1280, height: 720 },
    });
    expect(r.headers.get("x-service-test-mode")).toBe("true");
  });

  it("validates the provision body: ttl_minutes 5..10080 (0 allowed), unknown fields 422", async () => {
    for (const ttl of [4, 10081, -1, 2.5]) {
      const r = await call(s.url, "POST", "/v1/machines", { key: acct.test_key, body: { ttl_minutes: ttl } });
      expect(envelope(r, 422, "VALIDATION_ERROR").details[0].path).toBe("body.ttl_minutes");
    }
    envelope(
      await call(s.url, "POST", "/v1/machines", { key: acct.test_key, body: { colour: "red" } }),
      422,
      "VALIDATION_ERROR",
    );
  });

  it("holds at most 5 mock machines per account: the 6th is 429 TEST_MACHINE_LIMIT, terminating frees a slot", async () => {
    const made: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await call(s.url, "POST", "/v1/machines", {
        key: acct.test_key,
        body: { display_name: `m${i}`, ttl_minutes: 5 },
      });
      expect(r.status).toBe(201);
      made.push(r.body.machine.id);
    }
    const sixth = await call(s.url, "POST", "/v1/machines", { key: acct.test_key, body: {} });
    envelope(sixth, 429, "TEST_MACHINE_LIMIT");
    const del = await call(s.url, "DELETE", `/v1/machines/${made[0]}`, { key: acct.test_key });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ machine_id: made[0], status: "terminated", terminated: true });
    envelope(await call(s.url, "DELETE", `/v1/machines/${made[0]}`, { key: acct.test_key }), 409, "INVALID_STATE");
    const again = await call(s.url, "POST", "/v1/machines", { key: acct.test_key, body: {} });
    expect(again.status).toBe(201);
    made.push(again.body.machine.id);
    for (const m of made.slice(1)) await call(s.url, "DELETE", `/v1/machines/${m}`, { key: acct.test_key });
  });

  it("is concurrency-safe: 8 parallel provisions with 4 free slots create exactly 4", async () => {
    const rs = await Promise.all(
      Array.from({ length: 8 }, () => call(s.url, "POST", "/v1/machines", { key: acct.test_key, body: {} })),
    );
    const ok = rs.filter((r) => r.status === 201);
    expect(ok).toHaveLength(4);
    for (const r of rs.filter((x) => x.status !== 201)) envelope(r, 429, "TEST_MACHINE_LIMIT");
    for (const r of ok) await call(s.url, "DELETE", `/v1/machines/${r.body.machine.id}`, { key: acct.test_key });
  });

  it("replays a provision with the same Idempotency-Key (one machine, same body)", async () => {
    const headers = { "Idempotency-Key": "prov-1" };
    const a = await call(s.url, "POST", "/v1/machines", {
      key: acct.test_key,
      body: { display_name: "idem" },
      headers,
    });
    const b = await call(s.url, "POST", "/v1/machines", {
      key: acct.test_key,
      body: { display_name: "idem" },
      headers,
    });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get("x-service-idempotent-replay")).toBe("true");
    expect(b.body.machine.id).toBe(a.body.machine.id);
    await call(s.url, "DELETE", `/v1/machines/${a.body.machine.id}`, { key: acct.test_key });
  });

  it("lists newest first with limit and cursor; limit outside 1..200 is 400 INVALID_LIMIT", async () => {
    const extra = await call(s.url, "POST", "/v1/machines", { key: acct.test_key, body: { display_name: "second" } });
    const p1 = await call(s.url, "GET", "/v1/machines?limit=1", { key: acct.test_key });
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({ object: "list", request_id: p1.headers.get("x-service-request-id") });
    expect(p1.body.data).toHaveLength(1);
    expect(p1.body.data[0].id).toBe(extra.body.machine.id);
    expect(p1.body.has_more).toBe(true);
    const p2 = await call(s.url, "GET", `/v1/machines?limit=1&cursor=${p1.body.next_cursor}`, { key: acct.test_key });
    expect(p2.body.data[0].id).toBe(id);
    expect(p2.body).toMatchObject({ has_more: false, next_cursor: null });
    const all = await call(s.url, "GET", "/v1/machines", { key: acct.test_key });
    expect(all.body.data.map((m: { id: string }) => m.id)).toEqual([extra.body.machine.id, id]);
    for (const l of ["0", "201", "x", "1.5"]) {
      const e = envelope(
        await call(s.url, "GET", `/v1/machines?limit=${l}`, { key: acct.test_key }),
        400,
        "INVALID_LIMIT",
      );
      expect(e).toMatchObject({ actual: l, min: 1, max: 200 });
    }
    envelope(await call(s.url, "GET", "/v1/machines?cursor=nope", { key: acct.test_key }), 400, "INVALID_CURSOR");
    envelope(
      await call(s.url, "GET", "/v1/machines?status=dancing", { key: acct.test_key }),
      400,
      "INVALID_STATUS_FILTER",
    );
    const terminated = await call(s.url, "GET", "/v1/machines?status=terminated", { key: acct.test_key });
    expect(terminated.body.data.length).toBeGreaterThan(0);
    await call(s.url, "DELETE", `/v1/machines/${extra.body.machine.id}`, { key: acct.test_key });
  });

  it("isolates accounts and modes: another account's machine and a test id on a live key are 404; bad ids 400", async () => {
    envelope(await call(s.url, "GET", `/v1/machines/${id}`, { key: other.test_key }), 404, "MACHINE_NOT_FOUND");
    envelope(await call(s.url, "GET", `/v1/machines/${id}`, { key: acct.live_key }), 404, "MACHINE_NOT_FOUND");
    envelope(await call(s.url, "DELETE", `/v1/machines/${id}`, { key: other.test_key }), 404, "MACHINE_NOT_FOUND");
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/actions`, {
        key: other.test_key,
        body: { command: "wait", parameters: { seconds: 0 } },
      }),
      404,
      "MACHINE_NOT_FOUND",
    );
    expect((await call(s.url, "GET", "/v1/machines", { key: other.test_key })).body.data).toEqual([]);
    for (const bad of ["abc", "mch_test_XYZ", "mch_live_00", "123e4567-e89b-12d3-a456-42661417400"]) {
      envelope(await call(s.url, "GET", `/v1/machines/${bad}`, { key: acct.test_key }), 400, "INVALID_MACHINE_ID");
    }
    envelope(
      await call(s.url, "GET", "/v1/machines/123e4567-e89b-12d3-a456-426614174000", { key: acct.test_key }),
      404,
      "MACHINE_NOT_FOUND",
    );
  });

  it("PATCH sets, extends and clears the TTL; an empty body is 400 EMPTY_UPDATE", async () => {
    const r = await call(s.url, "PATCH", `/v1/machines/${id}`, {
      key: acct.test_key,
      body: { ttl_minutes: 60, display_name: "renamed" },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ ttl_minutes: 60, display_name: "renamed" });
    const left = Date.parse(r.body.expires_at) - Date.now();
    expect(left).toBeGreaterThan(59 * 60_000);
    expect(left).toBeLessThanOrEqual(60 * 60_000 + 1000);
    const cleared = await call(s.url, "PATCH", `/v1/machines/${id}`, { key: acct.test_key, body: { ttl_minutes: 0 } });
    expect(cleared.body).toMatchObject({ ttl_minutes: null, expires_at: null });
    envelope(await call(s.url, "PATCH", `/v1/machines/${id}`, { key: acct.test_key, body: {} }), 400, "EMPTY_UPDATE");
    envelope(
      await call(s.url, "PATCH", `/v1/machines/${id}`, { key: acct.test_key, body: { ttl_minutes: 3 } }),
      422,
      "VALIDATION_ERROR",
    );
    envelope(
      await call(s.url, "PATCH", "/v1/machines/nope", { key: acct.test_key, body: {} }),
      400,
      "INVALID_MACHINE_ID",
    );
  });

  it("pricing and health", async () => {
    const p = await call(s.url, "GET", "/v1/machines/pricing", { key: acct.test_key });
    expect(p.body).toEqual({
      request_id: p.headers.get("x-service-request-id"),
      linux_running_per_hour: 5,
      windows_running_per_hour: 9,
      stopped_per_hour: 1,
      billing: "per_minute",
      provision_gate_credits: 20,
      snapshot_credits: 1,
    });
    const h = await call(s.url, "GET", "/v1/machines/health");
    expect(h.status).toBe(200);
    expect(h.body).toMatchObject({ status: "degraded", managed_provider: null, mock_provider: "mock" });
  });

  it("live keys without a managed provider: 503 UPSTREAM_UNAVAILABLE", async () => {
    envelope(await call(s.url, "POST", "/v1/machines", { key: acct.live_key, body: {} }), 503, "UPSTREAM_UNAVAILABLE");
  });
});

describe("screenshot and connection", () => {
  it("returns JSON with a base64 PNG, or raw PNG bytes with Accept: image/png", async () => {
    const j = await call(s.url, "GET", `/v1/machines/${id}/screenshot`, { key: acct.test_key });
    expect(j.status).toBe(200);
    expect(j.body).toMatchObject({ machine_id: id, mime_type: "image/png", width: 1280, height: 720 });
    expect(Buffer.from(j.body.image_b64, "base64").subarray(0, 4)).toEqual(PNG_SIG);
    const raw = await fetch(`${s.url}/v1/machines/${id}/screenshot`, {
      headers: { "X-API-Key": acct.test_key, Accept: "image/png" },
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get("content-type")).toBe("image/png");
    expect(raw.headers.get("x-ratelimit-limit")).not.toBeNull();
    const bytes = Buffer.from(await raw.arrayBuffer());
    expect(bytes.subarray(0, 4)).toEqual(PNG_SIG);
    envelope(
      await call(s.url, "GET", `/v1/machines/${id}/screenshot`, {
        key: other.test_key,
        headers: { Accept: "image/png" },
      }),
      404,
      "MACHINE_NOT_FOUND",
    );
    envelope(
      await call(s.url, "GET", "/v1/machines/bad/screenshot", { key: acct.test_key }),
      400,
      "INVALID_MACHINE_ID",
    );
    envelope(await call(s.url, "GET", `/v1/machines/${id}/screenshot`, {}), 401, "INVALID_API_KEY");
  });

  it("connection: VNC and websocket details with Cache-Control: no-store", async () => {
    const r = await call(s.url, "GET", `/v1/machines/${id}/connection`, { key: acct.test_key });
    expect(r.status).toBe(200);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.body).toMatchObject({ machine_id: id });
    expect(typeof r.body.vnc_password).toBe("string");
    expect(r.body.websocket_url).toMatch(/^wss?:\/\//);
  });
});

describe("actions, batches, browser, terminal, files", () => {
  it("runs every allowlisted command with its scope; an unknown command is 422", async () => {
    const cases: [string, Record<string, unknown>][] = [
      ["click", { x: 10, y: 10 }],
      ["double_click", { x: 10, y: 10 }],
      ["right_click", { x: 10, y: 10 }],
      ["move", { x: 20, y: 20 }],
      ["type", { text: "hello" }],
      ["key_press", { keys: ["enter"] }],
      ["key_combo", { keys: ["ctrl", "a"] }],
      ["scroll", { clicks: -3 }],
      ["drag", { x1: 1, y1: 1, x2: 50, y2: 50 }],
      ["wait", { seconds: 0 }],
      ["screenshot", {}],
      ["browser_navigate", { url: "https://example.com/" }],
      ["browser_click", { selector: "#submit" }],
      ["browser_type", { selector: "#q", text: "abc" }],
      ["browser_execute", { script: "1 + 1" }],
      ["terminal_execute", { command: "echo hi" }],
      ["file_write", { path: "a.txt", content: "A" }],
      ["file_read", { path: "a.txt" }],
    ];
    for (const [command, parameters] of cases) {
      const r = await call(s.url, "POST", `/v1/machines/${id}/actions`, {
        key: acct.test_key,
        body: { command, parameters },
      });
      expect(r.status, `${command}: ${r.text}`).toBe(200);
      expect(r.body).toMatchObject({ machine_id: id, command, success: true, error: null });
      expect(typeof r.body.duration_ms).toBe("number");
    }
    const term = await call(s.url, "POST", `/v1/machines/${id}/actions`, {
      key: acct.test_key,
      body: { command: "terminal_execute", parameters: { command: "echo hi" } },
    });
    expect(term.body.result.output).toContain("hi");
    const e = envelope(
      await call(s.url, "POST", `/v1/machines/${id}/actions`, {
        key: acct.test_key,
        body: { command: "format_disk", parameters: {} },
      }),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details[0].path).toBe("body.command");
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/actions`, {
        key: acct.test_key,
        body: { command: "click", parameters: { x: 5000, y: 1 } },
      }),
      422,
      "VALIDATION_ERROR",
    );
  });

  it("checks the per-command scope: 403 INSUFFICIENT_SCOPE with required_scope", async () => {
    const narrow = await keyWith(["machines:read", "actions:exec", "files:read"]);
    const ok = await call(s.url, "POST", `/v1/machines/${id}/actions`, {
      key: narrow,
      body: { command: "click", parameters: { x: 1, y: 1 } },
    });
    expect(ok.status).toBe(200);
    for (const [command, parameters, scope] of [
      ["terminal_execute", { command: "id" }, "terminal:exec"],
      ["file_write", { path: "x", content: "y" }, "files:write"],
      ["browser_execute", { script: "1" }, "browser:execute"],
    ] as const) {
      const e = envelope(
        await call(s.url, "POST", `/v1/machines/${id}/actions`, { key: narrow, body: { command, parameters } }),
        403,
        "INSUFFICIENT_SCOPE",
      );
      expect(e.required_scope).toBe(scope);
    }
    const b = envelope(
      await call(s.url, "POST", `/v1/machines/${id}/actions/batch`, {
        key: narrow,
        body: {
          steps: [
            { command: "click", parameters: { x: 1, y: 1 } },
            { command: "terminal_execute", parameters: { command: "id" } },
          ],
        },
      }),
      403,
      "INSUFFICIENT_SCOPE",
    );
    expect(b.required_scope).toBe("terminal:exec");
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/terminal`, { key: narrow, body: { command: "id" } }),
      403,
      "INSUFFICIENT_SCOPE",
    );
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/files/write`, {
        key: narrow,
        body: { parameters: { path: "x", content: "y" } },
      }),
      403,
      "INSUFFICIENT_SCOPE",
    );
    expect(
      (
        await call(s.url, "POST", `/v1/machines/${id}/files/exists`, {
          key: narrow,
          body: { parameters: { path: "x" } },
        })
      ).status,
    ).toBe(200);
    envelope(await call(s.url, "POST", `/v1/machines`, { key: narrow, body: {} }), 403, "INSUFFICIENT_SCOPE");
    envelope(await call(s.url, "GET", `/v1/machines/${id}/connection`, { key: narrow }), 403, "INSUFFICIENT_SCOPE");
    envelope(await call(s.url, "POST", `/v1/machines/${id}/snapshot`, { key: narrow }), 403, "INSUFFICIENT_SCOPE");
  });

  it("runs 50-step batches; 51 steps is 422; stop_on_error skips the rest", async () => {
    const steps = Array.from({ length: 50 }, (_, i) => ({ command: "click", parameters: { x: i, y: i } }));
    const r = await call(s.url, "POST", `/v1/machines/${id}/actions/batch`, {
      key: acct.test_key,
      body: { steps, stop_on_error: true },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ machine_id: id, completed_count: 50, failed_count: 0, aborted: false });
    expect(r.body.results).toHaveLength(50);
    expect(r.body.request_id).toBe(r.headers.get("x-service-request-id"));
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/actions/batch`, {
        key: acct.test_key,
        body: { steps: [...steps, steps[0]] },
      }),
      422,
      "VALIDATION_ERROR",
    );
    const bad = envelope(
      await call(s.url, "POST", `/v1/machines/${id}/actions/batch`, {
        key: acct.test_key,
        body: { steps: [steps[0], { command: "nope", parameters: {} }] },
      }),
      422,
      "VALIDATION_ERROR",
    );
    expect(bad.details[0].path).toBe("body.steps.1.command");
    const failing = [
      { command: "file_read", parameters: { path: "does-not-exist.txt" } },
      { command: "click", parameters: { x: 1, y: 1 } },
    ];
    const stop = await call(s.url, "POST", `/v1/machines/${id}/actions/batch`, {
      key: acct.test_key,
      body: { steps: failing, stop_on_error: true },
    });
    expect(stop.body).toMatchObject({ completed_count: 0, failed_count: 1, aborted: true });
    expect(stop.body.results.map((x: { status: string }) => x.status)).toEqual(["failed", "skipped"]);
    const go = await call(s.url, "POST", `/v1/machines/${id}/actions/batch`, {
      key: acct.test_key,
      body: { steps: failing, stop_on_error: false },
    });
    expect(go.body).toMatchObject({ completed_count: 1, failed_count: 1, aborted: false });
  });

  it("serves all sixteen browser ops; an unknown op is 400 UNKNOWN_BROWSER_OP", async () => {
    const ops: [string, Record<string, unknown>][] = [
      ["open", { url: "https://example.com/" }],
      ["navigate", { url: "https://example.com/a" }],
      ["click", { selector: "#submit" }],
      ["type", { selector: "#q", text: "hi" }],
      ["dom", {}],
      ["clickables", {}],
      ["state", {}],
      ["info", {}],
      ["scroll", { delta_y: 100 }],
      ["screenshot", {}],
      ["wait", { ms: 1 }],
      ["list-tabs", {}],
      ["open-tab", { url: "https://example.com/b" }],
      ["switch-tab", { tab_id: "tab-1" }],
      ["close-tab", {}],
      ["close", {}],
    ];
    expect(ops).toHaveLength(16);
    for (const [op, parameters] of ops) {
      const r = await call(s.url, "POST", `/v1/machines/${id}/browser/${op}`, {
        key: acct.test_key,
        body: { parameters },
      });
      expect(r.status, `${op}: ${r.text}`).toBe(200);
      expect(r.body).toMatchObject({ machine_id: id, op });
      expect(typeof r.body.success).toBe("boolean");
    }
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/browser/execute`, { key: acct.test_key, body: { parameters: {} } }),
      400,
      "UNKNOWN_BROWSER_OP",
    );
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/browser/navigate`, {
        key: acct.test_key,
        body: { parameters: { url: "file:///etc/passwd" } },
      }),
      422,
      "VALIDATION_ERROR",
    );
  });

  it("terminal: persistent session, cwd, 5000-char cap", async () => {
    const a = await call(s.url, "POST", `/v1/machines/${id}/terminal`, {
      key: acct.test_key,
      body: { command: "cd Documents", session_id: "s1" },
    });
    expect(a.status).toBe(200);
    const b = await call(s.url, "POST", `/v1/machines/${id}/terminal`, {
      key: acct.test_key,
      body: { command: "pwd", session_id: "s1" },
    });
    expect(b.body.result.output).toContain("Documents");
    const big = await call(s.url, "POST", `/v1/machines/${id}/terminal`, {
      key: acct.test_key,
      body: { command: "seq 1 100000" },
    });
    expect(String(big.body.result.output).length).toBeLessThanOrEqual(5000);
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/terminal`, {
        key: acct.test_key,
        body: { command: "id", timeout_ms: 10 },
      }),
      422,
      "VALIDATION_ERROR",
    );
  });

  it("serves all eleven file ops confined to home; an unknown op is 400 UNKNOWN_FILE_OP", async () => {
    const f = (op: string, parameters: Record<string, unknown>) =>
      call(s.url, "POST", `/v1/machines/${id}/files/${op}`, { key: acct.test_key, body: { parameters } });
    expect((await f("write", { path: "notes/a.txt", content: "one" })).body.success).toBe(true);
    expect((await f("append", { path: "notes/a.txt", content: " two" })).body.success).toBe(true);
    expect((await f("edit", { path: "notes/a.txt", old_text: "two", new_text: "three" })).body.success).toBe(true);
    expect((await f("read", { path: "notes/a.txt" })).body.result.content).toBe("one three");
    expect((await f("exists", { path: "notes/a.txt" })).body.result.exists).toBe(true);
    expect((await f("list", { path: "notes" })).body.success).toBe(true);
    expect((await f("list-directory", { path: "notes", recursive: true })).body.success).toBe(true);
    expect((await f("download", { url: "https://example.com/x.bin" })).status).toBe(200);
    expect((await f("list-downloads", {})).body.success).toBe(true);
    expect((await f("delete", { path: "notes/a.txt" })).body.success).toBe(true);
    expect((await f("delete-directory", { path: "notes" })).body.success).toBe(true);
    const outside = await f("read", { path: "../../etc/passwd" });
    expect(outside.status === 200 ? outside.body.success : false).toBe(false);
    envelope(await f("chmod", { path: "x" }), 400, "UNKNOWN_FILE_OP");
  });
});

describe("lifecycle and states", () => {
  it("stop -> actions 409 INVALID_STATE (current_state, allowed_from) -> start -> restart", async () => {
    const stop = await call(s.url, "POST", `/v1/machines/${id}/stop`, { key: acct.test_key });
    expect(stop.status).toBe(200);
    expect(stop.body).toMatchObject({ machine_id: id, status: "stopped" });
    const e = envelope(
      await call(s.url, "POST", `/v1/machines/${id}/actions`, {
        key: acct.test_key,
        body: { command: "click", parameters: { x: 1, y: 1 } },
      }),
      409,
      "INVALID_STATE",
    );
    expect(e).toMatchObject({ current_state: "stopped", allowed_from: ["running"] });
    envelope(await call(s.url, "GET", `/v1/machines/${id}/screenshot`, { key: acct.test_key }), 409, "INVALID_STATE");
    const stop2 = envelope(
      await call(s.url, "POST", `/v1/machines/${id}/stop`, { key: acct.test_key }),
      409,
      "INVALID_STATE",
    );
    expect(stop2.allowed_from).toEqual(["running"]);
    envelope(await call(s.url, "POST", `/v1/machines/${id}/restart`, { key: acct.test_key }), 409, "INVALID_STATE");
    const start = await call(s.url, "POST", `/v1/machines/${id}/start`, { key: acct.test_key });
    expect(start.body).toMatchObject({ machine_id: id, status: "running" });
    const re = await call(s.url, "POST", `/v1/machines/${id}/restart`, { key: acct.test_key });
    expect(re.body).toMatchObject({ machine_id: id, status: "running" });
  });

  it("snapshot (202, 0 credits on test keys) and restore", async () => {
    await call(s.url, "POST", `/v1/machines/${id}/files/write`, {
      key: acct.test_key,
      body: { parameters: { path: "keep.txt", content: "v1" } },
    });
    const snap = await call(s.url, "POST", `/v1/machines/${id}/snapshot`, {
      key: acct.test_key,
      body: { name: "first" },
    });
    expect(snap.status).toBe(202);
    expect(snap.body).toMatchObject({ machine_id: id, name: "first", status: "available", credits_charged: 0 });
    expect(snap.body.snapshot_id).toMatch(/^snap_[0-9a-f]{24}$/);
    await call(s.url, "POST", `/v1/machines/${id}/files/write`, {
      key: acct.test_key,
      body: { parameters: { path: "keep.txt", content: "v2" } },
    });
    const list = await call(s.url, "GET", `/v1/machines/${id}/snapshots`, { key: acct.test_key });
    expect(list.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
    expect(list.body.data[0].snapshot_id).toBe(snap.body.snapshot_id);
    const restore = await call(s.url, "POST", `/v1/machines/${id}/restore`, {
      key: acct.test_key,
      body: { snapshot_id: snap.body.snapshot_id },
    });
    expect(restore.status).toBe(200);
    const read = await call(s.url, "POST", `/v1/machines/${id}/files/read`, {
      key: acct.test_key,
      body: { parameters: { path: "keep.txt" } },
    });
    expect(read.body.result.content).toBe("v1");
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/restore`, {
        key: other.test_key,
        body: { snapshot_id: snap.body.snapshot_id },
      }),
      404,
      "MACHINE_NOT_FOUND",
    );
    envelope(
      await call(s.url, "POST", `/v1/machines/${id}/restore`, {
        key: acct.test_key,
        body: { snapshot_id: `snap_${"0".repeat(24)}` },
      }),
      404,
      "NOT_FOUND",
    );
  });

  it("every protected machine route is 401 without a key", async () => {
    const routes: [string, string][] = [
      ["POST", "/v1/machines"],
      ["GET", "/v1/machines"],
      ["GET", "/v1/machines/pricing"],
      ["GET", `/v1/machines/${id}`],
      ["PATCH", `/v1/machines/${id}`],
      ["DELETE", `/v1/machines/${id}`],
      ["POST", `/v1/machines/${id}/start`],
      ["POST", `/v1/machines/${id}/stop`],
      ["POST", `/v1/machines/${id}/restart`],
      ["POST", `/v1/machines/${id}/snapshot`],
      ["GET", `/v1/machines/${id}/screenshot`],
      ["GET", `/v1/machines/${id}/connection`],
      ["POST", `/v1/machines/${id}/actions`],
      ["POST", `/v1/machines/${id}/actions/batch`],
      ["POST", `/v1/machines/${id}/browser/state`],
      ["POST", `/v1/machines/${id}/terminal`],
      ["POST", `/v1/machines/${id}/files/read`],
      ["POST", "/v1/machines/external"],
    ];
    for (const [m, p] of routes)
      envelope(
        await call(s.url, m, p, { body: m === "GET" || m === "DELETE" ? undefined : {} }),
        401,
        "INVALID_API_KEY",
      );
  });
});

describe("machine-access port (used by runs, workflows and schedules)", () => {
  it("resolves the caller's running machine; 400 / 404 / 409 otherwise", async () => {
    const { getRunnableMachine } = await import("@cua/core/machines-service/machine-access");
    const deps = s.app.deps;
    const me = { accountId: acct.account_id, mode: "test" as const };
    const m = await getRunnableMachine(deps, me, id);
    expect(m).toMatchObject({ id, kind: "managed", status: "running", screen: { width: 1280, height: 720 } });
    const shot = await m.screenshot();
    expect(shot.png.subarray(0, 4)).toEqual(PNG_SIG);
    expect(await m.execute("click", { x: 3, y: 4 })).toMatchObject({ command: "click", success: true });
    await expect(m.execute("nope", {})).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    await expect(getRunnableMachine(deps, { accountId: other.account_id, mode: "test" }, id)).rejects.toMatchObject({
      code: "MACHINE_NOT_FOUND",
    });
    await expect(getRunnableMachine(deps, { accountId: acct.account_id, mode: "live" }, id)).rejects.toMatchObject({
      code: "MACHINE_NOT_FOUND",
    });
    await expect(getRunnableMachine(deps, me, "bogus")).rejects.toMatchObject({ code: "INVALID_MACHINE_ID" });
    await call(s.url, "POST", `/v1/machines/${id}/stop`, { key: acct.test_key });
    await expect(getRunnableMachine(deps, me, id)).rejects.toMatchObject({
      code: "INVALID_STATE",
      extras: { current_state: "stopped", allowed_from: ["running"] },
    });
    await call(s.url, "POST", `/v1/machines/${id}/start`, { key: acct.test_key });
  });
});
