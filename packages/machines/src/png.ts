// Minimal PNG encoder/decoder (8-bit, non-interlaced) on node:zlib, plus an RGBA raster to draw on.
// Used by the mock provider to produce screenshots and by tests to inspect real ones.

import { deflateSync, inflateSync } from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** A rectangle clipped to a width x height image, in whole pixels (null: nothing of it is inside). */
function clipRect(x: number, y: number, w: number, h: number, width: number, height: number) {
  const x0 = Math.max(0, Math.floor(x));
  const y0 = Math.max(0, Math.floor(y));
  const x1 = Math.min(width, Math.floor(x + w));
  const y1 = Math.min(height, Math.floor(y + h));
  return x1 <= x0 || y1 <= y0 ? null : { x0, y0, x1, y1 };
}

export class Raster {
  readonly data: Buffer;
  constructor(
    readonly width: number,
    readonly height: number,
    fill: [number, number, number] = [0, 0, 0],
  ) {
    this.data = Buffer.alloc(width * height * 4);
    this.fillRect(0, 0, width, height, fill);
  }

  setPixel(x: number, y: number, [r, g, b]: [number, number, number]): void {
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return;
    const i = (y * this.width + x) * 4;
    this.data[i] = r;
    this.data[i + 1] = g;
    this.data[i + 2] = b;
    this.data[i + 3] = 255;
  }

  fillRect(x: number, y: number, w: number, h: number, rgb: [number, number, number]): void {
    const c = clipRect(x, y, w, h, this.width, this.height);
    if (!c) return;
    const { x0, y0, x1, y1 } = c;
    const row = Buffer.alloc((x1 - x0) * 4);
    for (let i = 0; i < x1 - x0; i++) {
      row[i * 4] = rgb[0];
      row[i * 4 + 1] = rgb[1];
      row[i * 4 + 2] = rgb[2];
      row[i * 4 + 3] = 255;
    }
    for (let yy = y0; yy < y1; yy++) row.copy(this.data, (yy * this.width + x0) * 4);
  }

  getPixel(x: number, y: number): [number, number, number, number] {
    const i = (y * this.width + x) * 4;
    return [this.data[i]!, this.data[i + 1]!, this.data[i + 2]!, this.data[i + 3]!];
  }
}

/** Encodes an RGBA raster as an RGB PNG (alpha is dropped: screenshots are opaque). */
export function encodePng(raster: Raster, level = 6): Buffer {
  const { width, height, data } = raster;
  const stride = width * 3 + 1;
  const raw = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const o = y * stride;
    raw[o] = 1; // filter "sub": compresses flat areas well
    for (let x = 0; x < width; x++) {
      const s = (y * width + x) * 4;
      const d = o + 1 + x * 3;
      const pr = x > 0 ? data[s - 4]! : 0;
      const pg = x > 0 ? data[s - 3]! : 0;
      const pb = x > 0 ? data[s - 2]! : 0;
      raw[d] = (data[s]! - pr) & 0xff;
      raw[d + 1] = (data[s + 1]! - pg) & 0xff;
      raw[d + 2] = (data[s + 2]! - pb) & 0xff;
    }
  }
  return pngOfFiltered(width, height, raw, level);
}

let scratch = Buffer.alloc(0);

/** A clipped rectangle of RectCanvas: [x0, x1) x [y0, y1), one colour. */
interface Rect {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  rgb: [number, number, number];
}

/**
 * An image made of filled rectangles, encoded without a full raster: the pixels of drawing the same
 * rectangles on a Raster (tests check it), at a fraction of the cost. Rows covered by the same rectangles
 * are the same scanline, so each band of rows between two rectangle edges is drawn and filtered once and
 * copied. The mock machines' screenshots (issue 16: Raster + encodePng was a third of a sandbox run step's
 * CPU; 0.5 ms instead of 6-10 ms at 1280x720).
 */
export class RectCanvas {
  private readonly rects: Rect[] = [];
  constructor(
    readonly width: number,
    readonly height: number,
    fill: [number, number, number] = [0, 0, 0],
  ) {
    this.fillRect(0, 0, width, height, fill);
  }

  /** Raster.fillRect's clipping and order: a later rectangle paints over an earlier one. */
  fillRect(x: number, y: number, w: number, h: number, rgb: [number, number, number]): void {
    const c = clipRect(x, y, w, h, this.width, this.height);
    if (!c) return;
    const { x0, y0, x1, y1 } = c;
    this.rects.push({ x0, y0, x1, y1, rgb: [rgb[0] & 0xff, rgb[1] & 0xff, rgb[2] & 0xff] });
  }

  /**
   * The PNG: indexed colour (a palette of the colours in order of first use, filter None) when there are
   * at most 256 colours, else RGB with the "sub" filter (the same bytes as encodePng). Indexed rows are a
   * third of the RGB ones, so deflate, most of the cost, reads a third as much.
   */
  toPng(level = 6): Buffer {
    const { width, height, rects } = this;
    const palette = new Map<number, number>();
    for (const r of rects) {
      const c = (r.rgb[0] << 16) | (r.rgb[1] << 8) | r.rgb[2];
      if (!palette.has(c)) palette.set(c, palette.size);
    }
    // pixels no rectangle covers are black, as in a Raster
    if (!this.covered() && !palette.has(0)) palette.set(0, palette.size);
    const indexed = palette.size <= 256;
    const bpp = indexed ? 1 : 3;
    const stride = width * bpp + 1;
    // the filtered scanlines only live until deflateSync returns: one scratch buffer, reused
    if (scratch.length < stride * height) scratch = Buffer.allocUnsafe(stride * height);
    const raw = scratch.subarray(0, stride * height);
    const edges = new Set<number>([0, height]);
    for (const r of rects) edges.add(r.y0).add(r.y1);
    const bands = [...edges].sort((a, b) => a - b);
    const line = new Uint8Array(width * bpp);
    const black = indexed ? (palette.get(0) ?? 0) : 0;
    for (let b = 0; b + 1 < bands.length; b++) {
      const y0 = bands[b]!;
      const y1 = bands[b + 1]!;
      line.fill(black);
      for (const r of rects) {
        if (r.y0 > y0 || r.y1 <= y0) continue;
        const [cr, cg, cb] = r.rgb;
        if (indexed) line.fill(palette.get((cr << 16) | (cg << 8) | cb)!, r.x0, r.x1);
        else {
          for (let i = r.x0 * 3, end = r.x1 * 3; i < end; i += 3) {
            line[i] = cr;
            line[i + 1] = cg;
            line[i + 2] = cb;
          }
        }
      }
      // the first row of the band; the others are copies
      const o = y0 * stride;
      if (indexed) {
        raw[o] = 0; // filter None
        raw.set(line, o + 1);
      } else {
        // the "sub" filter of encodePng
        raw[o] = 1;
        raw[o + 1] = line[0]!;
        raw[o + 2] = line[1]!;
        raw[o + 3] = line[2]!;
        for (let i = 3; i < width * 3; i++) raw[o + 1 + i] = (line[i]! - line[i - 3]!) & 0xff;
      }
      for (let y = y0 + 1; y < y1; y++) raw.copyWithin(y * stride, o, o + stride);
    }
    if (!indexed) return pngOfFiltered(width, height, raw, level);
    const plte = Buffer.alloc(palette.size * 3);
    for (const [c, i] of palette) {
      plte[i * 3] = c >> 16;
      plte[i * 3 + 1] = (c >> 8) & 0xff;
      plte[i * 3 + 2] = c & 0xff;
    }
    return pngOfFiltered(width, height, raw, level, plte);
  }

  /** Whether the first rectangle covers the whole image (a background fill, as the constructor draws). */
  private covered(): boolean {
    const r = this.rects[0];
    return !!r && r.x0 === 0 && r.y0 === 0 && r.x1 === this.width && r.y1 === this.height;
  }
}

/** The PNG file of filtered scanlines (8-bit, non-interlaced): RGB, or indexed with `palette` (RGB triples). */
function pngOfFiltered(width: number, height: number, raw: Buffer, level: number, palette?: Buffer): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = palette ? 3 : 2; // colour type indexed or RGB
  ihdr[10] = 0;
  ihdr[11] = 0;
  ihdr[12] = 0;
  return Buffer.concat([
    SIGNATURE,
    chunk("IHDR", ihdr),
    ...(palette ? [chunk("PLTE", palette)] : []),
    chunk("IDAT", deflateSync(raw, { level })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** Width and height from the IHDR chunk, without decoding. */
export function pngSize(png: Buffer): { width: number; height: number } {
  if (png.length < 24 || !png.subarray(0, 8).equals(SIGNATURE) || png.toString("ascii", 12, 16) !== "IHDR") {
    throw new Error("not a PNG");
  }
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  if (pb <= pc) return b;
  return c;
}

/** Decodes 8-bit non-interlaced PNGs (grey, RGB, palette, grey+alpha, RGBA) into an RGBA raster. */
export function decodePng(png: Buffer): Raster {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error("not a PNG");
  let off = 8;
  let width = 0;
  let height = 0;
  let colorType = 0;
  let palette: Buffer | null = null;
  const idat: Buffer[] = [];
  while (off + 8 <= png.length) {
    const len = png.readUInt32BE(off);
    const type = png.toString("ascii", off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    off += 12 + len;
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const depth = data[8];
      colorType = data[9]!;
      if (depth !== 8) throw new Error(`unsupported bit depth ${depth}`);
      if (data[12] !== 0) throw new Error("interlaced PNGs are not supported");
    } else if (type === "PLTE") palette = Buffer.from(data);
    else if (type === "IDAT") idat.push(Buffer.from(data));
    else if (type === "IEND") break;
  }
  const channels = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 }[colorType];
  if (!channels) throw new Error(`unsupported colour type ${colorType}`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = new Raster(width, height);
  let prev = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? line[i - channels]! : 0;
      const b = prev[i]!;
      const c = i >= channels ? prev[i - channels]! : 0;
      const v = line[i]!;
      if (filter === 1) line[i] = (v + a) & 0xff;
      else if (filter === 2) line[i] = (v + b) & 0xff;
      else if (filter === 3) line[i] = (v + ((a + b) >> 1)) & 0xff;
      else if (filter === 4) line[i] = (v + paeth(a, b, c)) & 0xff;
    }
    for (let x = 0; x < width; x++) {
      const s = x * channels;
      const d = (y * width + x) * 4;
      let r: number;
      let g: number;
      let b2: number;
      let al = 255;
      if (colorType === 0 || colorType === 4) {
        r = g = b2 = line[s]!;
        if (colorType === 4) al = line[s + 1]!;
      } else if (colorType === 3) {
        const p = line[s]! * 3;
        r = palette?.[p] ?? 0;
        g = palette?.[p + 1] ?? 0;
        b2 = palette?.[p + 2] ?? 0;
      } else {
        r = line[s]!;
        g = line[s + 1]!;
        b2 = line[s + 2]!;
        if (colorType === 6) al = line[s + 3]!;
      }
      out.data[d] = r;
      out.data[d + 1] = g;
      out.data[d + 2] = b2;
      out.data[d + 3] = al;
    }
    prev = line;
  }
  return out;
}

/** Number of distinct colours (capped) — a cheap "is this screenshot blank" measure. */
export function distinctColors(r: Raster, cap = 1024): number {
  const seen = new Set<number>();
  for (let i = 0; i < r.data.length; i += 4) {
    seen.add((r.data[i]! << 16) | (r.data[i + 1]! << 8) | r.data[i + 2]!);
    if (seen.size >= cap) break;
  }
  return seen.size;
}
