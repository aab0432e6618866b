// Screenshots straight from Xvfb's framebuffer (issue 16). Xvfb started with `-fbdir <dir>` keeps its screen
// in a memory-mapped file, `<dir>/Xvfb_screen0`, in XWD format (a big-endian header, a colormap, then the
// pixels as the server stores them). Reading that file costs no process, no X round trip and no copy
// through the X socket; the PNG is encoded here, with zlib at a level tuned for speed (docs/machines-provider.md
// "Screenshots" has the measurements behind the choices).
//
// The file belongs to the machine's user (Xvfb writes it), so it is read like any file that user controls:
// without following links, a regular file owned by that uid, its header (the user's to write) bounded by the
// screen's size, and no more read than that header announces.
// The reader does not synchronise with the X server: a frame read while a client draws can mix the old
// and new contents of the region being drawn (an X GetImage would wait for the draw to finish).

import { closeSync, constants as fsc, fstatSync, openSync, read, readSync } from "node:fs";
import { promisify } from "node:util";
import zlib from "node:zlib";

const deflate = promisify(zlib.deflate);

/** Xvfb's name for screen 0's file in its -fbdir directory. */
export const FRAMEBUFFER_FILE = "Xvfb_screen0";

/** The pixel layout this reader understands: 32 bits per pixel, 8-bit channels, TrueColor. */
export interface XwdLayout {
  width: number;
  height: number;
  /** offset of the first pixel row (header + colormap) */
  dataOffset: number;
  bytesPerLine: number;
  /** byte index of red, green and blue inside a 4-byte pixel */
  r: number;
  g: number;
  b: number;
  /** header + colormap + pixels */
  fileSize: number;
}

const XWD_HEADER_MIN = 100; // 25 CARD32 fields, then the window name
const XWD_COLOR_SIZE = 12;

/** The layout of an XWD image, or null when it is not one this reader can convert (then: another capture). */
export function parseXwd(header: Buffer): XwdLayout | null {
  if (header.length < XWD_HEADER_MIN) return null;
  const f = (i: number) => header.readUInt32BE(i * 4);
  const [headerSize, version, format, depth, width, height] = [f(0), f(1), f(2), f(3), f(4), f(5)];
  const [byteOrder, bitsPerPixel, bytesPerLine, visualClass] = [f(7), f(11), f(12), f(13)];
  const [redMask, greenMask, blueMask, ncolors] = [f(14), f(15), f(16), f(19)];
  // version 7, ZPixmap, depth 24, 32 bpp, TrueColor (4) or DirectColor (5)
  if (version !== 7 || format !== 2 || depth !== 24 || bitsPerPixel !== 32) return null;
  if (visualClass !== 4 && visualClass !== 5) return null;
  // the header is the user's to write (the file is theirs): no row longer than the pixels and a little padding
  if (width < 1 || height < 1 || width > 16_384 || height > 16_384) return null;
  if (bytesPerLine < width * 4 || bytesPerLine > width * 4 + 64) return null;
  if (headerSize < XWD_HEADER_MIN || headerSize > 4096 || ncolors > 65_536) return null;
  // where each 8-bit channel sits in the pixel's bytes (byteOrder 0: least significant byte first)
  const index = (mask: number): number => {
    const shift = [0, 8, 16, 24].find((s) => mask >>> 0 === (0xff << s) >>> 0);
    if (shift === undefined) return -1;
    return byteOrder === 0 ? shift / 8 : 3 - shift / 8;
  };
  const [r, g, b] = [index(redMask), index(greenMask), index(blueMask)];
  if (r < 0 || g < 0 || b < 0) return null;
  const dataOffset = headerSize + ncolors * XWD_COLOR_SIZE;
  return { width, height, dataOffset, bytesPerLine, r, g, b, fileSize: dataOffset + bytesPerLine * height };
}

// Frames are megabytes: allocating two per shot kept the garbage collector at 15% of the API process under
// a screenshot loop (profiled), so the buffers are lent from a small pool and given back after encoding.
const POOL_MAX = 4;
const pool = new Map<number, Buffer[]>();
function borrow(size: number): Buffer {
  return pool.get(size)?.pop() ?? Buffer.allocUnsafeSlow(size);
}
function giveBack(buf: Buffer): void {
  const free = pool.get(buf.length) ?? [];
  if (free.length < POOL_MAX) free.push(buf);
  pool.set(buf.length, free);
}

/** A frame read from the file; `release()` gives its buffer back (use nothing of it afterwards). */
export interface Frame {
  layout: XwdLayout;
  data: Buffer;
  release(): void;
}

function readAt(fd: number, buf: Buffer, offset: number): Promise<number> {
  return new Promise((resolve, reject) =>
    read(fd, buf, offset, buf.length - offset, offset, (e, n) => (e ? reject(e) : resolve(n))),
  );
}

/**
 * Reads the framebuffer file of a machine's Xvfb: no symlinks, a regular file owned by `uid`, whose header
 * announces `expected` pixels wide and high and which holds at least what the header announces. Throws
 * otherwise. Only the announced size is read (the user may grow the file; the service reads no more).
 * Opening, checking and the header are synchronous (microseconds); the pixels are read on libuv's pool.
 */
export async function readFramebuffer(
  file: string,
  uid: number,
  expected: { width: number; height: number },
): Promise<Frame> {
  const fd = openSync(file, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  let data: Buffer | null = null;
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== uid) throw new Error("the framebuffer is not the machine's regular file");
    const header = Buffer.alloc(4096);
    const layout = parseXwd(header.subarray(0, readSync(fd, header, 0, header.length, 0)));
    if (!layout) throw new Error("the framebuffer is not a 24-bit XWD image");
    if (layout.width !== expected.width || layout.height !== expected.height)
      throw new Error(`the framebuffer is ${layout.width}x${layout.height}, not ${expected.width}x${expected.height}`);
    if (st.size < layout.fileSize) throw new Error("the framebuffer file is shorter than its header says");
    data = borrow(layout.fileSize);
    let got = 0;
    while (got < data.length) {
      const n = await readAt(fd, data, got);
      if (n === 0) break;
      got += n;
    }
    if (got < layout.fileSize) throw new Error("the framebuffer file is shorter than its header says");
    const frame = data;
    data = null;
    return { layout, data: frame, release: () => giveBack(frame) };
  } finally {
    if (data) giveBack(data);
    closeSync(fd);
  }
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();
// node >= 22.2 has zlib.crc32 (native); the table is the fallback
const nativeCrc = (zlib as unknown as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;
function crc32(b: Buffer, start: number, end: number): number {
  if (nativeCrc) return nativeCrc(b.subarray(start, end)) >>> 0;
  let c = -1;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.allocUnsafe(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, "latin1");
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out, 4, 8 + data.length), 8 + data.length);
  return out;
}

export interface PngOptions {
  /** zlib level 0..9 (default 1: docs/machines.md "Screenshots" has the size/time table) */
  level?: number;
  /** PNG row filter: 0 none, 1 sub (default 1) */
  filter?: 0 | 1;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The pixels of an XWD framebuffer as PNG rows (filter byte + RGB), the input of the IDAT stream. */
export function xwdToPngRows(data: Buffer, layout: XwdLayout, filter: 0 | 1 = 1, into?: Buffer): Buffer {
  const { width, height, dataOffset, bytesPerLine, r, g, b } = layout;
  const rowLen = 1 + width * 3;
  const raw = into && into.length === height * rowLen ? into : Buffer.allocUnsafe(height * rowLen);
  // a pixel read as one 32-bit word when the rows are aligned (they are in Xvfb's file and the pool's
  // buffers): about twice as fast as three byte reads. A byte store keeps the low 8 bits, so
  // `word >>> shift` stores the channel and the difference of two such values is the Sub filter's (mod 256).
  if (LITTLE_ENDIAN && (data.byteOffset + dataOffset) % 4 === 0 && bytesPerLine % 4 === 0) {
    const words = new Uint32Array(data.buffer, data.byteOffset, data.byteLength >>> 2);
    const [rs, gs, bs] = [r * 8, g * 8, b * 8];
    for (let y = 0; y < height; y++) {
      let o = y * rowLen;
      raw[o++] = filter;
      let s = (dataOffset + y * bytesPerLine) >>> 2;
      const end = s + width;
      if (filter === 0) {
        for (; s < end; s++, o += 3) {
          const p = words[s]!;
          raw[o] = p >>> rs;
          raw[o + 1] = p >>> gs;
          raw[o + 2] = p >>> bs;
        }
      } else if (rs === 16 && gs === 8 && bs === 0) {
        // Xvfb's own layout (BGRX), with constant shifts: what V8 makes fastest
        let prev = 0;
        for (; s < end; s++, o += 3) {
          const p = words[s]!;
          raw[o] = (p >>> 16) - (prev >>> 16);
          raw[o + 1] = (p >>> 8) - (prev >>> 8);
          raw[o + 2] = p - prev;
          prev = p;
        }
      } else {
        let prev = 0;
        for (; s < end; s++, o += 3) {
          const p = words[s]!;
          raw[o] = (p >>> rs) - (prev >>> rs);
          raw[o + 1] = (p >>> gs) - (prev >>> gs);
          raw[o + 2] = (p >>> bs) - (prev >>> bs);
          prev = p;
        }
      }
    }
    return raw;
  }
  for (let y = 0; y < height; y++) {
    let o = y * rowLen;
    raw[o++] = filter;
    let s = dataOffset + y * bytesPerLine;
    const end = s + width * 4;
    if (filter === 0) {
      for (; s < end; s += 4) {
        raw[o] = data[s + r]!;
        raw[o + 1] = data[s + g]!;
        raw[o + 2] = data[s + b]!;
        o += 3;
      }
    } else {
      // Sub: each byte minus the same channel of the pixel to its left (mod 256)
      let pr = 0;
      let pg = 0;
      let pb = 0;
      for (; s < end; s += 4) {
        const cr = data[s + r]!;
        const cg = data[s + g]!;
        const cb = data[s + b]!;
        raw[o] = cr - pr;
        raw[o + 1] = cg - pg;
        raw[o + 2] = cb - pb;
        pr = cr;
        pg = cg;
        pb = cb;
        o += 3;
      }
    }
  }
  return raw;
}

/** Encodes an XWD framebuffer as an 8-bit RGB PNG (deflate on libuv's thread pool). */
export async function xwdToPng(data: Buffer, layout: XwdLayout, options: PngOptions = {}): Promise<Buffer> {
  const raw = xwdToPngRows(data, layout, options.filter ?? 1, borrow(layout.height * (1 + layout.width * 3)));
  let idat: Buffer;
  try {
    idat = await deflate(raw, { level: options.level ?? 1, memLevel: 9 });
  } finally {
    giveBack(raw);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(layout.width, 0);
  ihdr.writeUInt32BE(layout.height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  return Buffer.concat([SIGNATURE, chunk("IHDR", ihdr), chunk("IDAT", idat), chunk("IEND", Buffer.alloc(0))]);
}

/**
 * The last frame of one screen and its PNG. A screen that did not change since the previous shot (an agent
 * waiting, polling, reading) is answered with that PNG again: comparing the pixels (a memcmp of a few
 * megabytes) costs a fraction of encoding them. Holds one frame buffer per screen; the PNG it returns is
 * shared between the shots that got it, and must not be modified.
 */
export class LastFrame {
  private pixels: Buffer | null = null;
  private png: Buffer | null = null;
  private releasePrevious: (() => void) | null = null;

  /** The PNG of `frame` (taking the frame over: the caller does not release it). */
  async encode(frame: Frame, options: PngOptions = {}): Promise<Buffer> {
    const pixels = frame.data.subarray(frame.layout.dataOffset, frame.layout.fileSize);
    if (this.png && this.pixels?.equals(pixels)) {
      frame.release();
      return this.png;
    }
    let png: Buffer;
    try {
      png = await xwdToPng(frame.data, frame.layout, options);
    } catch (e) {
      frame.release();
      throw e;
    }
    this.releasePrevious?.();
    [this.pixels, this.png, this.releasePrevious] = [pixels, png, frame.release];
    return png;
  }

  /** Forgets the frame (its buffer goes back to the pool). */
  clear(): void {
    this.releasePrevious?.();
    [this.pixels, this.png, this.releasePrevious] = [null, null, null];
  }
}
