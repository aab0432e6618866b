import { createHmac } from "node:crypto";
import { isCoreError } from "@cua/base/errors";
import { describe, expect, it } from "vitest";
import { checkCallbackUrl, isForbiddenAddress, signCallback } from "./callbacks.ts";

describe("isForbiddenAddress (DECISIONS Cross-cutting rules: no loopback, private, link-local, metadata)", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.255.1.2", true],
    ["10.0.0.8", true],
    ["172.16.4.4", true],
    ["172.31.255.255", true],
    ["172.32.0.1", false],
    ["192.168.0.1", true],
    ["169.254.169.254", true],
    ["100.64.0.1", true],
    ["0.0.0.0", true],
    ["224.0.0.1", true],
    ["255.255.255.255", true],
    ["93.184.216.34", false],
    ["8.8.8.8", false],
    ["::1", true],
    ["::", true],
    ["fe80::1", true],
    ["fd00:ec2::254", true],
    ["fc12::1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:10.1.1.1", true],
    ["::ffff:93.184.216.34", false],
    ["64:ff9b::a00:1", true],
    ["2606:2800:220:1:248:1893:25c8:1946", false],
    ["not-an-ip", true],
  ])("%s -> %s", (ip, want) => {
    expect(isForbiddenAddress(ip)).toBe(want);
  });
});

describe("checkCallbackUrl", () => {
  const resolvesTo =
    (...addresses: string[]) =>
    async () =>
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  const rejects = async (url: string, lookup = resolvesTo("93.184.216.34"), insecure = false) => {
    try {
      await checkCallbackUrl(url, insecure, lookup);
    } catch (e) {
      if (isCoreError(e) && e.code === "VALIDATION_ERROR") return e.extras.details?.[0]?.path;
      throw e;
    }
    return null;
  };

  it("accepts https to public addresses", async () => {
    expect(await checkCallbackUrl("https://hooks.example.com/x?y=1", false, resolvesTo("93.184.216.34"))).toBe(
      "https://hooks.example.com/x?y=1",
    );
  });

  it("rejects http, credentials, names that resolve inward (any of their addresses), unresolvable names", async () => {
    expect(await rejects("http://hooks.example.com/x")).toBe("body.webhook_url");
    expect(await rejects("https://u:p@hooks.example.com/x")).toBe("body.webhook_url");
    expect(await rejects("https://hooks.example.com/x", resolvesTo("93.184.216.34", "10.0.0.1"))).toBe(
      "body.webhook_url",
    );
    expect(await rejects("https://internal.example.com/x", resolvesTo("169.254.169.254"))).toBe("body.webhook_url");
    expect(
      await rejects("https://nowhere.example/x", async () => {
        throw new Error("ENOTFOUND");
      }),
    ).toBe("body.webhook_url");
    expect(await rejects("https://metadata.localhost/x")).toBe("body.webhook_url");
  });

  it("ALLOW_INSECURE_CALLBACKS allows http and loopback", async () => {
    expect(await rejects("http://127.0.0.1:9000/x", resolvesTo("127.0.0.1"), true)).toBeNull();
  });
});

describe("signCallback (SPEC Authentication 6 and 8)", () => {
  it("t=<unix>,v1=<lowercase hex HMAC-SHA256 of '<t>.<body>' keyed with the secret>", () => {
    const secret = `whsec_${"ab".repeat(32)}`;
    const body = '{"id":"dlv_1","event":"run.succeeded"}';
    const want = createHmac("sha256", secret).update(`1700000000.${body}`).digest("hex");
    expect(signCallback(secret, body, 1_700_000_000)).toBe(`t=1700000000,v1=${want}`);
  });
});
