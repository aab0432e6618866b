// Screenshots as callers send them (SPEC "POST /v1/predict": raw base64 or an exact PNG/JPEG data
// URI, 100 to 10,485,760 base64 characters; SPEC "Errors" and DECISIONS "Cross-cutting rules":
// under 100 characters or not valid base64/PNG/JPEG is 400 INVALID_SCREENSHOT, over the cap is 413
// PAYLOAD_TOO_LARGE, screen_width/height that differ from the decoded image are 422 VALIDATION_ERROR).
//
// Decisions where SPEC/DECISIONS are silent:
// - Accepted data URI prefixes are exactly `data:image/png;base64,` and `data:image/jpeg;base64,`
//   (lowercase, no parameters). `image/jpg` is not a registered media type and is rejected with a
//   message that names `image/jpeg`: "exact" in SPEC means exact.
// - Any string that does not start with `data:` is raw base64. The 100..10,485,760 length limits
//   apply to the base64 part (the prefix is not counted).
// - Base64 is the standard alphabet (A-Z a-z 0-9 + /) with mandatory "=" padding to a multiple of
//   4, padding only at the end, and zero unused bits in the last character (canonical RFC 4648).
//   Whitespace, line breaks and the URL-safe alphabet are rejected.
// - The bytes must be a real PNG (signature, IHDR first with a valid CRC and a legal bit depth /
//   colour type, PLTE for palette images, at least one IDAT, IEND reached; bytes after IEND are
//   ignored) or a real JPEG (SOI, well-formed marker segments, an SOFn frame header with non-zero
//   size before the first SOS). The data URI's type must match the bytes.
// - Each side is at most 16,384 pixels and the image at most 50,000,000 pixels (8K is 33 M): larger
//   images are 400 INVALID_SCREENSHOT (they would only be decompression bombs for the engines).
import { deflateSync } from "node:zlib";
import { CoreError } from "../errors.ts";

/** A screenshot after decoding: its bytes, type and real size. */
export interface DecodedImage {
  /** raw bytes of the PNG or JPEG */
  bytes: Buffer;
  mime: "image/png" | "image/jpeg";
  width: number;
  height: number;
}

export const MIN_SCREENSHOT_B64_CHARS = 100;
export const MAX_SCREENSHOT_B64_CHARS = 10_485_760;
export const MAX_IMAGE_SIDE = 16_384;
export const MAX_IMAGE_PIXELS = 50_000_000;

const DATA_URI_PREFIXES = {
  "data:image/png;base64,": "image/png",
  "data:image/jpeg;base64,": "image/jpeg",
} as const;

function invalid(field: string, message: string): CoreError {
  return new CoreError("INVALID_SCREENSHOT", `${field}: ${message}`, { details: [{ path: field, message }] });
}

// ---------- base64 ----------

const B64 = new Int8Array(128).fill(-1);
"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".split("").forEach((c, i) => {
  B64[c.charCodeAt(0)] = i;
});

/** Whether `s` is strict, canonical, padded standard base64 of `bytes` (= Buffer.from(s, "base64")). */
export function isStrictBase64(s: string, bytes: Buffer): boolean {
  if (s.length % 4 !== 0) return false;
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  if (bytes.length !== (s.length / 4) * 3 - pad) return false;
  if (s.includes("-") || s.includes("_")) return false;
  return pad === 0 || bytes.subarray(bytes.length - (3 - pad)).toString("base64") === s.slice(-4);
}

/** Why a string is not strict, canonical, padded standard base64; null when it is. */
export function base64Problem(s: string): string | null {
  const n = s.length;
  let pad = 0;
  while (pad < n && s.charCodeAt(n - 1 - pad) === 61) pad++;
  const end = n - pad;
  for (let i = 0; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || B64[c] === -1) {
      if (c === 61) return "= padding may only appear at the end";
      if (c === 32 || c === 10 || c === 13 || c === 9) return "whitespace is not allowed in base64";
      if (c === 45 || c === 95) return "URL-safe base64 (- and _) is not accepted; use the standard alphabet";
      return `invalid base64 character at position ${i}`;
    }
  }
  if (pad > 2) return "too much = padding";
  if (n % 4 !== 0) return "base64 length must be a multiple of 4 (with = padding)";
  if (pad > 0) {
    const last = B64[s.charCodeAt(end - 1)]!;
    if ((pad === 2 && (last & 0x0f) !== 0) || (pad === 1 && (last & 0x03) !== 0))
      return "non-canonical base64 (non-zero bits before the padding)";
  }
  return null;
}

// ---------- PNG ----------

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(buf: Uint8Array, start = 0, end = buf.length): number {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const PNG_DEPTHS: Record<number, number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

type Dims = { width: number; height: number } | string;

function readPng(b: Buffer): Dims {
  if (b.length < 8 + 25 + 12 + 12) return "truncated PNG";
  let pos = 8;
  let first = true;
  let sawIdat = false;
  let sawPlte = false;
  let dims: { width: number; height: number; colorType: number } | null = null;
  while (true) {
    if (pos + 12 > b.length) return "truncated PNG (no IEND chunk)";
    const len = b.readUInt32BE(pos);
    if (len > 0x7fffffff || pos + 12 + len > b.length) return "truncated PNG chunk";
    const type = b.toString("latin1", pos + 4, pos + 8);
    if (!/^[A-Za-z]{4}$/.test(type)) return "malformed PNG chunk type";
    if (first) {
      if (type !== "IHDR" || len !== 13) return "PNG does not start with an IHDR chunk";
      if (crc32(b, pos + 4, pos + 8 + len) !== b.readUInt32BE(pos + 8 + len)) return "PNG IHDR checksum mismatch";
      const width = b.readUInt32BE(pos + 8);
      const height = b.readUInt32BE(pos + 12);
      const depth = b[pos + 16]!;
      const colorType = b[pos + 17]!;
      if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) return "PNG has an invalid size";
      if (!PNG_DEPTHS[colorType]?.includes(depth)) return "PNG has an invalid bit depth or colour type";
      if (b[pos + 18] !== 0 || b[pos + 19] !== 0 || b[pos + 20]! > 1)
        return "PNG has an invalid compression, filter or interlace method";
      dims = { width, height, colorType };
      first = false;
    } else if (type === "IHDR") {
      return "PNG has a second IHDR chunk";
    } else if (type === "PLTE") {
      sawPlte = true;
    } else if (type === "IDAT") {
      if (dims?.colorType === 3 && !sawPlte) return "palette PNG without a PLTE chunk";
      sawIdat = true;
    } else if (type === "IEND") {
      if (!sawIdat) return "PNG has no image data (IDAT)";
      return { width: dims!.width, height: dims!.height };
    }
    pos += 12 + len;
  }
}

// ---------- JPEG ----------

function isSof(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function readJpeg(b: Buffer): Dims {
  let pos = 2; // after SOI
  let dims: { width: number; height: number } | null = null;
  while (true) {
    if (pos >= b.length) return "truncated JPEG (no SOS segment)";
    if (b[pos] !== 0xff) return "malformed JPEG marker";
    while (pos < b.length && b[pos] === 0xff) pos++; // fill bytes
    if (pos >= b.length) return "truncated JPEG";
    const marker = b[pos]!;
    pos++;
    if (marker === 0x00) return "malformed JPEG marker";
    if (marker === 0xd8) return "unexpected second SOI in JPEG";
    if (marker === 0xd9) return "JPEG ends before any image data";
    if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue; // standalone markers
    if (pos + 2 > b.length) return "truncated JPEG segment";
    const len = b.readUInt16BE(pos);
    if (len < 2 || pos + len > b.length) return "truncated JPEG segment";
    if (isSof(marker) && !dims) {
      if (len < 8) return "malformed JPEG frame header";
      const height = b.readUInt16BE(pos + 3);
      const width = b.readUInt16BE(pos + 5);
      const components = b[pos + 7]!;
      if (components === 0 || len !== 8 + 3 * components) return "malformed JPEG frame header";
      if (width === 0 || height === 0) return "JPEG has an invalid size";
      dims = { width, height };
    } else if (marker === 0xda) {
      if (!dims) return "JPEG has no frame header (SOFn) before its scan";
      if (pos + len >= b.length) return "JPEG has no scan data";
      return dims;
    }
    pos += len;
  }
}

/** Sniffs PNG or JPEG bytes and reads their real size; a string describes why they are neither. */
export function readImageHeader(bytes: Buffer): { mime: DecodedImage["mime"]; width: number; height: number } | string {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(PNG_SIGNATURE)) {
    const d = readPng(bytes);
    return typeof d === "string" ? d : { mime: "image/png", ...d };
  }
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    const d = readJpeg(bytes);
    return typeof d === "string" ? d : { mime: "image/jpeg", ...d };
  }
  return "the data is neither a PNG nor a JPEG image";
}

// ---------- screenshots decoded before the use case ----------
//
// The API's JSON body parser can decode a large screenshot straight from the request's bytes (issue 16:
// JSON.parse copying the 345 KB string was a fifth of predict's profile) and leave the bytes here for
// decodeScreenshot. The store is keyed by the screenshot's text itself (a Map compares strings by content, so
// a hit is the decode of exactly the string asked about, whoever stored it), an entry is taken at most once
// (each request gets bytes of its own), and it stays bounded: the parser releases what its request did not
// use when the answer is sent, and past PREDECODED_MAX_BYTES the oldest entries go first (a request whose
// entry went decodes again, as without the store).

/** Screenshots shorter than this are not worth storing: decodeScreenshot decodes them itself. */
export const PREDECODED_MIN_CHARS = 16 * 1024;
const PREDECODED_MAX_BYTES = 32 * 1024 * 1024;
const predecoded = new Map<string, Buffer>();
let predecodedBytes = 0;

function dropPredecoded(s: string): void {
  const b = predecoded.get(s);
  if (!b) return;
  predecoded.delete(s);
  predecodedBytes -= b.length;
}

/**
 * Leaves `bytes` for decodeScreenshot(screenshot). The caller vouches that `bytes` is the decode of
 * `screenshot` (after its exact data URI prefix, if any) and that this base64 passed isStrictBase64.
 * Returns the release to call when the request is over (a no-op once taken or replaced).
 */
export function putPredecoded(screenshot: string, bytes: Buffer): () => void {
  if (screenshot.length < PREDECODED_MIN_CHARS || bytes.length > PREDECODED_MAX_BYTES) return () => {};
  dropPredecoded(screenshot);
  predecoded.set(screenshot, bytes);
  predecodedBytes += bytes.length;
  for (const k of predecoded.keys()) {
    if (predecodedBytes <= PREDECODED_MAX_BYTES) break;
    dropPredecoded(k);
  }
  return () => {
    if (predecoded.get(screenshot) === bytes) dropPredecoded(screenshot);
  };
}

function takePredecoded(s: string): Buffer | undefined {
  if (s.length < PREDECODED_MIN_CHARS || predecoded.size === 0) return undefined;
  const b = predecoded.get(s);
  if (b) dropPredecoded(s);
  return b;
}

/** How many screenshots are stored now (tests: nothing stays behind a request). */
export function predecodedCount(): number {
  return predecoded.size;
}

/**
 * Decodes a caller's screenshot: raw base64 or an exact PNG/JPEG data URI.
 * 400 INVALID_SCREENSHOT / 413 PAYLOAD_TOO_LARGE, with details path `field`.
 */
export function decodeScreenshot(s: string, field = "body.screenshot"): DecodedImage {
  if (typeof s !== "string") throw invalid(field, "must be a string");
  let b64 = s;
  let declared: DecodedImage["mime"] | null = null;
  if (s.startsWith("data:")) {
    const comma = s.indexOf(",");
    const prefix = comma === -1 ? s.slice(0, 64) : s.slice(0, comma + 1);
    const mime = DATA_URI_PREFIXES[prefix as keyof typeof DATA_URI_PREFIXES];
    if (!mime) {
      const hint = /^data:image\/jpg[;,]/i.test(prefix) ? " (use image/jpeg, not image/jpg)" : "";
      throw invalid(field, `data URI must start with data:image/png;base64, or data:image/jpeg;base64,${hint}`);
    }
    declared = mime;
    b64 = s.slice(prefix.length);
  }
  if (b64.length > MAX_SCREENSHOT_B64_CHARS) {
    throw new CoreError(
      "PAYLOAD_TOO_LARGE",
      `${field}: the screenshot is ${b64.length} base64 characters; the limit is ${MAX_SCREENSHOT_B64_CHARS}`,
      { details: [{ path: field, message: `at most ${MAX_SCREENSHOT_B64_CHARS} base64 characters` }] },
    );
  }
  if (b64.length < MIN_SCREENSHOT_B64_CHARS)
    throw invalid(field, `at least ${MIN_SCREENSHOT_B64_CHARS} base64 characters are required`);
  // node's decoder skips what it does not know, stops at "=" and takes URL-safe characters: the string is
  // strict padded base64 exactly when the bytes are as many as its length says (every character counted),
  // it holds no "-" or "_", and its last quantum is canonical (encodes back from its bytes). One native decode
  // and two native scans: a third of decoding and encoding back the whole string (issue 16, predict's 345 KB
  // body). Only a refused string is scanned in JS, for the reason.
  const known = takePredecoded(s);
  const bytes = known ?? Buffer.from(b64, "base64");
  if (!known && !isStrictBase64(b64, bytes)) throw invalid(field, base64Problem(b64) ?? "invalid base64");
  const header = readImageHeader(bytes);
  if (typeof header === "string") throw invalid(field, header);
  if (declared && declared !== header.mime)
    throw invalid(field, `the data URI says ${declared} but the bytes are ${header.mime}`);
  if (
    header.width > MAX_IMAGE_SIDE ||
    header.height > MAX_IMAGE_SIDE ||
    header.width * header.height > MAX_IMAGE_PIXELS
  )
    throw invalid(
      field,
      `the image is ${header.width}x${header.height}; at most ${MAX_IMAGE_SIDE} pixels per side and ${MAX_IMAGE_PIXELS} pixels in all`,
    );
  return { bytes, mime: header.mime, width: header.width, height: header.height };
}

/**
 * screen_width/screen_height, when given, must equal the decoded image's size (SPEC predict:
 * "must match the screenshot actually sent"): 422 VALIDATION_ERROR at `${pathPrefix}.screen_width`.
 */
export function checkScreenSize(
  img: { width: number; height: number },
  screenWidth: number | null | undefined,
  screenHeight: number | null | undefined,
  pathPrefix = "body",
): void {
  const details: { path: string; message: string }[] = [];
  if (screenWidth !== undefined && screenWidth !== null && screenWidth !== img.width)
    details.push({
      path: `${pathPrefix}.screen_width`,
      message: `screen_width ${screenWidth} does not match the screenshot's width ${img.width}`,
    });
  if (screenHeight !== undefined && screenHeight !== null && screenHeight !== img.height)
    details.push({
      path: `${pathPrefix}.screen_height`,
      message: `screen_height ${screenHeight} does not match the screenshot's height ${img.height}`,
    });
  if (details.length > 0)
    throw new CoreError("VALIDATION_ERROR", `${details[0]!.path}: ${details[0]!.message}`, { details });
}

// ---------- PNG encoder ----------

export type Rgba = readonly [number, number, number, number?];

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, "latin1");
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out, 4, 8 + data.length), 8 + data.length);
  return out;
}

/**
 * A dependency-free PNG encoder (8-bit RGBA, zlib from node) for tests, the sandbox and mock
 * machines. `rgba(x, y)` gives each pixel (alpha defaults to 255); without it the image is white.
 */
export function makePng(width: number, height: number, rgba?: (x: number, y: number) => Rgba): Buffer {
  if (
    !Number.isInteger(width) ||
    !Number.isInteger(height) ||
    width < 1 ||
    height < 1 ||
    width > MAX_IMAGE_SIDE ||
    height > MAX_IMAGE_SIDE
  )
    throw new RangeError(`makePng: invalid size ${width}x${height}`);
  const stride = width * 4 + 1;
  const raw = Buffer.alloc(stride * height, 255);
  for (let y = 0; y < height; y++) {
    const row = y * stride;
    raw[row] = 0; // filter: none
    if (!rgba) continue;
    for (let x = 0; x < width; x++) {
      const px = rgba(x, y);
      const o = row + 1 + x * 4;
      raw[o] = px[0];
      raw[o + 1] = px[1];
      raw[o + 2] = px[2];
      raw[o + 3] = px[3] ?? 255;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** `data:<mime>;base64,<...>` for a decoded image or raw PNG bytes. */
export function toDataUri(bytes: Buffer, mime: DecodedImage["mime"] = "image/png"): string {
  return `data:${mime};base64,${bytes.toString("base64")}`;
}
