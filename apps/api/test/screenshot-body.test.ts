// The JSON body parser's screenshot fast path (apps/api/src/http/screenshot-body.ts): on every body it either
// answers exactly what JSON.parse of the whole body gives (and the screenshot's base64 decode), or nothing, so
// the plain parse decides. Hostile bodies: escapes inside the base64, duplicated and escaped keys, the key
// inside another string or a nested object, the placeholder's own text, bad UTF-8, huge values.
import { randomBytes } from "node:crypto";
import { isStrictBase64, makePng } from "@cua/base/images/screenshot";
import { describe, expect, it } from "vitest";
import { parseScreenshotBody } from "../src/http/screenshot-body.ts";

const side = 160;
const noise = randomBytes(side * side * 4);
const PNG = makePng(side, side, (x, y) => {
  const i = (y * side + x) * 4;
  return [noise[i]!, noise[i + 1]!, noise[i + 2]!, 255];
});
const B64 = PNG.toString("base64"); // about 136 KB
const B64_PAD1 = Buffer.concat([PNG, Buffer.from([1, 2])]).toString("base64");
const B64_PAD2 = Buffer.concat([PNG, Buffer.from([1])]).toString("base64");

/** what the server's plain parse gives */
const plain = (buf: Buffer) => JSON.parse(buf.toString("utf8"));

/** The fast path agrees with the plain parse; returns whether it took the body. */
function agrees(body: string | Buffer): boolean {
  const buf = Buffer.isBuffer(body) ? body : Buffer.from(body, "utf8");
  const fast = parseScreenshotBody(buf);
  if (!fast) return false;
  const value = plain(buf);
  expect(fast.value).toStrictEqual(value);
  expect(Object.keys(fast.value)).toEqual(Object.keys(value));
  expect(fast.screenshot).toBe(value.screenshot);
  const b64 = fast.screenshot.startsWith("data:")
    ? fast.screenshot.slice(fast.screenshot.indexOf(",") + 1)
    : fast.screenshot;
  expect(fast.bytes.equals(Buffer.from(b64, "base64"))).toBe(true);
  expect(isStrictBase64(b64, fast.bytes)).toBe(true);
  expect(fast.hasEscape).toBe(buf.includes("\\u"));
  return true;
}

describe("takes the common bodies", () => {
  it.each([
    ["screenshot first", `{"screenshot":"${B64}","instruction":"click 10,20"}`],
    ["screenshot last", `{"instruction":"click 10,20","screen_width":160,"screenshot":"${B64}"}`],
    ["one = of padding", `{"screenshot":"${B64_PAD1}"}`],
    ["two = of padding", `{"screenshot":"${B64_PAD2}"}`],
    ["a PNG data URI", `{"screenshot":"data:image/png;base64,${B64}"}`],
    ["a JPEG data URI (the type is checked later)", `{"screenshot":"data:image/jpeg;base64,${B64}"}`],
    ["whitespace around the colon", `{ "screenshot" \n:\t "${B64}" , "x" : [1,{"y":null}] }`],
    [
      "non-ASCII and escapes in the other fields",
      `{"instruction":"cliquez sur « OK » \\u00e9 \\" \\\\","screenshot":"${B64}"}`,
    ],
    [
      "a nested screenshot after the root's",
      `{"screenshot":"${B64}","trajectory":[{"screenshot":"${B64}","actions":[]}]}`,
    ],
    [
      "a short nested screenshot before the root's",
      `{"trajectory":[{"screenshot":"QUJD","actions":[]}],"screenshot":"${B64}"}`,
    ],
    ["the word as a value before the key", `{"a":"screenshot","b":["screenshot"],"screenshot":"${B64}"}`],
    ["a __proto__ field", `{"__proto__":{"a":1},"screenshot":"${B64}"}`],
    [
      "a NUL in another field (the parser's inspection refuses it after)",
      `{"instruction":"a\\u0000b","screenshot":"${B64}"}`,
    ],
  ])("%s", (_n, body) => {
    expect(agrees(body)).toBe(true);
  });
});

describe("leaves the rest to the plain parse", () => {
  it.each([
    ["a small screenshot", `{"screenshot":"${B64.slice(0, 1000)}"}`],
    ["an escaped slash inside the base64", `{"screenshot":"${B64.replace("/", "\\/")}"}`],
    ["an escaped letter inside the base64", `{"screenshot":"\\u0041${B64.slice(1)}"}`],
    ["a line break inside the base64 (invalid JSON)", `{"screenshot":"${B64.slice(0, 5000)}\n${B64.slice(5000)}"}`],
    ["an escaped line break inside the base64", `{"screenshot":"${B64.slice(0, 5000)}\\n${B64.slice(5000)}"}`],
    ["URL-safe base64", `{"screenshot":"${B64.replaceAll("+", "-").replaceAll("/", "_")}"}`],
    ["no padding", `{"screenshot":"${B64_PAD1.slice(0, -1)}"}`],
    ["non-canonical padding", `{"screenshot":"${B64_PAD2.slice(0, -3)}R=="}`],
    ["= inside", `{"screenshot":"${B64.slice(0, 400)}=${B64.slice(401)}"}`],
    ["a data URI with another type", `{"screenshot":"data:image/gif;base64,${B64}"}`],
    ["a data URI with parameters", `{"screenshot":"data:image/png;charset=x;base64,${B64}"}`],
    ["a later duplicate key (JSON.parse keeps the last)", `{"screenshot":"${B64}","screenshot":"QUJD"}`],
    ["a later duplicate with an escaped key", `{"screenshot":"${B64}","\\u0073creenshot":"QUJD"}`],
    ["an escaped key only", `{"\\u0073creenshot":"${B64}"}`],
    ["the key inside another string", `{"instruction":"\\"screenshot\\":\\"${B64}\\""}`],
    ["only a nested screenshot", `{"trajectory":[{"screenshot":"${B64}"}],"instruction":"x"}`],
    ["a nested one first, the root's after", `{"trajectory":[{"screenshot":"${B64}"}],"screenshot":"${B64}"}`],
    ["a screenshot key as a value", `{"a":["screenshot","${B64}"]}`],
    ["an array root", `[{"screenshot":"${B64}"}]`],
    ["a string root", `"screenshot":"${B64}"`],
    ["malformed JSON after the value", `{"screenshot":"${B64}",}`],
    ["malformed JSON before the value", `{"a":tru,"screenshot":"${B64}"}`],
    ["an unterminated value", `{"screenshot":"${B64}`],
    ["the placeholder's escape elsewhere", `{"note":"\\u0001cua.screenshot","screenshot":"${B64}"}`],
    ["the placeholder's escape as a later duplicate", `{"screenshot":"${B64}","screenshot":"\\u0001cua.screenshot"}`],
  ])("%s", (_n, body) => {
    const buf = Buffer.from(body, "utf8");
    expect(parseScreenshotBody(buf)).toBeNull();
  });

  it("a value over 10,485,760 base64 characters (the 413 is the plain path's)", () => {
    const big = "QUJD".repeat(2_621_441); // 10,485,764 characters
    expect(parseScreenshotBody(Buffer.from(`{"screenshot":"${big}"}`))).toBeNull();
  });

  it("a value of exactly 10,485,760 base64 characters is taken", () => {
    const big = "QUJD".repeat(2_621_440);
    expect(agrees(`{"screenshot":"${big}","instruction":"x"}`)).toBe(true);
  });
});

describe("bytes the plain parse decodes with replacement characters", () => {
  it("invalid UTF-8 around the screenshot gives the same strings", () => {
    const body = Buffer.concat([
      Buffer.from('{"instruction":"a\xff\xfe', "latin1"),
      Buffer.from([0xe2, 0x82]), // a truncated three-byte sequence right before the closing quote
      Buffer.from(`","screenshot":"${B64}","x":"`, "latin1"),
      Buffer.from([0xc3]),
      Buffer.from('"}', "latin1"),
    ]);
    expect(agrees(body)).toBe(true);
  });
});

describe("random damage", () => {
  it("a byte changed anywhere: the fast path agrees with the plain parse or steps aside", () => {
    const base = Buffer.from(
      `{"instruction":"click \\"OK\\" \\u00e9","trajectory":[{"screenshot":"QUJD","actions":[]}],"screenshot":"${B64.slice(0, 20000)}","screen_width":160}`,
      "latin1",
    );
    const alphabet = Buffer.from('"\\:,{}[]u0 \n=+/Aa-_\x01\x00\xff', "latin1");
    let taken = 0;
    for (let n = 0; n < 3000; n++) {
      const buf = Buffer.from(base);
      const changes = 1 + (n % 3);
      for (let c = 0; c < changes; c++) {
        // mostly near the screenshot's edges and in the small fields, where the structure is
        const edge = [0, 70, 100, 20100, base.length - 20][n % 5]!;
        const at = Math.min(buf.length - 1, Math.max(0, edge + Math.floor(Math.random() * 60) - 30));
        buf[at] = alphabet[Math.floor(Math.random() * alphabet.length)]!;
      }
      let valid = true;
      try {
        plain(buf);
      } catch {
        valid = false;
      }
      const fast = parseScreenshotBody(buf);
      if (!valid) expect(fast).toBeNull();
      else if (fast && agrees(buf)) taken++;
    }
    expect(taken).toBeGreaterThan(20); // and the others were checked against the plain parse
  });
});
