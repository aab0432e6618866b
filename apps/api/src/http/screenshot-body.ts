// The JSON body parser's fast path for a large top-level "screenshot" (issue 16: on POST /v1/predict with a
// 345 KB body, decoding the body to a string and JSON.parse copying the base64 string again were a third of
// the process). The screenshot's value is located in the raw bytes, made a string once and base64-decoded
// there (the bytes are left for decodeScreenshot), and JSON.parse reads the rest of the body with a
// placeholder in its place.
//
// It answers exactly what the plain parse would, or nothing (then the caller parses the whole body as
// before, which decides every refusal: malformed JSON, bad base64, NUL, depth):
// - the value is taken only when it is strict, canonical, padded base64 (optionally after an exact
//   data:image/png;base64, or data:image/jpeg;base64, prefix), within the screenshot limits; such text holds
//   no quote, backslash, control or non-ASCII byte, so as JSON it is a string token of exactly those
//   characters, whatever JSON.parse makes of the rest;
// - the placeholder is a string no other place of the body can produce (its `\u0001` escape must appear
//   nowhere else in the text), and after the parse it must be the root object's own "screenshot" value: a
//   match inside another string or a nested object, an escaped key, or a duplicate key that JSON.parse would
//   let win all leave the placeholder elsewhere or nowhere, and the plain parse runs.

import { isAscii } from "node:buffer";
import { isStrictBase64, MAX_SCREENSHOT_B64_CHARS, PREDECODED_MIN_CHARS } from "@cua/base/images/screenshot";

const KEY = Buffer.from('"screenshot"', "latin1");
const PLACEHOLDER = "\u0001cua.screenshot";
const PLACEHOLDER_JSON = Buffer.from(JSON.stringify(PLACEHOLDER), "latin1"); // "\u0001cua.screenshot"
const ESCAPE_MARK = Buffer.from("\\u0001", "latin1");
const DATA_PREFIXES = [
  Buffer.from("data:image/png;base64,", "latin1"),
  Buffer.from("data:image/jpeg;base64,", "latin1"),
];
const DATA = Buffer.from("data:", "latin1");

export interface ScreenshotBody {
  /** what JSON.parse of the whole body gives */
  value: Record<string, unknown>;
  /** the root's "screenshot" string */
  screenshot: string;
  /** its decoded bytes (after the data URI prefix, if any) */
  bytes: Buffer;
  /** whether the body holds a `\u` escape (the NUL / lone surrogate checks need to look) */
  hasEscape: boolean;
}

const isWs = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The body parsed with its screenshot decoded from the bytes, or null: parse it the plain way. */
export function parseScreenshotBody(buf: Buffer): ScreenshotBody | null {
  if (buf.length < PREDECODED_MIN_CHARS) return null;
  // the first `"screenshot": "<16 KB or more>` in the bytes (an earlier short value or a "screenshot" that is not
  // followed by a colon is skipped; whether the one found is the root's own is decided after the parse)
  let start = -1;
  let end = -1;
  let prefix = 0;
  for (let k = buf.indexOf(KEY); k >= 0 && start < 0; k = buf.indexOf(KEY, k + 1)) {
    let i = k + KEY.length;
    while (isWs(buf[i])) i++;
    if (buf[i] !== 0x3a) continue; // :
    i++;
    while (isWs(buf[i])) i++;
    if (buf[i] !== 0x22) continue; // "
    const close = buf.indexOf(0x22, i + 1);
    if (close < 0) return null;
    if (close - (i + 1) < PREDECODED_MIN_CHARS) continue;
    start = i + 1;
    end = close;
  }
  if (start < 0) return null;
  if (buf.subarray(start, start + DATA.length).equals(DATA)) {
    const p = DATA_PREFIXES.find((d) => buf.subarray(start, start + d.length).equals(d));
    if (!p) return null;
    prefix = p.length;
  }
  const n = end - start - prefix;
  if (n < PREDECODED_MIN_CHARS || n > MAX_SCREENSHOT_B64_CHARS) return null;
  const head = buf.subarray(0, start - 1);
  const tail = buf.subarray(end + 1);
  if (head.includes(ESCAPE_MARK) || tail.includes(ESCAPE_MARK)) return null;
  const screenshot = buf.toString("latin1", start, end);
  const b64 = prefix ? screenshot.slice(prefix) : screenshot;
  const bytes = Buffer.from(b64, "base64");
  if (!isStrictBase64(b64, bytes)) return null;
  const rest = Buffer.concat([head, PLACEHOLDER_JSON, tail]);
  let value: unknown;
  try {
    value = JSON.parse(isAscii(rest) ? rest.toString("latin1") : rest.toString("utf8"));
  } catch {
    return null;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const obj = value as Record<string, unknown>;
  if (!Object.hasOwn(obj, "screenshot") || obj.screenshot !== PLACEHOLDER) return null;
  obj.screenshot = screenshot;
  return { value: obj, screenshot, bytes, hasEscape: head.includes("\\u") || tail.includes("\\u") };
}
