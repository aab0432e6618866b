// DECISIONS.md "Cross-cutting rules": callback and webhook targets must be https and must not resolve to
// loopback, private, link-local or metadata addresses; ALLOW_INSECURE_CALLBACKS allows http and loopback only.
// Every spelling of an address is normalised first (issue 10, failure 5: [::127.0.0.1] and 6to4 got through).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { isCoreError } from "@cua/base/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkOutboundUrl, classifyAddress, isForbiddenAddress, parseIpv4, pinnedLookup } from "./outbound-address.ts";

describe("classifyAddress normalises every IPv4 spelling and IPv6 form carrying an IPv4", () => {
  it.each([
    // IPv4, plain and inet_aton spellings
    ["127.0.0.1", "loopback", "127.0.0.1", undefined],
    ["2130706433", "loopback", "127.0.0.1", undefined],
    ["0x7f000001", "loopback", "127.0.0.1", undefined],
    ["0177.0.0.1", "loopback", "127.0.0.1", undefined],
    ["0x7f.1", "loopback", "127.0.0.1", undefined],
    ["127.1", "loopback", "127.0.0.1", undefined],
    ["0xa9fea9fe", "metadata", "169.254.169.254", undefined],
    ["10.0.0.8", "private", "10.0.0.8", undefined],
    ["012.0.0.1", "private", "10.0.0.1", undefined],
    ["172.16.4.4", "private", "172.16.4.4", undefined],
    ["172.31.255.255", "private", "172.31.255.255", undefined],
    ["172.32.0.1", "public", "172.32.0.1", undefined],
    ["192.168.0.1", "private", "192.168.0.1", undefined],
    ["100.64.0.1", "private", "100.64.0.1", undefined],
    ["100.100.100.200", "metadata", "100.100.100.200", undefined],
    ["169.254.169.254", "metadata", "169.254.169.254", undefined],
    ["169.254.1.1", "link_local", "169.254.1.1", undefined],
    ["0.0.0.0", "reserved", "0.0.0.0", undefined],
    ["0", "reserved", "0.0.0.0", undefined],
    ["224.0.0.1", "reserved", "224.0.0.1", undefined],
    ["255.255.255.255", "reserved", "255.255.255.255", undefined],
    ["93.184.216.34", "public", "93.184.216.34", undefined],
    ["8.8.8.8", "public", "8.8.8.8", undefined],
    // IPv6 native
    ["::1", "loopback", undefined, undefined],
    ["0:0:0:0:0:0:0:1", "loopback", undefined, undefined],
    ["::", "reserved", undefined, undefined],
    ["fe80::1", "link_local", undefined, undefined],
    ["fe80::1%eth0", "link_local", undefined, undefined],
    ["fd00:ec2::254", "metadata", undefined, undefined],
    ["fc12::1", "private", undefined, undefined],
    ["fec0::1", "private", undefined, undefined],
    ["ff02::1", "reserved", undefined, undefined],
    ["2001:db8::1", "reserved", undefined, undefined],
    ["2606:2800:220:1:248:1893:25c8:1946", "public", undefined, undefined],
    // IPv4-mapped, written dotted or in hex (as the URL parser normalises it)
    ["::ffff:127.0.0.1", "loopback", "127.0.0.1", "mapped"],
    ["::ffff:7f00:1", "loopback", "127.0.0.1", "mapped"],
    ["[::ffff:7f00:1]", "loopback", "127.0.0.1", "mapped"],
    ["::ffff:10.1.1.1", "private", "10.1.1.1", "mapped"],
    ["::ffff:a9fe:a9fe", "metadata", "169.254.169.254", "mapped"],
    ["::ffff:93.184.216.34", "public", "93.184.216.34", "mapped"],
    ["::ffff:0:7f00:1", "loopback", "127.0.0.1", "translated"],
    // IPv4-compatible
    ["::127.0.0.1", "loopback", "127.0.0.1", "compatible"],
    ["::7f00:1", "loopback", "127.0.0.1", "compatible"],
    ["::a9fe:a9fe", "metadata", "169.254.169.254", "compatible"],
    ["::c0a8:1", "private", "192.168.0.1", "compatible"],
    // 6to4 2002:AABB:CCDD::/48 embeds AA.BB.CC.DD
    ["2002:7f00:1::1", "loopback", "127.0.0.1", "6to4"],
    ["2002:a9fe:a9fe::", "metadata", "169.254.169.254", "6to4"],
    ["2002:0a00:0001:1::5", "private", "10.0.0.1", "6to4"],
    ["2002:5db8:d822::1", "public", "93.184.216.34", "6to4"],
    // Teredo 2001:0:<server v4>:<flags>:<port ^ ffff>:<client v4 ^ ffffffff>
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback", "127.0.0.1", "teredo"],
    ["2001::4136:e378:8000:63bf:5601:5601", "metadata", "169.254.169.254", "teredo"],
    ["2001:0:4136:e378:8000:63bf:a247:27dd", "public", "93.184.216.34", "teredo"],
    ["2001:0:a00:1:8000:63bf:a247:27dd", "private", "93.184.216.34", "teredo"], // server 10.0.0.1
    // NAT64
    ["64:ff9b::7f00:1", "loopback", "127.0.0.1", "nat64"],
    ["64:ff9b::127.0.0.1", "loopback", "127.0.0.1", "nat64"],
    ["64:ff9b::a00:1", "private", "10.0.0.1", "nat64"],
    ["64:ff9b::5db8:d822", "public", "93.184.216.34", "nat64"],
    ["64:ff9b:1::5db8:d822", "private", undefined, "nat64"],
    // garbage
    ["not-an-ip", "reserved", undefined, undefined],
    ["1.2.3.4.5", "reserved", undefined, undefined],
    ["1:2:3:4:5:6:7:8:9", "reserved", undefined, undefined],
  ])("%s -> %s (%s via %s)", (ip, kind, ipv4, via) => {
    const v = classifyAddress(ip);
    expect(v.kind).toBe(kind);
    expect(v.ipv4).toBe(ipv4);
    expect(v.via).toBe(via);
  });

  it("parseIpv4 rejects out-of-range parts", () => {
    expect(parseIpv4("256.0.0.1")).toBeNull();
    expect(parseIpv4("1.2.65536")).toBeNull();
    expect(parseIpv4("0x100000000")).toBeNull();
    expect(parseIpv4("08.0.0.1")).toBeNull();
  });
});

describe("isForbiddenAddress: ALLOW_INSECURE_CALLBACKS allows loopback only", () => {
  it.each([
    ["127.0.0.1", true, false],
    ["127.9.9.9", true, false],
    ["::1", true, false],
    ["::ffff:7f00:1", true, false],
    // loopback through a tunnel or translation form is never a development need
    ["::7f00:1", true, true],
    ["2002:7f00:1::1", true, true],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", true, true],
    ["64:ff9b::7f00:1", true, true],
    // private, link-local, metadata, reserved: never
    ["10.0.0.1", true, true],
    ["172.16.0.1", true, true],
    ["192.168.1.1", true, true],
    ["100.64.0.1", true, true],
    ["169.254.169.254", true, true],
    ["169.254.3.3", true, true],
    ["fd00:ec2::254", true, true],
    ["fc00::1", true, true],
    ["fe80::1", true, true],
    ["0.0.0.0", true, true],
    ["93.184.216.34", true, false],
    // without the flag, loopback is forbidden too
    ["127.0.0.1", false, true],
    ["::1", false, true],
    ["::ffff:7f00:1", false, true],
    ["93.184.216.34", false, false],
  ])("%s (insecure=%s) -> forbidden %s", (ip, insecure, want) => {
    expect(isForbiddenAddress(ip, insecure)).toBe(want);
  });
});

const resolvesTo =
  (...addresses: string[]) =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

async function refusal(url: string, insecure = false, lookup = resolvesTo("93.184.216.34")) {
  try {
    await checkOutboundUrl(url, { allowInsecure: insecure, field: "body.webhook_url", lookup });
  } catch (e) {
    if (isCoreError(e) && e.code === "VALIDATION_ERROR") return e.extras.details?.[0]?.path;
    throw e;
  }
  return null;
}

describe("checkOutboundUrl", () => {
  it.each([
    "https://[::127.0.0.1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[2002:7f00:1::1]/hook",
    "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",
    "https://[64:ff9b::7f00:1]/hook",
    "https://[64:ff9b:1::1]/hook",
    "https://[fd00:ec2::254]/latest/meta-data",
    "https://[fe80::1]/",
    "https://[::]/",
    "https://2130706433/hook",
    "https://0x7f000001/hook",
    "https://0177.0.0.1/hook",
    "https://127.1/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://0xa9.0xfe.0xa9.0xfe/",
    "https://10.1.2.3/",
    "https://localhost/hook",
    "https://localhost./hook",
    "https://api.localhost/hook",
  ])("refuses %s (ALLOW_INSECURE_CALLBACKS off)", async (url) => {
    expect(await refusal(url)).toBe("body.webhook_url");
  });

  it.each([
    "http://10.0.0.1/hook",
    "http://192.168.1.10/hook",
    "http://172.20.0.2/hook",
    "http://100.64.1.1/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://[fd00:ec2::254]/",
    "http://[fc00::1]/",
    "http://[fe80::1]/",
    "http://[::127.0.0.1]/",
    "http://[2002:7f00:1::1]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://0.0.0.0:8080/",
  ])("refuses %s even with ALLOW_INSECURE_CALLBACKS (loopback only)", async (url) => {
    expect(await refusal(url, true)).toBe("body.webhook_url");
  });

  it.each([["http://127.0.0.1:9000/hook"], ["http://[::1]:9000/hook"], ["http://localhost:9000/hook"]])(
    "ALLOW_INSECURE_CALLBACKS allows http and loopback: %s",
    async (url) => {
      expect(await refusal(url, true, resolvesTo("127.0.0.1", "::1"))).toBeNull();
    },
  );

  it("names are checked on every address they resolve to (any forbidden one refuses)", async () => {
    expect(await refusal("https://hooks.example.com/x", false, resolvesTo("93.184.216.34", "2002:7f00:1::1"))).toBe(
      "body.webhook_url",
    );
    expect(await refusal("https://hooks.example.com/x", false, resolvesTo("::ffff:a9fe:a9fe"))).toBe(
      "body.webhook_url",
    );
    expect(await refusal("https://hooks.example.com/x", true, resolvesTo("10.0.0.5"))).toBe("body.webhook_url");
    expect(await refusal("https://hooks.example.com/x", false, resolvesTo("2606:2800:220:1::1"))).toBeNull();
  });

  it("refuses http, credentials, unresolvable names and over-long URLs; returns the normalised URL", async () => {
    expect(await refusal("http://hooks.example.com/x")).toBe("body.webhook_url");
    expect(await refusal("ftp://hooks.example.com/x", true)).toBe("body.webhook_url");
    expect(await refusal("https://u:p@hooks.example.com/x")).toBe("body.webhook_url");
    expect(await refusal(`https://hooks.example.com/${"a".repeat(2100)}`)).toBe("body.webhook_url");
    expect(
      await refusal("https://nowhere.example/x", false, async () => {
        throw new Error("ENOTFOUND");
      }),
    ).toBe("body.webhook_url");
    expect(
      await checkOutboundUrl("https://Hooks.Example.com/x?y=1", {
        allowInsecure: false,
        field: "body.webhook_url",
        lookup: resolvesTo("93.184.216.34"),
      }),
    ).toBe("https://hooks.example.com/x?y=1");
  });
});

describe("pinnedLookup: delivery connects only to the addresses it just checked (DNS rebinding)", () => {
  let server: http.Server;
  let port = 0;
  let hits = 0;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.end("ok");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  // a resolver that answered "public" at validation time and now answers loopback (rebinding)
  const rebound = ((_h: string, _o: unknown, cb: (e: Error | null, a: { address: string; family: number }[]) => void) =>
    cb(null, [{ address: "127.0.0.1", family: 4 }])) as never;

  const get = (allowInsecure: boolean) =>
    new Promise<string>((resolve) => {
      const req = http.request(
        { host: "hooks.rebind.test", port, path: "/", lookup: pinnedLookup(allowInsecure, rebound), agent: false },
        (res) => {
          res.resume();
          res.on("end", () => resolve(`HTTP ${res.statusCode}`));
        },
      );
      req.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      req.end();
    });

  it("refuses to connect when the name now resolves inward, and connects to the checked address otherwise", async () => {
    expect(await get(false)).toBe("EFORBIDDEN");
    expect(hits).toBe(0);
    expect(await get(true)).toBe("HTTP 200"); // loopback allowed with ALLOW_INSECURE_CALLBACKS
    expect(hits).toBe(1);
  });
});
