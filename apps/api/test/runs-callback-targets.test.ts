// Issue 10, failure 5 (SSRF) through the real server: POST /v1/runs with a webhook_url that points inward is
// 422 VALIDATION_ERROR at body.webhook_url (DECISIONS.md "Cross-cutting rules": https, never loopback, private,
// link-local or metadata addresses), whatever spelling the address takes; ALLOW_INSECURE_CALLBACKS=1 allows
// http and loopback only. The table of forms is unit-tested in packages/core/src/policy/outbound-address.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envelope, startTestServer, type TestServer } from "./helpers.ts";
import { callbackReceiver, createRun, testMachine } from "./runs-helpers.ts";

const INWARD = [
  "https://[::127.0.0.1]/hook", // IPv4-compatible
  "https://[::ffff:127.0.0.1]/hook", // IPv4-mapped
  "https://[::ffff:a9fe:a9fe]/latest/meta-data", // mapped metadata
  "https://[2002:7f00:1::1]/hook", // 6to4 of 127.0.0.1
  "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook", // Teredo, client 127.0.0.1
  "https://[64:ff9b::7f00:1]/hook", // NAT64 of 127.0.0.1
  "https://[64:ff9b:1::a9fe:a9fe]/hook", // local-use NAT64
  "https://2130706433/hook", // decimal 127.0.0.1
  "https://0x7f.1/hook", // hex
  "https://0177.0.0.1/hook", // octal
  "https://169.254.169.254/latest/meta-data",
  "https://[fd00:ec2::254]/latest/meta-data",
  "https://10.0.0.1/hook",
  "https://172.16.0.1/hook",
  "https://192.168.1.1/hook",
  "https://100.64.0.1/hook",
  "https://[fc00::1]/hook",
  "https://[fe80::1]/hook",
  "https://[::1]/hook",
  "https://localhost/hook",
  "https://0.0.0.0/hook",
];

async function refusedAt(s: TestServer, key: string, machine: string, url: string) {
  const r = await createRun(s, key, { machine_id: machine, task: "x", webhook_url: url });
  try {
    const e = envelope(r, 422, "VALIDATION_ERROR");
    return e.details[0].path;
  } catch (err) {
    throw new Error(`${url}: ${(err as Error).message}`);
  }
}

describe("ALLOW_INSECURE_CALLBACKS off (the default)", () => {
  let s: TestServer;
  let key: string;
  let machine: string;
  beforeAll(async () => {
    s = await startTestServer({ MACHINE_PROVIDER: "none" });
    key = (await s.account()).test_key;
    machine = await testMachine(s, key);
  });
  afterAll(() => s.stop());

  it.each(INWARD)("%s is 422 at body.webhook_url", async (url) => {
    expect(await refusedAt(s, key, machine, url)).toBe("body.webhook_url");
  });

  it("http and loopback are refused too", async () => {
    expect(await refusedAt(s, key, machine, "http://127.0.0.1:9/hook")).toBe("body.webhook_url");
  });
});

describe("ALLOW_INSECURE_CALLBACKS=1 allows http and loopback only", () => {
  let s: TestServer;
  let key: string;
  let machine: string;
  let rx: Awaited<ReturnType<typeof callbackReceiver>>;
  beforeAll(async () => {
    s = await startTestServer({ MACHINE_PROVIDER: "none", ALLOW_INSECURE_CALLBACKS: "1" });
    key = (await s.account()).test_key;
    machine = await testMachine(s, key);
    rx = await callbackReceiver();
  });
  afterAll(async () => {
    await s.stop();
    await rx.close();
  });

  it.each([
    "http://10.0.0.1/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.1/hook",
    "http://100.64.0.1/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://[fd00:ec2::254]/",
    "http://[fc00::1]/",
    "http://[fe80::1]/",
    "http://[::127.0.0.1]/hook",
    "http://[2002:7f00:1::1]/hook",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://0.0.0.0:9/hook",
  ])("%s is still 422 at body.webhook_url", async (url) => {
    expect(await refusedAt(s, key, machine, url)).toBe("body.webhook_url");
  });

  it("an http loopback receiver (by address and by the name localhost) is accepted", async () => {
    for (const url of [rx.url, rx.url.replace("127.0.0.1", "localhost")]) {
      const r = await createRun(s, key, { machine_id: machine, task: "x", webhook_url: url });
      expect(r.status, r.text).toBe(201);
      expect(r.body.webhook_url).toBe(url);
    }
  });
});
