// Issue 10, failures 1 and 6, at the provider: a desktop that cannot start is an error with a message
// naming the missing piece (never an unhandled 'error' event that ends the process), readiness tells
// the truth, a machine without a handle can still be cleaned up, and terminate removes user and home.
// Real programs and real Xvfb desktops (root and the packages of scripts/install-desktop-deps.sh).

import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CoreError } from "@cua/base/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRequirements, REQUIREMENTS, resolveBinary } from "../src/desktop-requirements.ts";
import { LocalDesktopProvider } from "../src/local-desktop-provider.ts";
import { processesOfUid, reapUid, SpawnError, spawnDaemon } from "../src/process-utils.ts";
import type { MachineHandle } from "../src/provider.ts";

if (process.getuid?.() !== 0 || !existsSync("/usr/bin/Xvfb"))
  throw new Error("real-desktop tests need root and the packages of scripts/install-desktop-deps.sh");

function userExists(name: string): boolean {
  try {
    execFileSync("id", ["-u", name], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

async function rejection(p: Promise<unknown>): Promise<CoreError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof CoreError) return e;
    throw e;
  }
  throw new Error("expected a rejection");
}

const FIRST_DISPLAY = 700 + (process.pid % 100);
const uuid = () => crypto.randomUUID();

describe("desktop start failures and cleanup (issue 10)", () => {
  let root: string;
  let binDir: string;
  const providers: LocalDesktopProvider[] = [];
  const make = (extra: Partial<ConstructorParameters<typeof LocalDesktopProvider>[0]> = {}) => {
    const p = new LocalDesktopProvider({
      rootDir: root,
      displayRange: [FIRST_DISPLAY, FIRST_DISPLAY + 40],
      devtoolsGuard: false,
      onWarning: () => {},
      startTimeoutMs: 15_000,
      ...extra,
    });
    providers.push(p);
    return p;
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "cua-machines-fail-"));
    // a PATH with every program of the provider except Xvfb
    // not under /tmp: an isolated machine has a /tmp of its own and would not find the programs
    binDir = await mkdtemp("/var/lib/cua-bin-");
    await chmod(binDir, 0o755);
    for (const r of REQUIREMENTS) {
      const found = resolveBinary(r.binary);
      if (found && r.binary !== "Xvfb") await symlink(found, path.join(binDir, r.binary));
    }
  });

  afterAll(async () => {
    for (const p of providers) await p.close();
    await rm(root, { recursive: true, force: true });
    await rm(binDir, { recursive: true, force: true });
  });

  it("a program that cannot be spawned is a thrown SpawnError, not an unhandled 'error' event", async () => {
    const user = { name: "root", uid: 0, gid: 0, home: "/" };
    expect(() =>
      spawnDaemon(user, "/nonexistent/Xvfb", [":1"], { env: {}, logFile: path.join(root, "spawn.log") }),
    ).toThrow(SpawnError);
    // the 'error' event fires on a later tick; an unhandled one would end this worker and fail the file
    await new Promise((r) => setTimeout(r, 200));
    expect(process.exitCode ?? 0).toBe(0);
  });

  it("checkRequirements names each missing program with its Debian package", () => {
    const r = checkRequirements(binDir, { chromium: "/nonexistent/chromium" });
    expect(r.missing.map((m) => [m.binary, m.package])).toEqual([
      ["Xvfb", "xvfb"],
      ["chromium", "chromium"],
    ]);
    expect(checkRequirements().missing).toEqual([]);
  });

  it("PATH without Xvfb: not ready, provisioning fails naming xvfb, and no user or home is left", async () => {
    const p = make({ searchPath: binDir });
    const ready = p.readiness();
    expect(ready).toMatchObject({ ready: false, machines_ready: true, root: true });
    expect(ready.missing.map((m) => m.binary)).toEqual(["Xvfb"]);
    expect(ready.detail).toContain("Xvfb (Debian package xvfb)");
    const id = uuid();
    const e = await rejection(p.provision({ machineId: id }));
    expect(e.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(e.message).toMatch(/missing Xvfb \(Debian package xvfb\).*install-desktop-deps\.sh/);
    expect(userExists(p.userNameFor(id))).toBe(false);
    expect(existsSync(path.join(root, p.userNameFor(id)))).toBe(false);
    // a machine without a desktop needs none of the desktop programs
    const h = await p.provision({ machineId: uuid(), desktopEnabled: false });
    expect(h.status).toBe("running");
    await p.terminate(h);
  });

  // issue 15: the file manager and text editor are extras of the desktop, reported but never blocking it
  it("PATH without the file manager and the text editor: ready, health names them, the desktop starts", async () => {
    const dir = await mkdtemp("/var/lib/cua-bin-noextras-");
    await chmod(dir, 0o755);
    try {
      for (const r of REQUIREMENTS) {
        const found = resolveBinary(r.binary);
        if (found && r.binary !== "pcmanfm" && r.binary !== "mousepad") await symlink(found, path.join(dir, r.binary));
      }
      const p = make({ searchPath: dir });
      const ready = p.readiness();
      expect(ready).toMatchObject({ ready: true, machines_ready: true });
      expect(ready.missing.map((m) => [m.binary, m.package, m.role])).toEqual([
        ["pcmanfm", "pcmanfm", "extra"],
        ["mousepad", "mousepad", "extra"],
      ]);
      expect(ready.detail).toBe("Desktops can start; pcmanfm (pcmanfm), mousepad (mousepad) missing for extra.");
      const h = await p.provision({ machineId: uuid() });
      expect(h.status).toBe("running");
      await p.terminate(h);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("probe: a Chromium that does not run is reported before any machine is created; the real programs run", async () => {
    const fake = path.join(binDir, "broken-chromium");
    await writeFile(
      fake,
      "#!/bin/sh\necho 'broken-chromium: error while loading shared libraries: libgbm.so.1: cannot open shared object file' >&2\nexit 127\n",
      { mode: 0o755 },
    );
    const p = make({ chromiumPath: fake });
    expect(p.readiness()).toMatchObject({ ready: true, programs_run: null }); // found, not tried yet
    await p.probe();
    const r = p.readiness();
    expect(r).toMatchObject({ ready: false, programs_run: false });
    expect(r.detail).toContain(`chromium (${fake}) does not run here (exit 127)`);
    expect(r.detail).toContain("libgbm.so.1");
    const good = make();
    await good.probe();
    expect(good.readiness()).toMatchObject({ ready: true, programs_run: true });
  }, 60_000);

  it("Chromium that exits before DevTools: the error quotes its last output; readiness reports the failed start", async () => {
    const fake = path.join(binDir, "fake-chromium");
    await writeFile(
      fake,
      "#!/bin/sh\necho 'fake-chromium: error while loading shared libraries: libnss3.so: cannot open shared object file' >&2\nexit 127\n",
      { mode: 0o755 },
    );
    const p = make({ chromiumPath: fake });
    expect(p.readiness().ready).toBe(true);
    const id = uuid();
    const e = await rejection(p.provision({ machineId: id }));
    expect(e.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(e.message).toContain("Chromium did not open its DevTools endpoint (it exited)");
    expect(e.message).toContain("libnss3.so: cannot open shared object file");
    const ready = p.readiness();
    expect(ready.ready).toBe(false);
    expect(ready.last_desktop_start?.ok).toBe(false);
    expect(ready.detail).toContain("libnss3.so");
    // provisioning cleaned up after itself
    expect(userExists(p.userNameFor(id))).toBe(false);
    expect(existsSync(path.join(root, p.userNameFor(id)))).toBe(false);
  }, 60_000);

  it("a Chromium that finds no usable sandbox: the message says how to fix the host or turn the sandbox off", async () => {
    const fake = path.join(binDir, "nosandbox-chromium");
    await writeFile(
      fake,
      "#!/bin/sh\necho '[1:1:FATAL:zygote_host_impl_linux.cc(127)] No usable sandbox! If you are running on Ubuntu 23.10+ ...' >&2\nexit 133\n",
      { mode: 0o755 },
    );
    const e = await rejection(make({ chromiumPath: fake }).provision({ machineId: uuid() }));
    expect(e.message).toContain("No usable sandbox!");
    expect(e.message).toContain("unprivileged user namespaces");
    expect(e.message).toContain("MACHINE_CHROMIUM_SANDBOX=0");
  }, 60_000);

  it("forget removes the user and home of a machine that has no handle; listMachineIds finds them first", async () => {
    const p = make();
    const id = uuid();
    await p.provision({ machineId: id, desktopEnabled: false }); // the handle is "lost" (never stored)
    expect(await p.listMachineIds()).toContain(id);
    const r = await p.forget(id);
    expect(r).toMatchObject({ machine_id: id, terminated: true, leftover_processes: 0 });
    expect(userExists(p.userNameFor(id))).toBe(false);
    expect(existsSync(path.join(root, p.userNameFor(id)))).toBe(false);
    expect(await p.listMachineIds()).not.toContain(id);
    await p.forget(id); // idempotent
  });

  it("a desktop killed behind the provider's back: reconcile says stopped; terminate removes user, home and processes", async () => {
    const p = make();
    const id = uuid();
    const h = (await p.provision({ machineId: id })) as MachineHandle & { uid: number; user: string };
    expect(h.status).toBe("running");
    expect(await reapUid(h.uid, 500)).toBe(0);
    const [r] = await p.reconcile([h]);
    expect(r).toMatchObject({ status: "stopped", changed: true });
    await expect(p.screenshot(r!.handle)).rejects.toMatchObject({ code: "INVALID_STATE" });
    const started = await p.start(r!.handle);
    expect(started.status).toBe("running");
    await reapUid(h.uid, 500);
    const t = await p.terminate(started);
    expect(t.leftover_processes).toBe(0);
    expect(await processesOfUid(h.uid, true)).toHaveLength(0);
    expect(userExists(h.user)).toBe(false);
    expect(existsSync(path.join(root, h.user))).toBe(false);
  }, 90_000);
});
