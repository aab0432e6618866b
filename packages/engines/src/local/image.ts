// Decoding of the sent screenshot (PNG or JPEG bytes) into RGBA pixels, plus small pixel helpers
// the local engine uses: luminance, crops, and a digest that keys the OCR cache.
import { createHash } from "node:crypto";
import type { DecodedImage } from "../types.ts";

/** RGBA pixels, 4 bytes per pixel, row-major, in the sent image's own space. */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8ClampedArray;
}

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

type CanvasModule = typeof import("@napi-rs/canvas");
let canvasModule: Promise<CanvasModule> | null = null;

/** The native canvas module (Skia), loaded once on first use. */
export function loadCanvasModule(): Promise<CanvasModule> {
  canvasModule ??= import("@napi-rs/canvas");
  return canvasModule;
}

/** SHA-256 of the image bytes, lowercase hex. */
export function imageDigest(image: DecodedImage): string {
  return createHash("sha256").update(image.bytes).digest("hex");
}

/**
 * Decodes PNG or JPEG bytes to RGBA. The decoded size wins over image.width/height when they differ
 * (the caller validates that they match before the engine is called).
 */
export async function decodeToRgba(image: DecodedImage): Promise<RgbaImage> {
  const { Image, createCanvas } = await loadCanvasModule();
  const img = new Image();
  img.src = image.bytes;
  const width = img.width;
  const height = img.height;
  if (!width || !height) throw new Error("the screenshot could not be decoded");
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, width, height).data;
  return { width, height, data: new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength) };
}

/** Encodes RGBA pixels as PNG (used to feed the tesseract fallback and by tests). */
export async function encodePng(image: RgbaImage): Promise<Buffer> {
  const { createCanvas } = await loadCanvasModule();
  const canvas = createCanvas(image.width, image.height);
  const ctx = canvas.getContext("2d");
  const imageData = ctx.createImageData(image.width, image.height);
  imageData.data.set(image.data);
  ctx.putImageData(imageData, 0, 0);
  return canvas.toBuffer("image/png");
}

/** Luminance 0..255 (Rec. 601 weights) of every pixel. */
export function toGray(image: RgbaImage): Uint8Array {
  const n = image.width * image.height;
  const out = new Uint8Array(n);
  const d = image.data;
  for (let i = 0, p = 0; i < n; i++, p += 4) {
    out[i] = ((d[p] ?? 0) * 299 + (d[p + 1] ?? 0) * 587 + (d[p + 2] ?? 0) * 114) / 1000;
  }
  return out;
}

export function clampBox(box: Box, width: number, height: number): Box {
  const x0 = Math.max(0, Math.min(width, Math.floor(box.x)));
  const y0 = Math.max(0, Math.min(height, Math.floor(box.y)));
  const x1 = Math.max(x0, Math.min(width, Math.ceil(box.x + box.width)));
  const y1 = Math.max(y0, Math.min(height, Math.ceil(box.y + box.height)));
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** Integer box helpers shared by OCR and grounding. */
export function unionBox(a: Box, b: Box): Box {
  const x0 = Math.min(a.x, b.x);
  const y0 = Math.min(a.y, b.y);
  const x1 = Math.max(a.x + a.width, b.x + b.width);
  const y1 = Math.max(a.y + a.height, b.y + b.height);
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

export function roundBox(b: Box): Box {
  const x = Math.round(b.x);
  const y = Math.round(b.y);
  return {
    x,
    y,
    width: Math.max(1, Math.round(b.x + b.width) - x),
    height: Math.max(1, Math.round(b.y + b.height) - y),
  };
}

export function boxCenter(b: Box): { x: number; y: number } {
  return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
}
