// Screenshots for the provider tests, built without any image library.
import { deflateSync } from "node:zlib";
import { encodePng } from "../../src/providers/png.ts";
import type { DecodedImage, PredictInput } from "../../src/types.ts";

/** A solid-colour PNG of the given size. */
export function solidPng(width: number, height: number, rgb: [number, number, number] = [236, 239, 244]): DecodedImage {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) data.set(rgb, i * 3);
  return { bytes: encodePng({ width, height, channels: 3, data }), mime: "image/png", width, height };
}

/** Bytes that start like a JPEG (enough for the stand-ins, which only sniff the magic number). */
export function jpegStub(width: number, height: number): DecodedImage {
  const bytes = Buffer.concat([
    Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16]),
    Buffer.from("JFIF\0"),
    Buffer.alloc(64, 7),
  ]);
  return { bytes, mime: "image/jpeg", width, height };
}

/** A hand-built palette PNG with an Up-filtered row, to test the decoder against a second encoder. */
export function palettePng(): { bytes: Buffer; pixels: [number, number, number][] } {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = (crcTable[(c ^ b) & 0xff] as number) ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, body: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.length);
    const tb = Buffer.concat([Buffer.from(type, "latin1"), body]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(tb));
    return Buffer.concat([len, tb, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(2, 0);
  ihdr.writeUInt32BE(2, 4);
  ihdr[8] = 8;
  ihdr[9] = 3;
  const plte = Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 255]);
  // row 0: filter None, indices 0 1; row 1: filter Up, deltas 2 -1 -> indices 2 0
  const raw = Buffer.from([0, 0, 1, 2, 2, 0xff]);
  const bytes = Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", ihdr),
    chunk("PLTE", plte),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
  return {
    bytes,
    pixels: [
      [255, 0, 0],
      [0, 255, 0],
      [0, 0, 255],
      [255, 0, 0],
    ],
  };
}

export function predictInput(over: Partial<PredictInput> = {}): PredictInput {
  return {
    screenshot: solidPng(1280, 800),
    instruction: "Open the Settings menu",
    cuaVersion: "v5",
    maxActions: 5,
    trajectory: [],
    ...over,
  };
}
