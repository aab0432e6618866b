import { CoreError } from "@cua/base/errors";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MockMachineProvider } from "../src/mock-provider.ts";
import { decodePng, distinctColors, encodePng, pngSize, Raster, RectCanvas } from "../src/png.ts";
import type { MachineHandle } from "../src/provider.ts";

async function rejection(p: Promise<unknown>): Promise<CoreError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof CoreError) return e;
    throw e;
  }
  throw new Error("expected a rejection");
}

async function machine(id = "mch_test_00aa", provider = new MockMachineProvider()) {
  const handle = await provider.provision({ machineId: id, displayName: "m", screen: { width: 640, height: 400 } });
  return { provider, handle };
}

describe("png codec", () => {
  it("round-trips pixels", () => {
    const r = new Raster(7, 5, [10, 20, 30]);
    r.fillRect(2, 1, 3, 2, [200, 100, 50]);
    const png = encodePng(r);
    expect(pngSize(png)).toEqual({ width: 7, height: 5 });
    const back = decodePng(png);
    expect(back.getPixel(0, 0)).toEqual([10, 20, 30, 255]);
    expect(back.getPixel(3, 2)).toEqual([200, 100, 50, 255]);
    expect(distinctColors(back)).toBe(2);
  });

  it("RectCanvas gives the image of drawing the same rectangles on a Raster: indexed up to 256 colours, else encodePng's bytes", () => {
    const rgb = fc.tuple(
      fc.integer({ min: 0, max: 255 }),
      fc.integer({ min: 0, max: 255 }),
      fc.integer({ min: 0, max: 255 }),
    );
    const coord = fc.double({ min: -20, max: 90, noNaN: true });
    const size = fc.double({ min: -5, max: 60, noNaN: true });
    const rect = fc.tuple(coord, coord, size, size, rgb);
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 70 }),
        fc.integer({ min: 1, max: 50 }),
        rgb,
        fc.array(rect, { maxLength: 40 }),
        (w, h, fill, rects) => {
          const a = new Raster(w, h, fill);
          const b = new RectCanvas(w, h, fill);
          for (const [x, y, rw, rh, c] of rects) {
            a.fillRect(x, y, rw, rh, c);
            b.fillRect(x, y, rw, rh, c);
          }
          const png = b.toPng(3);
          expect(png[25]).toBe(3); // IHDR colour type: indexed
          expect(decodePng(png).data.equals(decodePng(encodePng(a, 3)).data)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
    // more than 256 colours: RGB, byte for byte what encodePng writes
    const a = new Raster(40, 30, [1, 2, 3]);
    const b = new RectCanvas(40, 30, [1, 2, 3]);
    for (let i = 0; i < 300; i++) {
      const c: [number, number, number] = [i % 256, (i * 7) % 256, (i * 13) % 256];
      a.fillRect(i % 40, Math.floor(i / 10), 3, 2, c);
      b.fillRect(i % 40, Math.floor(i / 10), 3, 2, c);
    }
    expect(b.toPng(3).equals(encodePng(a, 3))).toBe(true);
  });
});

describe("mock provider", () => {
  it("provisions a running machine with the handle shape", async () => {
    const { handle } = await machine();
    expect(handle).toMatchObject({
      provider: "mock",
      machine_id: "mch_test_00aa",
      status: "running",
      screen: { width: 640, height: 400 },
      desktop_enabled: true,
    });
    expect(JSON.parse(JSON.stringify(handle))).toEqual(handle);
  });

  it("draws the cursor where the last move put it", async () => {
    const { provider, handle } = await machine();
    await provider.execute(handle, "move", { x: 100, y: 120 });
    const shot = await provider.screenshot(handle);
    expect([shot.width, shot.height, shot.mime_type]).toEqual([640, 400, "image/png"]);
    const img = decodePng(shot.png);
    expect(img.getPixel(100, 125).slice(0, 3)).toEqual([255, 255, 255]);
    await provider.execute(handle, "move", { x: 300, y: 300 });
    const img2 = decodePng((await provider.screenshot(handle)).png);
    expect(img2.getPixel(100, 125)).not.toEqual(img.getPixel(100, 125));
    expect(img2.getPixel(300, 305).slice(0, 3)).toEqual([255, 255, 255]);
  });

  it("is deterministic for the same machine id and calls", async () => {
    const run = async () => {
      const { provider, handle } = await machine("mch_test_d00d");
      const out: unknown[] = [];
      out.push(await provider.execute(handle, "click", { x: 10, y: 10 }));
      out.push(await provider.browser(handle, "navigate", { url: "https://example.com/a" }));
      out.push(await provider.browser(handle, "clickables", {}));
      out.push(await provider.files(handle, "write", { path: "a.txt", content: "hi" }));
      out.push(await provider.files(handle, "list", {}));
      out.push(await provider.terminal(handle, { command: "echo hi && pwd" }));
      const shot = await provider.screenshot(handle);
      return { out: JSON.stringify(out, (k, v) => (k === "duration_ms" ? 0 : v)), png: shot.png.toString("base64") };
    };
    const a = await run();
    const b = await run();
    expect(a.out).toBe(b.out);
    expect(a.png).toBe(b.png);
  });

  it("gives shape-correct results for every action command", async () => {
    const { provider, handle } = await machine();
    const calls: [string, unknown][] = [
      ["click", { x: 1, y: 2 }],
      ["double_click", { x: 1, y: 2 }],
      ["right_click", { x: 1, y: 2 }],
      ["move", { x: 3, y: 4 }],
      ["type", { text: "hello" }],
      ["key_press", { keys: ["enter"] }],
      ["key_combo", { keys: ["ctrl", "c"] }],
      ["scroll", { clicks: -2 }],
      ["drag", { x1: 1, y1: 1, x2: 5, y2: 5 }],
      ["wait", { seconds: 0 }],
      ["screenshot", {}],
      ["browser_navigate", { url: "https://example.com" }],
      ["browser_click", { selector: "#submit" }],
      ["browser_type", { selector: "#q", text: "abc" }],
      ["browser_execute", { script: "document.title" }],
      ["terminal_execute", { command: "echo x" }],
      ["file_write", { path: "f.txt", content: "data" }],
      ["file_read", { path: "f.txt" }],
    ];
    for (const [cmd, params] of calls) {
      const r = await provider.execute(handle, cmd, params);
      expect(r, cmd).toMatchObject({ command: cmd, success: true, error: null });
      expect(typeof r.duration_ms).toBe("number");
    }
    const shot = await provider.execute(handle, "screenshot", {});
    expect(Buffer.from(String(shot.result.image_b64), "base64").subarray(1, 4).toString()).toBe("PNG");
    expect((await provider.execute(handle, "browser_execute", { script: "document.title" })).result).toEqual({
      value: "Mock page: example.com",
      type: "string",
    });
    expect((await provider.execute(handle, "file_read", { path: "f.txt" })).result).toMatchObject({
      content: "data",
      size: 4,
    });
  });

  it("reflects typing in the page's dom", async () => {
    const { provider, handle } = await machine();
    await provider.browser(handle, "navigate", { url: "https://example.com" });
    await provider.browser(handle, "type", { selector: "#q", text: "cats" });
    const dom = await provider.browser(handle, "dom", {});
    expect(dom.result.html).toContain('value="cats"');
    const miss = await provider.browser(handle, "click", { selector: "#nope" });
    expect(miss).toMatchObject({ success: false, error: { code: "ELEMENT_NOT_FOUND" } });
  });

  it("manages tabs", async () => {
    const { provider, handle } = await machine();
    const t2 = await provider.browser(handle, "open-tab", { url: "https://b.example" });
    const list = await provider.browser(handle, "list-tabs", {});
    expect(list.result.tabs).toHaveLength(2);
    expect(list.result.active_tab_id).toBe(t2.result.tab_id);
    await provider.browser(handle, "switch-tab", { tab_id: "tab-1" });
    expect((await provider.browser(handle, "state", {})).result.tab_id).toBe("tab-1");
    expect((await provider.browser(handle, "close-tab", { tab_id: String(t2.result.tab_id) })).success).toBe(true);
    expect((await provider.browser(handle, "switch-tab", { tab_id: "tab-99" })).error?.code).toBe("TAB_NOT_FOUND");
  });

  it("terminal keeps cwd and env per session and caps output at 5000 characters", async () => {
    const { provider, handle } = await machine();
    await provider.terminal(handle, { command: "mkdir proj && cd proj && export X=42", session_id: "s1" });
    const r = await provider.terminal(handle, { command: "pwd; echo $X", session_id: "s1" });
    expect(r.result.output).toBe("/home/user/proj\n42\n");
    const fresh = await provider.terminal(handle, { command: "pwd" });
    expect(fresh.result).toMatchObject({ output: "/home/user\n", session_id: null });
    const big = await provider.terminal(handle, { command: "seq 1 5000" });
    expect(String(big.result.output)).toHaveLength(5000);
    expect(big.result.truncated).toBe(true);
    const slow = await provider.terminal(handle, { command: "sleep 5", timeout_ms: 1000 });
    expect(slow).toMatchObject({ success: false, error: { code: "TIMEOUT" }, result: { timed_out: true } });
  });

  it("file ops: all eleven, and escapes are 422", async () => {
    const { provider, handle } = await machine();
    const f = (op: string, p: unknown) => provider.files(handle, op, p);
    expect((await f("write", { path: "d/a.txt", content: "one two one" })).result).toEqual({
      path: "d/a.txt",
      size: 11,
      created: true,
    });
    expect((await f("append", { path: "d/a.txt", content: "!" })).result).toMatchObject({
      size: 12,
      appended_bytes: 1,
    });
    expect((await f("edit", { path: "d/a.txt", old_text: "one", new_text: "1" })).error?.code).toBe(
      "EDIT_TEXT_AMBIGUOUS",
    );
    expect(
      (await f("edit", { path: "d/a.txt", old_text: "one", new_text: "1", replace_all: true })).result,
    ).toMatchObject({ replacements: 2 });
    expect((await f("read", { path: "d/a.txt" })).result.content).toBe("1 two 1!");
    expect((await f("read", { path: "d/a.txt", encoding: "base64" })).result.content).toBe(
      Buffer.from("1 two 1!").toString("base64"),
    );
    expect((await f("exists", { path: "d" })).result).toEqual({ path: "d", exists: true, type: "directory" });
    expect((await f("list", { path: "d" })).result.entries).toMatchObject([
      { path: "d/a.txt", name: "a.txt", type: "file", size: 8 },
    ]);
    expect((await f("list-directory", { path: "d/a.txt" })).error?.code).toBe("NOT_A_DIRECTORY");
    expect((await f("download", { url: "https://example.com/file.zip" })).result).toMatchObject({
      path: "Downloads/file.zip",
    });
    expect((await f("download", { url: "https://example.com/file.zip" })).result).toMatchObject({
      path: "Downloads/file (1).zip",
    });
    expect(((await f("list-downloads", {})).result.entries as unknown[]).length).toBe(2);
    expect((await f("delete", { path: "d" })).error?.code).toBe("IS_A_DIRECTORY");
    expect((await f("delete-directory", { path: "d" })).error?.code).toBe("DIRECTORY_NOT_EMPTY");
    expect((await f("delete-directory", { path: "d", recursive: true })).result).toMatchObject({ deleted: true });
    expect((await f("read", { path: "d/a.txt" })).error?.code).toBe("FILE_NOT_FOUND");
    // relative paths may not leave the home; absolute paths reach what the machine's user may touch
    // (DECISIONS.md "Compatibility amendments": file paths)
    for (const path of ["../x", "a/../../b"]) {
      expect((await rejection(f("read", { path }))).code).toBe("VALIDATION_ERROR");
    }
    expect((await f("write", { path: "/tmp/out/report.txt", content: "r" })).result).toMatchObject({
      path: "/tmp/out/report.txt",
    });
    expect((await f("read", { path: "/tmp/out/report.txt" })).result.content).toBe("r");
    expect((await f("write", { path: "/etc/passwd", content: "x" })).error?.code).toBe("PERMISSION_DENIED");
    expect((await f("read", { path: "/etc/passwd" })).error?.code).toBe("FILE_NOT_FOUND");
    expect((await rejection(f("delete-directory", { path: "." }))).code).toBe("VALIDATION_ERROR");
    expect((await rejection(f("rename", { path: "x" }))).code).toBe("UNKNOWN_FILE_OP");
  });

  it("stop/start keeps files; actions on a stopped machine are 409 INVALID_STATE", async () => {
    const { provider, handle } = await machine();
    await provider.files(handle, "write", { path: "keep.txt", content: "k" });
    const stopped = await provider.stop(handle);
    const e = await rejection(provider.execute(stopped, "click", { x: 1, y: 1 }));
    expect(e.code).toBe("INVALID_STATE");
    expect(e.extras).toEqual({ current_state: "stopped", allowed_from: ["running"] });
    expect((await rejection(provider.stop(stopped))).code).toBe("INVALID_STATE");
    const started = await provider.start(stopped);
    expect((await provider.files(started, "read", { path: "keep.txt" })).result.content).toBe("k");
  });

  it("snapshot then restore brings files back", async () => {
    const { provider, handle } = await machine();
    await provider.files(handle, "write", { path: "s.txt", content: "before" });
    const snap = await provider.snapshot(handle, "first");
    expect(snap.snapshot_id).toMatch(/^snap_[0-9a-f]{24}$/);
    await provider.files(handle, "write", { path: "s.txt", content: "after" });
    await provider.restoreFromSnapshot(handle, snap.snapshot_id);
    expect((await provider.files(handle, "read", { path: "s.txt" })).result.content).toBe("before");
  });

  it("desktop_enabled false: no screenshot, terminal still works", async () => {
    const provider = new MockMachineProvider();
    const handle: MachineHandle = await provider.provision({ machineId: "mch_test_ff", desktopEnabled: false });
    expect((await rejection(provider.screenshot(handle))).code).toBe("FEATURE_NOT_AVAILABLE");
    expect((await provider.terminal(handle, { command: "whoami" })).result.output).toBe("user\n");
  });

  it("connection answers without ssh", async () => {
    const { provider, handle } = await machine();
    const c = await provider.connection(handle);
    expect(c).toMatchObject({ ssh_port: null, ssh_username: null, ssh_private_key_pem: null, vnc_port: 5900 });
    expect(c.vnc_password).toHaveLength(8);
  });

  it("reconcile re-adopts handles from another provider instance", async () => {
    const { handle } = await machine();
    const other = new MockMachineProvider();
    const [r] = await other.reconcile([handle]);
    expect(r).toMatchObject({ machine_id: handle.machine_id, status: "running" });
    expect((await other.execute(handle, "move", { x: 1, y: 1 })).success).toBe(true);
  });
});
