// Issue 10, failure 3: every answer is the SPEC envelope, also while the service shuts down. A request that
// arrives on an open connection after close began is 503 SERVICE_UNAVAILABLE with Retry-After (Fastify's own
// 503 body is turned off), and the request already in flight when close began completes normally.
import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  key = (await s.account()).test_key;
});
afterAll(() => s.stop());

it("a request arriving during shutdown is 503 SERVICE_UNAVAILABLE in the envelope", async () => {
  const port = Number(new URL(s.url).port);
  const sock = net.connect(port, "127.0.0.1");
  await new Promise<void>((r) => sock.once("connect", () => r()));
  let out = "";
  sock.on("data", (d) => (out += d));
  const closed = new Promise<void>((r) => sock.once("close", () => r()));
  // request A: its headers now, its body after the server began closing
  const body = '{"name":"during-shutdown"}';
  sock.write(
    `POST /v1/keys HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  await new Promise((r) => setTimeout(r, 200));
  const closing = s.app.server.close();
  await new Promise((r) => setTimeout(r, 200));
  // A's body, and request B pipelined behind it on the same connection
  sock.write(`${body}GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n`);
  await Promise.race([closed, new Promise((r) => setTimeout(r, 5000))]);
  sock.destroy();
  await closing;
  const answers = out.split(/(?=HTTP\/1\.1 )/);
  expect(answers[0]).toMatch(/^HTTP\/1\.1 201 /);
  expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /);
  expect(answers[1]).toMatch(/retry-after: 1/i);
  const b = JSON.parse(answers[1]!.slice(answers[1]!.indexOf("\r\n\r\n") + 4));
  expect(b.error).toMatchObject({ code: "SERVICE_UNAVAILABLE", retryable: true, type: expect.any(String) });
  expect(answers[1]).toContain(`x-service-request-id: ${b.error.request_id}`);
});
