import { inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { CoreError } from "../errors.ts";
import {
  base64Problem,
  checkScreenSize,
  crc32,
  decodeScreenshot,
  MAX_SCREENSHOT_B64_CHARS,
  makePng,
  readImageHeader,
  toDataUri,
} from "./screenshot.ts";

// SPEC "POST /v1/predict" (screenshot: raw base64 or exact PNG/JPEG data URI, 100 to 10,485,760
// base64 chars), SPEC "Errors" (400 INVALID_SCREENSHOT, 413 PAYLOAD_TOO_LARGE), DECISIONS
// "Cross-cutting rules" (screen_width/height mismatch: 422 VALIDATION_ERROR with the field path).

/** A structurally real baseline JPEG: SOI, APP0, DQT, SOF0, DHT, SOS, scan bytes, EOI. */
function makeJpeg(width: number, height: number, opts: { sof?: number; noSof?: boolean; fill?: boolean } = {}): Buffer {
  const seg = (marker: number, payload: number[]) => [
    0xff,
    marker,
    (payload.length + 2) >> 8,
    (payload.length + 2) & 0xff,
    ...payload,
  ];
  const app0 = seg(0xe0, [0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0]);
  const dqt = seg(0xdb, [0, ...Array(64).fill(1)]);
  const sof = opts.noSof
    ? []
    : seg(opts.sof ?? 0xc0, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 1, 1, 0x11, 0]);
  const dht = seg(0xc4, [0x00, 1, ...Array(15).fill(0), 0]);
  const sos = seg(0xda, [1, 1, 0, 0, 63, 0]);
  const fill = opts.fill ? [0xff, 0xff] : [];
  return Buffer.from([
    0xff,
    0xd8,
    ...app0,
    ...fill,
    ...dqt,
    ...sof,
    ...dht,
    ...sos,
    ...Array(120).fill(0x55),
    0xff,
    0xd9,
  ]);
}

const png = makePng(64, 48, (x, y) => [x * 4, y * 5, 100, 255]);
const pngB64 = png.toString("base64");
const jpeg = makeJpeg(1920, 1080);
const jpegB64 = jpeg.toString("base64");

function errorOf(fn: () => unknown): CoreError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(CoreError);
    return e as CoreError;
  }
  throw new Error("expected a CoreError");
}

describe("makePng", () => {
  it("writes a PNG whose pixels decode back", () => {
    const p = makePng(3, 2, (x, y) => [x, y, 7, 200]);
    expect(p.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(readImageHeader(p)).toEqual({ mime: "image/png", width: 3, height: 2 });
    // IDAT holds filter byte + RGBA per row
    const idatLen = p.readUInt32BE(33);
    expect(p.toString("latin1", 37, 41)).toBe("IDAT");
    const raw = inflateSync(p.subarray(41, 41 + idatLen));
    expect([...raw]).toEqual([
      0, 0, 0, 7, 200, 1, 0, 7, 200, 2, 0, 7, 200, 0, 0, 1, 7, 200, 1, 1, 7, 200, 2, 1, 7, 200,
    ]);
  });
  it("defaults to white and opaque", () => {
    const p = makePng(1, 1);
    const raw = inflateSync(p.subarray(41, 41 + p.readUInt32BE(33)));
    expect([...raw]).toEqual([0, 255, 255, 255, 255]);
  });
  it.each([
    [0, 1],
    [1, 0],
    [1.5, 2],
    [20000, 1],
  ])("rejects size %sx%s", (w, h) => {
    expect(() => makePng(w, h)).toThrow(RangeError);
  });
  it("crc32 matches the PNG test vector", () => {
    expect(crc32(Buffer.from("IEND"))).toBe(0xae426082);
  });
});

describe("decodeScreenshot accepts (SPEC predict screenshot)", () => {
  it.each<[string, string, string, number, number]>([
    ["raw base64 PNG", pngB64, "image/png", 64, 48],
    ["PNG data URI", `data:image/png;base64,${pngB64}`, "image/png", 64, 48],
    ["raw base64 JPEG", jpegB64, "image/jpeg", 1920, 1080],
    ["JPEG data URI", `data:image/jpeg;base64,${jpegB64}`, "image/jpeg", 1920, 1080],
    ["progressive JPEG (SOF2)", makeJpeg(800, 600, { sof: 0xc2 }).toString("base64"), "image/jpeg", 800, 600],
    ["JPEG with fill bytes before a marker", makeJpeg(10, 20, { fill: true }).toString("base64"), "image/jpeg", 10, 20],
    ["large PNG", makePng(1920, 1080).toString("base64"), "image/png", 1920, 1080],
    [
      "PNG with bytes after IEND",
      Buffer.concat([png, Buffer.from("trailing")]).toString("base64"),
      "image/png",
      64,
      48,
    ],
  ])("%s", (_name, input, mime, width, height) => {
    const img = decodeScreenshot(input);
    expect(img.mime).toBe(mime);
    expect(img.width).toBe(width);
    expect(img.height).toBe(height);
    expect(Buffer.isBuffer(img.bytes)).toBe(true);
  });
  it("returns the exact decoded bytes", () => {
    expect(decodeScreenshot(pngB64).bytes.equals(png)).toBe(true);
  });
});

function corruptPng(mutate: (b: Buffer) => void): string {
  const b = Buffer.from(png);
  mutate(b);
  return b.toString("base64");
}

function pngWithChunks(chunks: [string, Buffer][]): string {
  const parts = [png.subarray(0, 33)]; // signature + IHDR
  // an ancillary text chunk keeps the payload over the 100-character minimum
  for (const [type, data] of [["tEXt", Buffer.from(`Comment\0${"x".repeat(100)}`)] as [string, Buffer], ...chunks]) {
    const c = Buffer.alloc(12 + data.length);
    c.writeUInt32BE(data.length, 0);
    c.write(type, 4, "latin1");
    data.copy(c, 8);
    c.writeUInt32BE(crc32(c, 4, 8 + data.length), 8 + data.length);
    parts.push(c);
  }
  return Buffer.concat(parts).toString("base64");
}

describe("decodeScreenshot rejects with 400 INVALID_SCREENSHOT (SPEC Errors)", () => {
  it.each<[string, string, string?]>([
    ["empty", ""],
    ["99 chars", "A".repeat(99)],
    ["too short even if valid", makePng(1, 1).toString("base64").slice(0, 96)],
    ["text, not base64", "this is not base64 at all! ".repeat(10)],
    ["whitespace inside", `${pngB64.slice(0, 100)}\n${pngB64.slice(100)}`, "whitespace"],
    ["leading space", ` ${pngB64}`, "whitespace"],
    ["missing padding", pngB64.replace(/=+$/, "") + (pngB64.endsWith("=") ? "" : "A"), "multiple of 4"],
    ["padding in the middle", `${pngB64.slice(0, 100)}==${pngB64.slice(102)}`, "padding"],
    ["URL-safe alphabet", pngB64.replace(/\+/g, "-").replace(/\//g, "_").replace(/^./, "-"), "URL-safe"],
    ["non-ASCII character", `${pngB64.slice(0, 100)}é${pngB64.slice(101)}`],
    ["valid base64 of text", Buffer.from("hello world ".repeat(20)).toString("base64"), "neither"],
    ["GIF bytes", Buffer.concat([Buffer.from("GIF89a"), Buffer.alloc(100)]).toString("base64"), "neither"],
    ["truncated PNG", png.subarray(0, png.length - 20).toString("base64"), "truncated"],
    ["PNG with bad IHDR CRC", corruptPng((b) => (b[29] = b[29]! ^ 0xff)), "checksum"],
    [
      "PNG with zero width",
      corruptPng((b) => {
        b.writeUInt32BE(0, 16);
        b.writeUInt32BE(crc32(b, 12, 29), 29);
      }),
      "size",
    ],
    [
      "PNG with bit depth 3",
      corruptPng((b) => {
        b[24] = 3;
        b.writeUInt32BE(crc32(b, 12, 29), 29);
      }),
      "bit depth",
    ],
    ["PNG without IHDR first", corruptPng((b) => b.write("IHDX", 12, "latin1"))],
    ["PNG without IDAT", pngWithChunks([["IEND", Buffer.alloc(0)]]), "IDAT"],
    [
      "PNG with a second IHDR",
      pngWithChunks([
        ["IHDR", Buffer.alloc(13)],
        ["IEND", Buffer.alloc(0)],
      ]),
      "second IHDR",
    ],
    ["JPEG without SOF", makeJpeg(10, 10, { noSof: true }).toString("base64"), "frame header"],
    ["JPEG with zero height", makeJpeg(10, 0).toString("base64"), "size"],
    ["JPEG truncated in a segment", jpeg.subarray(0, 100).toString("base64"), "truncated"],
    [
      "JPEG that ends after SOI",
      Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xd9]), Buffer.alloc(90)]).toString("base64"),
    ],
    ["data URI with image/jpg", `data:image/jpg;base64,${jpegB64}`, "image/jpeg"],
    ["data URI with image/gif", `data:image/gif;base64,${pngB64}`],
    ["data URI in upper case", `data:image/PNG;base64,${pngB64}`],
    ["data URI without base64 marker", `data:image/png,${pngB64}`],
    ["data URI with parameters", `data:image/png;charset=utf-8;base64,${pngB64}`],
    ["data URI without a comma", `data:image/png;base64${pngB64}`],
    ["data URI type does not match PNG bytes", `data:image/jpeg;base64,${pngB64}`, "image/png"],
    ["data URI type does not match JPEG bytes", `data:image/png;base64,${jpegB64}`, "image/jpeg"],
    ["data URI with a short payload", `data:image/png;base64,${"A".repeat(96)}`, "at least 100"],
    ["image too large (decompression bomb)", "", undefined],
    ["too much padding", `${pngB64.slice(0, 100)}===`],
  ])("%s", (name, input, fragment) => {
    if (name.startsWith("image too large")) {
      // a PNG header that claims 20000x20000 with a valid CRC
      const b = Buffer.from(png);
      b.writeUInt32BE(20000, 16);
      b.writeUInt32BE(20000, 20);
      b.writeUInt32BE(crc32(b, 12, 29), 29);
      input = b.toString("base64");
      fragment = "at most";
    }
    const e = errorOf(() => decodeScreenshot(input));
    expect(e.code).toBe("INVALID_SCREENSHOT");
    expect(e.status).toBe(400);
    expect(e.extras.details).toEqual([{ path: "body.screenshot", message: expect.any(String) }]);
    if (fragment) expect(e.message).toContain(fragment);
  });

  it("non-canonical padding bits are rejected", () => {
    // "QQ==" is "A"; "QR==" decodes to "A" too but has non-zero bits before the padding
    expect(base64Problem("QQ==")).toBeNull();
    expect(base64Problem("QR==")).toMatch(/non-canonical/);
    expect(base64Problem("QUI=")).toBeNull();
    expect(base64Problem("QUJ=")).toMatch(/non-canonical/);
    expect(base64Problem("Q===")).not.toBeNull();
  });

  it("a screenshot whose padding bits are not zero is refused (node's decoder alone would take it)", () => {
    // a PNG whose base64 ends in one "=" padding: its last character before "=" carries 2 unused bits
    let bytes = png;
    while (bytes.length % 3 !== 2) bytes = Buffer.concat([bytes, Buffer.from([0])]); // trailing bytes after IEND
    const good = bytes.toString("base64");
    expect(good.endsWith("=") && !good.endsWith("==")).toBe(true);
    expect(decodeScreenshot(good).width).toBeGreaterThan(0);
    const last = good[good.length - 2]!;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const bad = `${good.slice(0, -2)}${alphabet[alphabet.indexOf(last) | 1]}=`;
    expect(Buffer.from(bad, "base64").equals(bytes)).toBe(true); // same bytes to node
    const e = errorOf(() => decodeScreenshot(bad));
    expect(e.code).toBe("INVALID_SCREENSHOT");
    expect(e.message).toContain("non-canonical");
  });

  it("names the given field in details", () => {
    const e = errorOf(() => decodeScreenshot("x", "body.trajectory.3.screenshot"));
    expect(e.extras.details![0]!.path).toBe("body.trajectory.3.screenshot");
  });
});

describe("decodeScreenshot: over the cap is 413 PAYLOAD_TOO_LARGE (SPEC Limits: 10,485,760 base64 chars)", () => {
  it("10,485,761 characters", () => {
    const e = errorOf(() => decodeScreenshot("A".repeat(MAX_SCREENSHOT_B64_CHARS + 1)));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
    expect(e.status).toBe(413);
  });
  it("the cap counts the base64 part of a data URI only", () => {
    const e = errorOf(() => decodeScreenshot(`data:image/png;base64,${"A".repeat(MAX_SCREENSHOT_B64_CHARS + 4)}`));
    expect(e.code).toBe("PAYLOAD_TOO_LARGE");
  });
  it("exactly 10,485,760 characters is within the cap (then judged on content)", () => {
    // a real PNG padded after IEND up to exactly the cap
    const targetBytes = (MAX_SCREENSHOT_B64_CHARS / 4) * 3;
    const b = Buffer.concat([png, Buffer.alloc(targetBytes - png.length)]);
    const s = b.toString("base64");
    expect(s.length).toBe(MAX_SCREENSHOT_B64_CHARS);
    expect(decodeScreenshot(s).width).toBe(64);
  });
});

describe("checkScreenSize (DECISIONS: mismatch is 422 VALIDATION_ERROR with the field path)", () => {
  const img = { width: 1280, height: 720 };
  it.each<[number | undefined, number | undefined]>([
    [undefined, undefined],
    [1280, undefined],
    [undefined, 720],
    [1280, 720],
  ])("passes for %s x %s", (w, h) => {
    expect(() => checkScreenSize(img, w, h, "body")).not.toThrow();
  });
  it.each<[number | undefined, number | undefined, string[]]>([
    [1920, 720, ["body.screen_width"]],
    [1280, 1080, ["body.screen_height"]],
    [640, 360, ["body.screen_width", "body.screen_height"]],
  ])("rejects %s x %s", (w, h, paths) => {
    const e = errorOf(() => checkScreenSize(img, w, h, "body"));
    expect(e.code).toBe("VALIDATION_ERROR");
    expect(e.status).toBe(422);
    expect(e.extras.details!.map((d) => d.path)).toEqual(paths);
  });
  it("uses the given prefix", () => {
    const e = errorOf(() => checkScreenSize(img, 1, undefined, "body.session"));
    expect(e.extras.details![0]!.path).toBe("body.session.screen_width");
  });
});

describe("toDataUri round-trips through decodeScreenshot", () => {
  it("png", () => {
    expect(decodeScreenshot(toDataUri(png)).mime).toBe("image/png");
  });
  it("jpeg", () => {
    expect(decodeScreenshot(toDataUri(jpeg, "image/jpeg")).width).toBe(1920);
  });
});
