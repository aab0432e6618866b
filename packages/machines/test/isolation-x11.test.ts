// Desktops do not see each other's X servers (docs/security.md "Desktop isolation"): a tenant's shell on
// one desktop lists only its own display's socket in /tmp/.X11-unix, finds no other display's abstract
// socket (@/tmp/.X11-unix/X<n>, per network namespace), and cannot open another desktop's display, not
// even with that desktop's own cookie in hand: its X server, and the screen it holds, are out of reach.
// The host still reaches every display (readiness, reconcile). Needs root and the desktop packages.

import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeDevtoolsGuard } from "../src/devtools-guard.ts";
import { DEFAULT_PORT_BASES, LocalDesktopProvider } from "../src/local-desktop-provider.ts";
import { canConnectUnix, processesOfUid, xServerDisplays } from "../src/process-utils.ts";
import type { MachineHandle } from "../src/provider.ts";

if (process.getuid?.() !== 0 || !existsSync("/usr/bin/Xvfb") || !existsSync("/usr/bin/xdpyinfo"))
  throw new Error("isolation tests need root and the packages of scripts/install-desktop-deps.sh");

const FIRST_DISPLAY = 400 + (process.pid % 100);

async function term(p: LocalDesktopProvider, h: MachineHandle, command: string): Promise<string> {
  const r = await p.terminal(h, { command, timeout_ms: 30_000 });
  return String(r.result.output ?? "");
}

describe("desktops cannot list or open each other's X displays", () => {
  let root: string;
  let provider: LocalDesktopProvider;
  let a: MachineHandle;
  let b: MachineHandle;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "cua-iso-x11-"));
    provider = new LocalDesktopProvider({ rootDir: root, displayRange: [FIRST_DISPLAY, 899] });
    const id = process.pid.toString(16);
    a = await provider.provision({
      machineId: `mch_x11_${id}a`,
      displayName: "a",
      screen: { width: 800, height: 600 },
    });
    b = await provider.provision({
      machineId: `mch_x11_${id}b`,
      displayName: "b",
      screen: { width: 800, height: 600 },
    });
  }, 120_000);

  afterAll(async () => {
    for (const h of [a, b]) if (h) await provider.terminate(h).catch(() => {});
    await provider?.close();
    await removeDevtoolsGuard([DEFAULT_PORT_BASES.devtools + FIRST_DISPLAY, DEFAULT_PORT_BASES.devtools + 899]);
    if (root) await rm(root, { recursive: true, force: true });
  }, 60_000);

  it("each desktop runs its own display; its shell opens that one", async () => {
    expect(a.display).not.toBeNull();
    expect(b.display).not.toBeNull();
    expect(a.display).not.toBe(b.display);
    for (const h of [a, b]) {
      const own = await term(provider, h, "xdpyinfo 2>&1 | grep -E '^name of display|dimensions'");
      expect(own).toContain(`name of display:    :${h.display}`);
      expect(own).toContain("800x600 pixels");
    }
  });

  it("a desktop's shell lists only its own X socket, as a file and as an abstract socket", async () => {
    const out = await term(
      provider,
      b,
      // /proc/net/unix: the unix sockets of the shell's network namespace, abstract ones with a leading @
      "ls -A /tmp/.X11-unix; echo ---; grep -o '@/tmp/.X11-unix/X[0-9]*' /proc/net/unix | sort -u",
    );
    const [files, abstract] = out.split("---\n").map((s) => s.trim());
    expect(files).toBe(`X${b.display}`);
    expect(abstract).toBe(`@/tmp/.X11-unix/X${b.display}`);
    // the host's own directory does not list the desktops' sockets either
    const hostDir = existsSync("/tmp/.X11-unix") ? readdirSync("/tmp/.X11-unix") : [];
    expect(hostDir).not.toContain(`X${a.display}`);
    expect(hostDir).not.toContain(`X${b.display}`);
  });

  it("a desktop's shell cannot connect to another desktop's X server, even holding its cookie", async () => {
    // the other desktop's cookie, handed to b's user (as if it had leaked)
    const cookie = await readFile(path.join(String(a.runtime_dir), "Xauthority"));
    await writeFile(path.join(String(b.home_dir), "a.xauth"), cookie, { mode: 0o644 });
    const out = await term(
      provider,
      b,
      [
        `xdpyinfo -display :${a.display} 2>&1 | head -3`,
        `XAUTHORITY=$HOME/a.xauth xdpyinfo -display :${a.display} 2>&1 | head -3`,
        `XAUTHORITY=$HOME/a.xauth xdpyinfo -display unix:${a.display} 2>&1 | head -3`,
        // the socket itself, by path and by abstract name
        `socat -u OPEN:/dev/null UNIX-CONNECT:/tmp/.X11-unix/X${a.display} 2>&1; echo exit=$?`,
        `socat -u OPEN:/dev/null ABSTRACT-CONNECT:/tmp/.X11-unix/X${a.display} 2>&1; echo exit=$?`,
        // a screenshot of the other display
        `XAUTHORITY=$HOME/a.xauth scrot -D :${a.display} /tmp/a.png 2>&1; ls /tmp/a.png 2>&1`,
      ].join("; echo ---; "),
    );
    const [ownCookie, tcpName, unixName, byPath, byAbstract, screenshot] = out.split("---\n").map((s) => s.trim());
    expect(ownCookie).toMatch(/unable to open display/);
    expect(tcpName).toMatch(/unable to open display/);
    expect(tcpName).not.toContain("name of display");
    expect(unixName).toMatch(/unable to open display/);
    expect(byPath).toMatch(/No such file or directory/);
    expect(byPath).toMatch(/exit=1$/);
    expect(byAbstract).toMatch(/Connection refused/);
    expect(byAbstract).toMatch(/exit=1$/);
    expect(screenshot).toMatch(/No such file or directory$/);
    // positive control: with the same cookie, a's own shell opens its display
    expect(await term(provider, a, "xdpyinfo 2>&1 | head -1")).toContain(`name of display:    :${a.display}`);
  });

  it("an X server a tenant starts itself does not take a display number from other machines", async () => {
    const n = 899 - (process.pid % 50);
    await term(
      provider,
      b,
      `setsid Xvfb :${n} -screen 0 64x64x8 -nolisten tcp >/dev/null 2>&1 & echo $! > /tmp/own-x.pid; for i in $(seq 50); do [ -S /tmp/.X11-unix/X${n} ] && break; sleep 0.1; done`,
    );
    try {
      // it runs (in b's namespace), yet only each machine's first X server counts for the host
      expect(await term(provider, b, "ls -A /tmp/.X11-unix")).toBe(`X${b.display}\nX${n}\n`);
      const used = await xServerDisplays();
      expect(used.has(Number(a.display)) && used.has(Number(b.display))).toBe(true);
      expect(used.has(n)).toBe(false);
    } finally {
      await term(provider, b, "kill $(cat /tmp/own-x.pid)");
    }
  });

  it("another provider on the host (another service process) picks a display no desktop uses", async () => {
    // the displays' sockets are not in the host's /tmp/.X11-unix any more: the running X servers count
    const other = new LocalDesktopProvider({ rootDir: root, displayRange: [FIRST_DISPLAY, 899] });
    const c = await other.provision({
      machineId: `mch_x11_${process.pid.toString(16)}c`,
      displayName: "c",
      screen: { width: 800, height: 600 },
    });
    try {
      expect(c.display).not.toBeNull();
      expect([a.display, b.display]).not.toContain(c.display);
      expect(await term(other, c, "ls -A /tmp/.X11-unix")).toBe(`X${c.display}\n`);
    } finally {
      await other.terminate(c);
      await other.close();
    }
  }, 120_000);

  it("the host still reaches every desktop's X server", async () => {
    for (const h of [a, b]) {
      const xvfb = (await processesOfUid(Number(h.uid))).find((p) => p.cmdline[1] === `:${h.display}`);
      expect(xvfb, `the Xvfb of :${h.display}`).toBeDefined();
      expect(await canConnectUnix(`/proc/${xvfb!.pid}/root/tmp/.X11-unix/X${h.display}`)).toBe(true);
    }
    // a reconcile (as after a service restart) re-adopts both desktops as running
    const fresh = new LocalDesktopProvider({ rootDir: root, displayRange: [FIRST_DISPLAY, 899] });
    try {
      const r = await fresh.reconcile([a, b]);
      expect(r.map((x) => [x.status, x.detail])).toEqual([
        ["running", expect.stringMatching(/re-adopted/)],
        ["running", expect.stringMatching(/re-adopted/)],
      ]);
    } finally {
      await fresh.close();
    }
  });
});
