// Observation frames of external machines (SPEC.md "External machines"): one PNG or JPEG per request,
// decoded size 320x240 .. 3840x2160, request digest = SHA-256 of the decoded bytes, stored digest =
// SHA-256 of the normalised bytes (ancillary metadata stripped). Frames are AES-256-GCM encrypted at
// rest with a key derived from the KEK, bound to the machine and frame id, and purged after 900 s.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";
import { CoreError, validationError } from "@cua/base/errors";

export const FRAME_RETENTION_SECONDS = 900;
export const MAX_FRAME_B64_CHARS = 10_485_760;
export const FRAME_MIN = { width: 320, height: 240 };
export const FRAME_MAX = { width: 3840, height: 2160 };

const PNG_SIG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** PNG chunks kept by normalisation: the critical ones plus transparency (pixels unchanged) */
const PNG_KEEP = new Set(["IHDR", "PLTE", "IDAT", "IEND", "tRNS"]);

export interface DecodedFrame {
  mime: "image/png" | "image/jpeg";
  bytes: Buffer;
  normalized: Buffer;
  width: number;
  height: number;
}

export function sha256Hex(b: Buffer | string): string {
  return createHash("sha256").update(b).digest("hex");
}

function pngInfo(b: Buffer): { width: number; height: number; normalized: Buffer } | null {
  if (b.length < 33 || !b.subarray(0, 8).equals(PNG_SIG)) return null;
  const parts: Buffer[] = [PNG_SIG];
  let off = 8;
  let width = 0;
  let height = 0;
  let sawEnd = false;
  while (off + 12 <= b.length) {
    const len = b.readUInt32BE(off);
    const type = b.toString("latin1", off + 4, off + 8);
    const end = off + 12 + len;
    if (end > b.length) return null;
    if (type === "IHDR") {
      width = b.readUInt32BE(off + 8);
      height = b.readUInt32BE(off + 12);
    }
    if (PNG_KEEP.has(type)) parts.push(b.subarray(off, end));
    off = end;
    if (type === "IEND") {
      sawEnd = true;
      break;
    }
  }
  if (!sawEnd || width === 0) return null;
  return { width, height, normalized: Buffer.concat(parts) };
}

function jpegInfo(b: Buffer): { width: number; height: number; normalized: Buffer } | null {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return null;
  const parts: Buffer[] = [b.subarray(0, 2)];
  let off = 2;
  let width = 0;
  let height = 0;
  while (off + 4 <= b.length) {
    if (b[off] !== 0xff) return null;
    const marker = b[off + 1]!;
    if (marker === 0xd9) break;
    const len = b.readUInt16BE(off + 2);
    const end = off + 2 + len;
    if (end > b.length) return null;
    // SOF0..SOF15 except DHT (c4), JPG (c8), DAC (cc)
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      height = b.readUInt16BE(off + 5);
      width = b.readUInt16BE(off + 7);
    }
    // drop APP1..APP15 (EXIF, XMP, ...) and comments; keep APP0 (JFIF) and everything else
    const drop = (marker >= 0xe1 && marker <= 0xef) || marker === 0xfe;
    if (marker === 0xda) {
      parts.push(b.subarray(off)); // start of scan: the rest is entropy-coded data
      off = b.length;
      break;
    }
    if (!drop) parts.push(b.subarray(off, end));
    off = end;
  }
  if (width === 0 || height === 0) return null;
  return { width, height, normalized: Buffer.concat(parts) };
}

/** Validates one observation payload: 413 over the cap, 400 INVALID_SCREENSHOT when not PNG/JPEG. */
export function decodeFrame(mimeType: string, data: string): DecodedFrame {
  if (data.length > MAX_FRAME_B64_CHARS) {
    throw new CoreError("PAYLOAD_TOO_LARGE", `data holds more than ${MAX_FRAME_B64_CHARS} base64 characters.`);
  }
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0 || data.length < 100) {
    throw new CoreError("INVALID_SCREENSHOT", "data is not valid base64 of a PNG or JPEG image.");
  }
  const bytes = Buffer.from(data, "base64");
  const info = mimeType === "image/png" ? pngInfo(bytes) : mimeType === "image/jpeg" ? jpegInfo(bytes) : null;
  if (!info) throw new CoreError("INVALID_SCREENSHOT", `data is not a valid ${mimeType} image.`);
  if (
    info.width < FRAME_MIN.width ||
    info.height < FRAME_MIN.height ||
    info.width > FRAME_MAX.width ||
    info.height > FRAME_MAX.height
  ) {
    throw validationError(
      "body.data",
      `image is ${info.width}x${info.height}; frames must be from 320x240 to 3840x2160`,
    );
  }
  return {
    mime: mimeType as DecodedFrame["mime"],
    bytes,
    normalized: info.normalized,
    width: info.width,
    height: info.height,
  };
}

function frameKey(kek: Buffer): Buffer {
  return Buffer.from(hkdfSync("sha256", kek, Buffer.alloc(0), Buffer.from("cua machine frames v1"), 32));
}

export function sealFrame(kek: Buffer, machineId: string, frameId: string, plain: Buffer) {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", frameKey(kek), iv);
  c.setAAD(Buffer.from(`${machineId}/${frameId}`));
  const ciphertext = Buffer.concat([c.update(plain), c.final()]);
  return { ciphertext, iv, tag: c.getAuthTag() };
}

export function openFrame(
  kek: Buffer,
  machineId: string,
  frameId: string,
  s: { ciphertext: Uint8Array; iv: Uint8Array; tag: Uint8Array },
): Buffer {
  const d = createDecipheriv("aes-256-gcm", frameKey(kek), Buffer.from(s.iv));
  d.setAAD(Buffer.from(`${machineId}/${frameId}`));
  d.setAuthTag(Buffer.from(s.tag));
  return Buffer.concat([d.update(Buffer.from(s.ciphertext)), d.final()]);
}
