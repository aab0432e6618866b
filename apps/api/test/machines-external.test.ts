// Issue 4 "External machines (driver protocol version 1)" at the protocol level, with a scripted driver
// (plain fetch): enrollment idempotency, device tokens, long poll, at-least-once delivery and cursors,
// fencing, frame preconditions, one outstanding command (MACHINE_BUSY), observation sequences and
// digests, encrypted frames purged after 900 s, rate limits, and DELETE revoking everything.
import { createHash } from "node:crypto";
import { encodePng, Raster } from "@cua/machines/png";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, type Res, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let other: Awaited<ReturnType<TestServer["account"]>>;

const ENROLL = {
  display_name: "laptop",
  os_type: "linux",
  capabilities: ["screenshot", "mouse", "keyboard", "scroll", "terminal", "files", "browser"],
  screen_width: 1280,
  screen_height: 720,
  protocol_version: 1,
};

let keyN = 0;
async function enrollOne(key = acct.live_key, body: Record<string, unknown> = ENROLL) {
  const r = await call(s.url, "POST", "/v1/machines/external", {
    key,
    body,
    headers: { "Idempotency-Key": `enr-${++keyN}-${Date.now()}` },
  });
  expect(r.status, r.text).toBe(201);
  return r.body as { machine_id: string; device_token: string };
}

const drv = (token: string, method: string, p: string, body?: unknown) =>
  call(s.url, method, p, { headers: { Authorization: `Bearer ${token}` }, ...(body === undefined ? {} : { body }) });

function png(w = 320, h = 240, rgb: [number, number, number] = [10, 20, 30]): Buffer {
  return encodePng(new Raster(w, h, rgb));
}

/** Answers the next command like a driver would: poll, then post a result. */
async function answerNext(
  m: { machine_id: string; device_token: string },
  make: (cmd: any) => Record<string, unknown>,
  after = "0",
): Promise<any> {
  const poll = await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?after=${after}&wait_seconds=10`);
  expect(poll.status, poll.text).toBe(200);
  const cmd = poll.body.commands[0];
  expect(cmd).toBeDefined();
  const r = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${cmd.id}/results`, {
    fencing_token: cmd.fencing_token,
    precondition_frame_id: cmd.precondition_frame_id,
    ...make(cmd),
  });
  expect(r.status, r.text).toBe(200);
  return { cmd, poll };
}

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  acct = await s.account();
  other = await s.account();
});
afterAll(() => s.stop());

describe("enrollment", () => {
  it("requires an Idempotency-Key (400 IDEMPOTENCY_KEY_REQUIRED) and validates the body", async () => {
    envelope(
      await call(s.url, "POST", "/v1/machines/external", { key: acct.live_key, body: ENROLL }),
      400,
      "IDEMPOTENCY_KEY_REQUIRED",
    );
    const bad = await call(s.url, "POST", "/v1/machines/external", {
      key: acct.live_key,
      body: { ...ENROLL, protocol_version: 2 },
      headers: { "Idempotency-Key": "bad-1" },
    });
    envelope(bad, 422, "VALIDATION_ERROR");
    envelope(
      await call(s.url, "POST", "/v1/machines/external", {
        key: acct.live_key,
        body: { ...ENROLL, capabilities: ["teleport"] },
        headers: { "Idempotency-Key": "bad-2" },
      }),
      422,
      "VALIDATION_ERROR",
    );
  });

  it("201 with Cache-Control: no-store; an exact replay returns the same token, across API-key rotation; another body is 422", async () => {
    const headers = { "Idempotency-Key": "enroll-rotation" };
    const a = await call(s.url, "POST", "/v1/machines/external", { key: acct.live_key, body: ENROLL, headers });
    expect(a.status).toBe(201);
    expect(a.headers.get("cache-control")).toBe("no-store");
    expect(a.body).toMatchObject({ protocol_version: 1, capabilities: ENROLL.capabilities });
    expect(a.body.device_token).toMatch(/^dtk_[0-9a-f]{64}$/);
    expect(a.body.machine).toMatchObject({
      kind: "external",
      status: "running",
      provider: "external",
      protocol_version: 1,
    });
    // a new key of the same account (the old one rotated out) replays the same enrollment
    const scopes = [
      "machines:write",
      "machines:read",
      "actions:exec",
      "terminal:exec",
      "files:read",
      "files:write",
      "connection:read",
      "snapshots:write",
      "keys",
    ];
    const fresh = (await call(s.url, "POST", "/v1/keys", { key: acct.live_key, body: { scopes } })).body;
    const oldId = (await call(s.url, "GET", "/v1/keys", { key: acct.live_key })).body.keys.find(
      (k: any) => k.prefix === acct.live_key.slice(0, 16),
    ).id;
    expect((await call(s.url, "DELETE", `/v1/keys/${oldId}`, { key: fresh.key })).status).toBe(200);
    envelope(await call(s.url, "GET", "/v1/machines", { key: acct.live_key }), 401, "INVALID_API_KEY");
    const b = await call(s.url, "POST", "/v1/machines/external", { key: fresh.key, body: ENROLL, headers });
    expect(b.status).toBe(201);
    expect(b.headers.get("x-service-idempotent-replay")).toBe("true");
    expect(b.headers.get("cache-control")).toBe("no-store");
    expect(b.body.device_token).toBe(a.body.device_token);
    expect(b.body.machine_id).toBe(a.body.machine_id);
    envelope(
      await call(s.url, "POST", "/v1/machines/external", {
        key: fresh.key,
        body: { ...ENROLL, display_name: "other" },
        headers,
      }),
      422,
      "IDEMPOTENCY_KEY_REUSED",
    );
    // another account using the same key string gets its own enrollment
    const c = await call(s.url, "POST", "/v1/machines/external", { key: other.live_key, body: ENROLL, headers });
    expect(c.status).toBe(201);
    expect(c.body.machine_id).not.toBe(a.body.machine_id);
    // the token never appears in get or list
    const got = await call(s.url, "GET", `/v1/machines/${a.body.machine_id}`, { key: fresh.key });
    expect(got.text).not.toContain(a.body.device_token);
    const list = await call(s.url, "GET", "/v1/machines", { key: fresh.key });
    expect(list.text).not.toContain("dtk_");
    // enrollment is not in the key-scoped idempotency lookup
    envelope(await call(s.url, "GET", "/v1/idempotency/enroll-rotation", { key: fresh.key }), 404, "NOT_FOUND");
    acct.live_key = fresh.key;
  });
});

describe("device tokens", () => {
  it("are valid for their own machine's driver routes only, and never as API keys", async () => {
    const m1 = await enrollOne();
    const m2 = await enrollOne();
    expect((await drv(m1.device_token, "POST", `/v1/machines/${m1.machine_id}/heartbeat`, {})).status).toBe(200);
    envelope(
      await drv(m1.device_token, "POST", `/v1/machines/${m2.machine_id}/heartbeat`, {}),
      401,
      "INVALID_DEVICE_TOKEN",
    );
    envelope(
      await drv(acct.live_key, "POST", `/v1/machines/${m1.machine_id}/heartbeat`, {}),
      401,
      "INVALID_DEVICE_TOKEN",
    );
    envelope(
      await drv(`dtk_${"0".repeat(64)}`, "GET", `/v1/machines/${m1.machine_id}/commands`),
      401,
      "INVALID_DEVICE_TOKEN",
    );
    envelope(await call(s.url, "GET", `/v1/machines/${m1.machine_id}/commands`), 401, "INVALID_DEVICE_TOKEN");
    envelope(await call(s.url, "GET", "/v1/machines", { key: m1.device_token }), 401, "INVALID_API_KEY");
    envelope(
      await call(s.url, "GET", "/v1/machines", { headers: { Authorization: `Bearer ${m1.device_token}` } }),
      401,
      "INVALID_API_KEY",
    );
    const row = await s.app.deps.db.machine.findUniqueOrThrow({ where: { id: m1.machine_id } });
    expect(row.deviceTokenHash).toBe(createHash("sha256").update(m1.device_token).digest("hex"));
  });
});

describe("commands, results and fencing", () => {
  it("long poll returns at the deadline when idle and early when a command arrives; delivery is at least once", async () => {
    const m = await enrollOne();
    const t0 = Date.now();
    const idle = await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?wait_seconds=1`);
    expect(idle.body).toMatchObject({ commands: [], next_cursor: "0", fencing_token: 0 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    const pollP = drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?wait_seconds=20`);
    await new Promise((r) => setTimeout(r, 200));
    const t1 = Date.now();
    const actionP = call(s.url, "POST", `/v1/machines/${m.machine_id}/actions`, {
      key: acct.live_key,
      body: { command: "click", parameters: { x: 5, y: 6 } },
    });
    const poll = await pollP;
    expect(Date.now() - t1).toBeLessThan(3000);
    const cmd = poll.body.commands[0];
    expect(cmd).toMatchObject({
      seq: 1,
      command: "click",
      parameters: { x: 5, y: 6 },
      capability: "mouse",
      fencing_token: 0,
      precondition_frame_id: null,
      protocol_version: 1,
    });
    expect(cmd.id).toMatch(/^cmd_[0-9a-f]+$/);
    expect(poll.body.next_cursor).toBe("1");
    // not acknowledged yet: polling from the old cursor delivers it again (at least once), the new cursor does not
    const again = await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?after=0`);
    expect(again.body.commands.map((c: any) => c.id)).toEqual([cmd.id]);
    expect((await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?after=1`)).body.commands).toEqual(
      [],
    );
    const result = {
      status: "succeeded",
      result: { clicked: true },
      error: null,
      duration_ms: 12,
      fencing_token: 0,
      precondition_frame_id: null,
    };
    const posted = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${cmd.id}/results`, result);
    expect(posted.body).toEqual({ accepted: true, duplicate: false });
    const action = await actionP;
    expect(action.status).toBe(200);
    expect(action.body).toMatchObject({
      machine_id: m.machine_id,
      command: "click",
      success: true,
      result: { clicked: true },
      duration_ms: 12,
    });
    const dup = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${cmd.id}/results`, result);
    expect(dup.body).toEqual({ accepted: true, duplicate: true });
    envelope(
      await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${cmd.id}/results`, {
        ...result,
        status: "failed",
      }),
      409,
      "RESULT_CONFLICT",
    );
    envelope(
      await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/cmd_ffff/results`, result),
      404,
      "NOT_FOUND",
    );
    envelope(
      await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?after=abc`),
      400,
      "INVALID_CURSOR",
    );
    envelope(await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?limit=51`), 400, "INVALID_LIMIT");
    envelope(
      await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?wait_seconds=31`),
      422,
      "VALIDATION_ERROR",
    );
  });

  it("one outstanding command per machine: a concurrent dispatch is 409 MACHINE_BUSY", async () => {
    const m = await enrollOne();
    const first = call(s.url, "POST", `/v1/machines/${m.machine_id}/terminal`, {
      key: acct.live_key,
      body: { command: "echo one" },
    });
    await new Promise((r) => setTimeout(r, 300));
    const e = envelope(
      await call(s.url, "POST", `/v1/machines/${m.machine_id}/actions`, {
        key: acct.live_key,
        body: { command: "type", parameters: { text: "x" } },
      }),
      409,
      "MACHINE_BUSY",
    );
    expect(e.retryable).toBe(true);
    await answerNext(m, () => ({
      status: "succeeded",
      result: { output: "one\n", exit_code: 0 },
      error: null,
      duration_ms: 3,
    }));
    const r = await first;
    expect(r.body).toMatchObject({ success: true, result: { output: "one\n" } });
  });

  it("start/stop/restart bump the fence and cancel pending commands; stale echoes are 409 FENCING_TOKEN_MISMATCH", async () => {
    const m = await enrollOne();
    const pending = call(s.url, "POST", `/v1/machines/${m.machine_id}/terminal`, {
      key: acct.live_key,
      body: { command: "sleep 100" },
    });
    const poll = await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?wait_seconds=10`);
    const cmd = poll.body.commands[0];
    const stop = await call(s.url, "POST", `/v1/machines/${m.machine_id}/stop`, { key: acct.live_key });
    expect(stop.body).toMatchObject({ machine_id: m.machine_id, status: "stopped" });
    expect(stop.body.message).toContain("fencing token is now 1");
    const e = envelope(await pending, 409, "INVALID_STATE");
    expect(e.allowed_from).toEqual(["running"]);
    const late = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${cmd.id}/results`, {
      status: "succeeded",
      result: {},
      error: null,
      duration_ms: 1,
      fencing_token: 0,
      precondition_frame_id: null,
    });
    expect(envelope(late, 409, "FENCING_TOKEN_MISMATCH").fencing_token).toBe(1);
    envelope(
      await call(s.url, "POST", `/v1/machines/${m.machine_id}/actions`, {
        key: acct.live_key,
        body: { command: "click", parameters: { x: 1, y: 1 } },
      }),
      409,
      "INVALID_STATE",
    );
    expect((await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/heartbeat`, {})).body.fencing_token).toBe(
      1,
    );
    expect((await call(s.url, "POST", `/v1/machines/${m.machine_id}/start`, { key: acct.live_key })).body.status).toBe(
      "running",
    );
    expect(
      (await call(s.url, "POST", `/v1/machines/${m.machine_id}/restart`, { key: acct.live_key })).body.status,
    ).toBe("running");
    const next = call(s.url, "POST", `/v1/machines/${m.machine_id}/actions`, {
      key: acct.live_key,
      body: { command: "move", parameters: { x: 1, y: 1 } },
    });
    const { cmd: c2, poll: p2 } = await answerNext(
      m,
      () => ({ status: "succeeded", result: {}, error: null, duration_ms: 1 }),
      poll.body.next_cursor,
    );
    expect(c2.fencing_token).toBe(3);
    expect(p2.body.fencing_token).toBe(3);
    expect((await next).status).toBe(200);
    // an echo that differs from the command is refused
    const third = call(s.url, "POST", `/v1/machines/${m.machine_id}/actions`, {
      key: acct.live_key,
      body: { command: "move", parameters: { x: 2, y: 2 } },
    });
    const p3 = await drv(
      m.device_token,
      "GET",
      `/v1/machines/${m.machine_id}/commands?after=${p2.body.next_cursor}&wait_seconds=10`,
    );
    const c3 = p3.body.commands[0];
    envelope(
      await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${c3.id}/results`, {
        status: "succeeded",
        fencing_token: 2,
        precondition_frame_id: null,
      }),
      409,
      "FENCING_TOKEN_MISMATCH",
    );
    envelope(
      await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${c3.id}/results`, {
        status: "succeeded",
        fencing_token: 3,
      }),
      422,
      "VALIDATION_ERROR",
    );
    await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${c3.id}/results`, {
      status: "rejected",
      error: { code: "NOPE", message: "no" },
      fencing_token: 3,
      precondition_frame_id: null,
    });
    expect((await third).body).toMatchObject({ success: false, error: { code: "NOPE" } });
  });

  it("an unanswered command times out: 504 UPSTREAM_TIMEOUT after its deadline, and the machine is free again", async () => {
    const m = await enrollOne();
    const t0 = Date.now();
    const r = await call(s.url, "POST", `/v1/machines/${m.machine_id}/actions`, {
      key: acct.live_key,
      body: { command: "wait", parameters: { seconds: 0 }, timeout_ms: 1000 },
    });
    envelope(r, 504, "UPSTREAM_TIMEOUT");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    const cmds = await s.app.deps.db.machineCommand.findMany({ where: { machineId: m.machine_id } });
    expect(cmds.map((c) => c.status)).toEqual(["expired"]);
  }, 30_000);
});

describe("observations and frames", () => {
  it("sequence = last_sequence + 1, digests, encrypted storage, heartbeat resync, screenshot and frame preconditions", async () => {
    const m = await enrollOne();
    const obs = (sequence: number, data: Buffer, mime = "image/png") =>
      drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/observations`, {
        sequence,
        mime_type: mime,
        data: data.toString("base64"),
      });
    const hb0 = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/heartbeat`, {});
    expect(hb0.body).toMatchObject({ last_sequence: 0, last_frame_id: null, fencing_token: 0 });
    const img = png(320, 240);
    // metadata (a tEXt chunk) is stripped: the stored digest differs from the request digest
    const withText = Buffer.concat([
      img.subarray(0, 33),
      chunk("tEXt", Buffer.from("Comment\0hello")),
      img.subarray(33),
    ]);
    const f1 = await obs(1, withText);
    expect(f1.status, f1.text).toBe(201);
    expect(f1.body.request_digest).toBe(createHash("sha256").update(withText).digest("hex"));
    expect(f1.body.digest).toBe(createHash("sha256").update(img).digest("hex"));
    expect(f1.body).toMatchObject({ sequence: 1 });
    expect(f1.body.frame_id).toMatch(/^frm_[0-9a-f]+$/);
    // a repeated sequence is 409 SEQUENCE_CONFLICT, not a second 201 (issue 12); an exact repeat names its frame
    const replay = envelope(await obs(1, withText), 409, "SEQUENCE_CONFLICT");
    expect(replay).toMatchObject({ last_sequence: 1, frame_id: f1.body.frame_id, duplicate: true });
    expect(envelope(await obs(3, img), 409, "SEQUENCE_CONFLICT").last_sequence).toBe(1);
    envelope(await obs(1, png(320, 240, [1, 2, 3])), 409, "SEQUENCE_CONFLICT");
    envelope(
      await obs(2, Buffer.from("not an image at all, definitely not a png file, just text that is long enough")),
      400,
      "INVALID_SCREENSHOT",
    );
    envelope(await obs(2, png(100, 100)), 422, "VALIDATION_ERROR");
    const hb = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/heartbeat`, { status: { cpu: 1 } });
    expect(hb.body).toMatchObject({ last_sequence: 1, last_frame_id: f1.body.frame_id, fencing_token: 0 });
    const row = await s.app.deps.db.machineFrame.findUniqueOrThrow({ where: { id: f1.body.frame_id } });
    expect(Buffer.from(row.ciphertext).includes(Buffer.from("IHDR"))).toBe(false);
    expect(row.expiresAt.getTime() - row.storedAt.getTime()).toBe(900_000);

    // the owner's screenshot: a screenshot command, answered by a fresh observation naming its frame
    const shotP = call(s.url, "GET", `/v1/machines/${m.machine_id}/screenshot`, { key: acct.live_key });
    const red = png(400, 300, [200, 0, 0]);
    const shot = await shotAnswer(m, red, shotP);
    expect(shot.body).toMatchObject({ machine_id: m.machine_id, mime_type: "image/png", width: 400, height: 300 });
    expect(Buffer.from(shot.body.image_b64, "base64").equals(red)).toBe(true);

    // a precondition on an old frame fails at dispatch
    envelope(
      await call(s.url, "POST", `/v1/machines/${m.machine_id}/actions`, {
        key: acct.live_key,
        body: { command: "click", parameters: { x: 1, y: 1 }, precondition_frame_id: f1.body.frame_id },
      }),
      409,
      "FRAME_PRECONDITION_FAILED",
    );

    // frames are purged once expired
    await s.app.deps.db.machineFrame.updateMany({
      where: { machineId: m.machine_id },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    await s.app.deps.machineBackground!.tick();
    expect(await s.app.deps.db.machineFrame.count({ where: { machineId: m.machine_id } })).toBe(0);
  });

  it("observations are limited to 60 per minute per device token (429 with Retry-After)", async () => {
    const m = await enrollOne();
    const data = png().toString("base64");
    let limited: Res | null = null;
    for (let i = 1; i <= 61; i++) {
      const r = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/observations`, {
        sequence: i,
        mime_type: "image/png",
        data,
      });
      if (r.status !== 201) {
        limited = r;
        expect(i).toBe(61);
        break;
      }
    }
    expect(limited).not.toBeNull();
    envelope(limited!, 429, "RATE_LIMIT_EXCEEDED");
    expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0);
  }, 30_000);
});

describe("owner rules for external machines", () => {
  it("connection is 409 INVALID_STATE, snapshot 400 UNSUPPORTED_MACHINE_KIND, another account 404", async () => {
    const m = await enrollOne();
    envelope(
      await call(s.url, "GET", `/v1/machines/${m.machine_id}/connection`, { key: acct.live_key }),
      409,
      "INVALID_STATE",
    );
    envelope(
      await call(s.url, "POST", `/v1/machines/${m.machine_id}/snapshot`, { key: acct.live_key }),
      400,
      "UNSUPPORTED_MACHINE_KIND",
    );
    envelope(
      await call(s.url, "GET", `/v1/machines/${m.machine_id}`, { key: other.live_key }),
      404,
      "MACHINE_NOT_FOUND",
    );
    envelope(
      await call(s.url, "POST", `/v1/machines/${m.machine_id}/actions`, {
        key: other.live_key,
        body: { command: "click", parameters: { x: 1, y: 1 } },
      }),
      404,
      "MACHINE_NOT_FOUND",
    );
  });

  it("DELETE revokes the token, cancels outstanding commands and deletes frames", async () => {
    const m = await enrollOne();
    await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/observations`, {
      sequence: 1,
      mime_type: "image/png",
      data: png().toString("base64"),
    });
    const pending = call(s.url, "POST", `/v1/machines/${m.machine_id}/terminal`, {
      key: acct.live_key,
      body: { command: "sleep 100" },
    });
    await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?wait_seconds=10`);
    const del = await call(s.url, "DELETE", `/v1/machines/${m.machine_id}`, { key: acct.live_key });
    expect(del.body).toMatchObject({ machine_id: m.machine_id, status: "terminated", terminated: true });
    envelope(await pending, 409, "INVALID_STATE");
    for (const [method, p] of [
      ["GET", "/commands"],
      ["POST", "/heartbeat"],
      ["POST", "/observations"],
    ] as const) {
      envelope(
        await drv(m.device_token, method, `/v1/machines/${m.machine_id}${p}`, method === "POST" ? {} : undefined),
        401,
        "INVALID_DEVICE_TOKEN",
      );
    }
    expect(await s.app.deps.db.machineFrame.count({ where: { machineId: m.machine_id } })).toBe(0);
    const cmds = await s.app.deps.db.machineCommand.findMany({ where: { machineId: m.machine_id } });
    expect(cmds.every((c) => c.status === "cancelled")).toBe(true);
  });
});

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

function crc32(b: Buffer): number {
  let c = ~0;
  for (const byte of b) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

/** Plays the driver for one screenshot command: observe the frame, answer with its id. */
async function shotAnswer(
  m: { machine_id: string; device_token: string },
  image: Buffer,
  owner: Promise<Res>,
): Promise<Res> {
  const poll = await drv(m.device_token, "GET", `/v1/machines/${m.machine_id}/commands?wait_seconds=10`);
  const cmd = poll.body.commands.find((c: any) => c.command === "screenshot");
  expect(cmd).toBeDefined();
  const hb = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/heartbeat`, {});
  const f = await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/observations`, {
    sequence: hb.body.last_sequence + 1,
    mime_type: "image/png",
    data: image.toString("base64"),
  });
  expect(f.status, f.text).toBe(201);
  await drv(m.device_token, "POST", `/v1/machines/${m.machine_id}/commands/${cmd.id}/results`, {
    status: "succeeded",
    result: { frame_id: f.body.frame_id },
    error: null,
    duration_ms: 5,
    fencing_token: cmd.fencing_token,
    precondition_frame_id: null,
  });
  return owner;
}
