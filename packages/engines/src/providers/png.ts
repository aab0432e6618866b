// A small PNG codec (node:zlib only) so engines can downscale screenshots themselves instead of letting a
// provider resize them silently, which would move every coordinate the model answers with.
// Decodes non-interlaced PNGs of every colour type at bit depth 8 (and 16, keeping the high byte);
// encodes 8-bit RGB or RGBA. Anything else returns null and the caller falls back to sending the original.
import { crc32, deflateSync, inflateSync } from "node:zlib";

export interface RasterImage {
  width: number;
  height: number;
  /** 3 (RGB) or 4 (RGBA) */
  channels: 3 | 4;
  data: Uint8Array;
}

const SIGNATURE = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  if (pb <= pc) return b;
  return c;
}

const SAMPLES_PER_PIXEL: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

export function decodePng(bytes: Uint8Array): RasterImage | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 33 || !buf.subarray(0, 8).equals(SIGNATURE)) return null;
  let width = 0;
  let height = 0;
  let depth = 0;
  let colorType = -1;
  let interlace = 0;
  let palette: Buffer | null = null;
  let transparency: Buffer | null = null;
  const idat: Buffer[] = [];
  let off = 8;
  while (off + 8 <= buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString("latin1", off + 4, off + 8);
    const body = buf.subarray(off + 8, off + 8 + len);
    if (body.length !== len) return null;
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      depth = body[8] ?? 0;
      colorType = body[9] ?? -1;
      interlace = body[12] ?? 0;
    } else if (type === "PLTE") palette = body;
    else if (type === "tRNS") transparency = body;
    else if (type === "IDAT") idat.push(body);
    else if (type === "IEND") break;
    off += 12 + len;
  }
  const spp = SAMPLES_PER_PIXEL[colorType];
  if (!spp || width === 0 || height === 0 || interlace !== 0) return null;
  if (!(depth === 8 || (depth === 16 && colorType !== 3))) return null;
  if (colorType === 3 && !palette) return null;

  let raw: Buffer;
  try {
    raw = inflateSync(Buffer.concat(idat));
  } catch {
    return null;
  }
  const bpp = (spp * depth) / 8;
  const stride = width * bpp;
  if (raw.length < height * (stride + 1)) return null;

  const cur = new Uint8Array(stride);
  const prev = new Uint8Array(stride);
  const hasAlpha = colorType === 4 || colorType === 6 || (colorType === 3 && transparency !== null);
  const channels: 3 | 4 = hasAlpha ? 4 : 3;
  const out = new Uint8Array(width * height * channels);
  const step = depth / 8;

  for (let y = 0; y < height; y++) {
    const rowStart = y * (stride + 1);
    const filter = raw[rowStart];
    for (let i = 0; i < stride; i++) {
      const x = raw[rowStart + 1 + i] ?? 0;
      const a = i >= bpp ? (cur[i - bpp] ?? 0) : 0;
      const b = prev[i] ?? 0;
      const c = i >= bpp ? (prev[i - bpp] ?? 0) : 0;
      let v: number;
      if (filter === 0) v = x;
      else if (filter === 1) v = x + a;
      else if (filter === 2) v = x + b;
      else if (filter === 3) v = x + ((a + b) >> 1);
      else if (filter === 4) v = x + paeth(a, b, c);
      else return null;
      cur[i] = v & 0xff;
    }
    for (let px = 0; px < width; px++) {
      const s = (k: number) => cur[px * bpp + k * step] ?? 0; // high byte of sample k
      const o = (y * width + px) * channels;
      let r: number;
      let g: number;
      let bl: number;
      let al = 255;
      if (colorType === 0) {
        r = g = bl = s(0);
      } else if (colorType === 2) {
        r = s(0);
        g = s(1);
        bl = s(2);
      } else if (colorType === 3) {
        const idx = s(0);
        r = palette?.[idx * 3] ?? 0;
        g = palette?.[idx * 3 + 1] ?? 0;
        bl = palette?.[idx * 3 + 2] ?? 0;
        if (transparency) al = idx < transparency.length ? (transparency[idx] ?? 255) : 255;
      } else if (colorType === 4) {
        r = g = bl = s(0);
        al = s(1);
      } else {
        r = s(0);
        g = s(1);
        bl = s(2);
        al = s(3);
      }
      out[o] = r;
      out[o + 1] = g;
      out[o + 2] = bl;
      if (channels === 4) out[o + 3] = al;
    }
    prev.set(cur);
  }
  return { width, height, channels, data: out };
}

function chunk(type: string, body: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])) >>> 0, 0);
  return Buffer.concat([head, body, crc]);
}

export function encodePng(img: RasterImage): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(img.width, 0);
  ihdr.writeUInt32BE(img.height, 4);
  ihdr[8] = 8;
  ihdr[9] = img.channels === 4 ? 6 : 2;
  const stride = img.width * img.channels;
  const raw = Buffer.alloc(img.height * (stride + 1));
  for (let y = 0; y < img.height; y++) {
    const o = y * (stride + 1);
    raw[o] = 1; // Sub filter: cheap and compresses screenshots well
    for (let i = 0; i < stride; i++) {
      const v = img.data[y * stride + i] ?? 0;
      const left = i >= img.channels ? (img.data[y * stride + i - img.channels] ?? 0) : 0;
      raw[o + 1 + i] = (v - left) & 0xff;
    }
  }
  return Buffer.concat([
    SIGNATURE,
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw, { level: 6 })),
    chunk("IEND", new Uint8Array(0)),
  ]);
}

/** Area-average (box filter) downscale; the right filter for shrinking UI screenshots legibly. */
export function downscale(img: RasterImage, width: number, height: number): RasterImage {
  const { channels } = img;
  const out = new Uint8Array(width * height * channels);
  const sx = img.width / width;
  const sy = img.height / height;
  const acc = new Float64Array(channels);
  for (let y = 0; y < height; y++) {
    const y0 = y * sy;
    const y1 = Math.min(img.height, (y + 1) * sy);
    for (let x = 0; x < width; x++) {
      const x0 = x * sx;
      const x1 = Math.min(img.width, (x + 1) * sx);
      acc.fill(0);
      let total = 0;
      for (let yy = Math.floor(y0); yy < y1; yy++) {
        const wy = Math.min(yy + 1, y1) - Math.max(yy, y0);
        if (wy <= 0) continue;
        for (let xx = Math.floor(x0); xx < x1; xx++) {
          const wx = Math.min(xx + 1, x1) - Math.max(xx, x0);
          if (wx <= 0) continue;
          const w = wx * wy;
          const o = (yy * img.width + xx) * channels;
          for (let c = 0; c < channels; c++) acc[c] = (acc[c] ?? 0) + (img.data[o + c] ?? 0) * w;
          total += w;
        }
      }
      const o = (y * width + x) * channels;
      for (let c = 0; c < channels; c++) out[o + c] = Math.round((acc[c] ?? 0) / (total || 1));
    }
  }
  return { width, height, channels, data: out };
}
