// The DevTools guard's answers when it cannot be installed (the working rule itself is exercised on a
// real desktop in local-desktop.test.ts): the provider keeps running and says why, once.
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { guardDevtoolsPorts } from "../src/devtools-guard";
import { ephemeralPortOverlaps, LocalDesktopProvider } from "../src/local-desktop-provider";

describe("DevTools guard", () => {
  it("reports a missing iptables instead of failing", async () => {
    const st = await guardDevtoolsPorts([40_100, 40_899], 0, () =>
      Promise.reject(Object.assign(new Error("spawn iptables ENOENT"), { code: "ENOENT" })),
    );
    expect(st).toEqual({ enforced: false, reason: "iptables is not installed" });
  });

  it("reports a rule the kernel refuses, with iptables' own words", async () => {
    const st = await guardDevtoolsPorts([40_100, 40_899], 0, async (args) => ({
      code: args[0] === "-A" ? 2 : 0,
      signal: null,
      stdout: Buffer.alloc(0),
      stderr: args[0] === "-A" ? "iptables: Extension owner revision 0 not supported" : "",
      timedOut: false,
      overflow: false,
    }));
    expect(st.enforced).toBe(false);
    expect(!st.enforced && st.reason).toContain("owner revision 0 not supported");
  });

  it.each([[[0, 10]], [[500, 400]], [[65_000, 70_000]]] as const)("refuses the port range %j", async (range) => {
    const st = await guardDevtoolsPorts([range[0], range[1]], 0, () => Promise.reject(new Error("not called")));
    expect(st).toMatchObject({ enforced: false, reason: expect.stringContaining("invalid port range") });
  });

  it("a provider with the guard turned off warns once and says so", async () => {
    const warnings: string[] = [];
    const p = new LocalDesktopProvider({
      rootDir: path.join(os.tmpdir(), "cua-guard-off"),
      devtoolsGuard: false,
      onWarning: (m) => warnings.push(m),
    });
    expect(await p.devtoolsIsolation()).toEqual({ enforced: false, reason: "disabled by configuration" });
    await p.devtoolsIsolation();
    expect(warnings).toEqual([
      "machines: DevTools ports 29100-29899 are not guarded (disabled by configuration); any local user can drive the desktops' browsers",
    ]);
  });

  it("the default port ranges stay below the ephemeral range, so an ephemeral listener is never guarded", () => {
    const warnings: string[] = [];
    new LocalDesktopProvider({ rootDir: path.join(os.tmpdir(), "cua-guard-off"), onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([]);
    // what the old bases (40000+) did on a Linux default ip_local_port_range
    expect(ephemeralPortOverlaps({ DevTools: [40_100, 40_899], VNC: [30_100, 30_899] }, [32_768, 60_999])).toEqual([
      "DevTools ports 40100-40899",
    ]);
  });

  it("a provider configured into the ephemeral range warns at construction", () => {
    const warnings: string[] = [];
    new LocalDesktopProvider({
      rootDir: path.join(os.tmpdir(), "cua-guard-off"),
      devtoolsPortBase: 40_000,
      onWarning: (m) => warnings.push(m),
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("DevTools ports 40100-40899 overlap the host's ephemeral port range");
  });
});
