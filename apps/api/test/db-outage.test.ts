// Issue 2: "DB outage gives 503 DB_UNAVAILABLE with Retry-After, never a hang or a 500" and
// DECISIONS.md "GET /v1/health answers 503 (status degraded) when the database does not answer".
// The service reaches PostgreSQL through a TCP proxy this test controls; cutting it is the outage.
import net from "node:net";
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

class TcpProxy {
  server: net.Server | null = null;
  sockets = new Set<net.Socket>();
  constructor(readonly port: number) {}
  start() {
    return new Promise<void>((resolve) => {
      this.server = net.createServer((client) => {
        const up = net.connect(5432, "127.0.0.1");
        this.sockets.add(client).add(up);
        client.pipe(up).pipe(client);
        const end = () => {
          client.destroy();
          up.destroy();
        };
        client.on("error", end).on("close", end);
        up.on("error", end).on("close", end);
      });
      this.server.listen(this.port, "127.0.0.1", () => resolve());
    });
  }
  stop() {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    return new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

let tdb: TestDatabase;
let s: TestServer;
let proxy: TcpProxy;
let key: string;
beforeAll(async () => {
  tdb = await createTestDatabase();
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", () => r()));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  proxy = new TcpProxy(port);
  await proxy.start();
  const url = new URL(tdb.url);
  url.port = String(port);
  url.hostname = "127.0.0.1";
  s = await startTestServer({ DATABASE_URL: url.toString() }, tdb);
  key = (await s.account()).live_key;
});
afterAll(async () => {
  await s.stop();
  await proxy.stop();
  await tdb.drop();
});

describe("database outage", () => {
  it("authenticated calls answer 503 DB_UNAVAILABLE with Retry-After within seconds, health says degraded, then recover", async () => {
    // a call that reads the database works before the outage (not GET /v1/usage itself: its read would be
    // reused for up to 100 ms, docs/api.md "Usage", and the next call would answer from it)
    expect((await call(s.url, "GET", "/v1/keys", { key })).status).toBe(200);
    await proxy.stop();
    const t0 = Date.now();
    const r = await call(s.url, "GET", "/v1/usage", { key });
    const e = envelope(r, 503, "DB_UNAVAILABLE");
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(e.type).toBe("server_error");
    expect(e.retryable).toBe(true);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    const w = await call(s.url, "POST", "/v1/keys", {
      key,
      body: { name: "x" },
      headers: { "Idempotency-Key": "outage-1" },
    });
    envelope(w, 503, "DB_UNAVAILABLE");
    const h = await call(s.url, "GET", "/v1/health");
    expect(h.status).toBe(503);
    expect(h.body).toMatchObject({ status: "degraded", checks: { database: "unavailable" } });
    expect(h.headers.get("retry-after")).toBeTruthy();

    await proxy.start();
    let ok = 0;
    for (let i = 0; i < 50 && ok === 0; i++) {
      if ((await call(s.url, "GET", "/v1/usage", { key })).status === 200) ok++;
      else await new Promise((res) => setTimeout(res, 200));
    }
    expect(ok).toBe(1);
    expect((await call(s.url, "GET", "/v1/health")).body.status).toBe("ok");
  });
});
