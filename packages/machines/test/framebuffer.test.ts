// Screenshots from Xvfb's framebuffer file (framebuffer.ts): an XWD file as Xvfb writes it, read back as a PNG
// with the same pixels. The real Xvfb's file is compared with scrot in local-desktop.test.ts.

import { mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LastFrame, parseXwd, readFramebuffer, xwdToPng } from "../src/framebuffer.ts";
import { decodePng } from "../src/png.ts";

/** An XWD image laid out as Xvfb's 24-bit screen: big-endian header, 256 colormap entries, BGRX pixels. */
function xwd(width: number, height: number, pixel: (x: number, y: number) => [number, number, number]): Buffer {
  const headerSize = 100 + 16; // 25 fields, then the window name
  const ncolors = 256;
  const bpl = width * 4;
  const data = Buffer.alloc(headerSize + ncolors * 12 + bpl * height);
  const fields = [
    headerSize,
    7,
    2,
    24,
    width,
    height,
    0,
    0, // byte order LSBFirst
    32,
    0,
    32,
    32, // bits per pixel
    bpl,
    4, // TrueColor
    0xff0000,
    0xff00,
    0xff,
    8,
    256,
    ncolors,
    width,
    height,
    0,
    0,
    0,
  ];
  for (const [i, v] of fields.entries()) data.writeUInt32BE(v, i * 4);
  data.write("Xvfb test", 100, "latin1");
  const off = headerSize + ncolors * 12;
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y);
      const i = off + y * bpl + x * 4;
      data[i] = b;
      data[i + 1] = g;
      data[i + 2] = r;
    }
  return data;
}

const pattern = (x: number, y: number): [number, number, number] => [(x * 7) & 255, (y * 13) & 255, (x * y) & 255];

describe("framebuffer screenshots", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "cua-fb-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("encodes the XWD pixels as a PNG with the same pixels, with either row filter, any level, aligned or not", async () => {
    const file = xwd(37, 11, pattern);
    const layout = parseXwd(file)!;
    expect(layout).toMatchObject({ width: 37, height: 11, r: 2, g: 1, b: 0 });
    // the same file at an odd address: rows read byte by byte instead of as 32-bit words
    const unaligned = Buffer.concat([Buffer.alloc(1), file]).subarray(1);
    for (const [level, filter, data] of [
      [1, 1, file],
      [1, 0, file],
      [6, 1, file],
      [1, 1, unaligned],
      [1, 0, unaligned],
    ] as const) {
      const img = decodePng(await xwdToPng(data, layout, { level, filter }));
      expect([img.width, img.height]).toEqual([37, 11]);
      for (const [x, y] of [
        [0, 0],
        [36, 0],
        [5, 7],
        [36, 10],
      ] as const) {
        const i = (y * 37 + x) * 4;
        expect(Array.from(img.data.subarray(i, i + 4))).toEqual([...pattern(x, y), 255]);
      }
    }
  });

  it("refuses what is not a 24-bit TrueColor XWD, a file of another size, a link or another owner's file", async () => {
    const file = xwd(8, 4, pattern);
    const bad = Buffer.from(file);
    bad.writeUInt32BE(16, 11 * 4); // 16 bits per pixel
    expect(parseXwd(bad)).toBeNull();
    const wide = Buffer.from(file);
    wide.writeUInt32BE(0x7fffffff, 12 * 4); // bytes per line: a header asking for gigabytes
    expect(parseXwd(wide)).toBeNull();
    const p = path.join(dir, "Xvfb_screen0");
    await writeFile(p, file);
    const uid = process.getuid?.() ?? 0;
    const frame = await readFramebuffer(p, uid, { width: 8, height: 4 });
    expect(frame.layout.width).toBe(8);
    frame.release();
    await expect(readFramebuffer(p, uid, { width: 16, height: 4 })).rejects.toThrow(/8x4/);
    await expect(readFramebuffer(p, uid + 1, { width: 8, height: 4 })).rejects.toThrow(/regular file/);
    // a file grown past what its header announces: only the announced bytes are read
    await writeFile(p, Buffer.concat([file, Buffer.alloc(1 << 20, 7)]));
    const grown = await readFramebuffer(p, uid, { width: 8, height: 4 });
    expect(grown.data.length).toBe(file.length);
    grown.release();
    await writeFile(p, file.subarray(0, file.length - 10));
    await expect(readFramebuffer(p, uid, { width: 8, height: 4 })).rejects.toThrow(/shorter/);
    const link = path.join(dir, "link");
    await symlink(p, link);
    await expect(readFramebuffer(link, uid, { width: 8, height: 4 })).rejects.toThrow();
  });

  it("answers an unchanged screen with the PNG it already encoded, and a changed one with a new PNG", async () => {
    const p = path.join(dir, "Xvfb_screen0");
    const last = new LastFrame();
    const shot = async (f: Buffer) => {
      await writeFile(p, f);
      return last.encode(await readFramebuffer(p, process.getuid?.() ?? 0, { width: 20, height: 10 }));
    };
    const a = await shot(xwd(20, 10, pattern));
    const b = await shot(xwd(20, 10, pattern));
    expect(b).toBe(a);
    const c = await shot(xwd(20, 10, (x, y) => (x === 3 && y === 4 ? [1, 2, 3] : pattern(x, y))));
    expect(c).not.toBe(a);
    const img = decodePng(c);
    expect(Array.from(img.data.subarray((4 * 20 + 3) * 4, (4 * 20 + 3) * 4 + 3))).toEqual([1, 2, 3]);
    last.clear();
    expect(await shot(xwd(20, 10, pattern))).not.toBe(a);
  });
});
