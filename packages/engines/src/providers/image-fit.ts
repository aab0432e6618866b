// Fitting screenshots to what a model can see natively, so coordinates stay exact.
// A provider that receives a larger image shrinks it silently and the model then answers in the shrunken
// space. We shrink it ourselves (PNG) and scale the answers back; a JPEG that is too large is sent as it is
// with the provider told to reject rather than resize it (Anthropic `oversized_image: "error"`), so a wrong
// click can never come out of it.
import type { DecodedImage } from "../types.ts";
import { decodePng, downscale, encodePng } from "./png.ts";

export interface ImageLimits {
  maxLongEdge: number;
  maxPixels: number;
}

export interface PreparedImage {
  bytes: Buffer;
  mime: DecodedImage["mime"];
  /** size of the image sent to the provider: the model's coordinate space */
  width: number;
  height: number;
  /** original size (the caller's coordinate space) */
  originalWidth: number;
  originalHeight: number;
  resized: boolean;
}

export function fitSize(width: number, height: number, limits: ImageLimits): { width: number; height: number } {
  const scale = Math.min(
    1,
    limits.maxLongEdge / Math.max(width, height),
    Math.sqrt(limits.maxPixels / (width * height)),
  );
  if (scale >= 1) return { width, height };
  return { width: Math.max(1, Math.floor(width * scale)), height: Math.max(1, Math.floor(height * scale)) };
}

export function prepareImage(img: DecodedImage, limits: ImageLimits): PreparedImage {
  const same: PreparedImage = {
    bytes: img.bytes,
    mime: img.mime,
    width: img.width,
    height: img.height,
    originalWidth: img.width,
    originalHeight: img.height,
    resized: false,
  };
  const target = fitSize(img.width, img.height, limits);
  if (target.width === img.width && target.height === img.height) return same;
  if (img.mime !== "image/png") return same;
  const raster = decodePng(img.bytes);
  if (!raster || raster.width !== img.width || raster.height !== img.height) return same;
  const small = downscale(raster, target.width, target.height);
  return {
    ...same,
    bytes: encodePng(small),
    mime: "image/png",
    width: target.width,
    height: target.height,
    resized: true,
  };
}

const clamp = (v: number, size: number) => Math.min(size - 1, Math.max(0, v));

/** Model space -> caller space (pixel centres map to pixel centres). */
export function toCallerSpace(p: PreparedImage, x: number, y: number): { x: number; y: number } {
  if (!p.resized) return { x, y };
  return {
    x: clamp(Math.round(((x + 0.5) * p.originalWidth) / p.width - 0.5), p.originalWidth),
    y: clamp(Math.round(((y + 0.5) * p.originalHeight) / p.height - 0.5), p.originalHeight),
  };
}

/** Caller space -> model space (for replaying earlier actions). */
export function toModelSpace(p: PreparedImage, x: number, y: number): { x: number; y: number } {
  if (!p.resized) return { x, y };
  return {
    x: clamp(Math.round(((x + 0.5) * p.width) / p.originalWidth - 0.5), p.width),
    y: clamp(Math.round(((y + 0.5) * p.height) / p.originalHeight - 0.5), p.height),
  };
}
