// POST /v1/predict with a large screenshot, which the JSON body parser decodes straight from the body's bytes
// (apps/api/src/http/screenshot-body.ts). Each body is sent twice: as written, and with its root key spelled
// "\u0073creenshot" (the same JSON value, which the fast path leaves to the plain parse). The answers must be
// the same: status, envelope, code, message, field paths, actions. And no decoded screenshot stays behind.
import { randomBytes } from "node:crypto";
import { makePng, predecodedCount } from "@cua/base/images/screenshot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseScreenshotBody } from "../src/http/screenshot-body.ts";
import { call, envelope, type Res, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
beforeAll(async () => {
  s = await startTestServer();
  acct = await s.account({ credits: 0 });
});
afterAll(async () => {
  await s.stop();
});

const W = 200;
const H = 150;
const noise = randomBytes(W * H * 4);
const PNG = makePng(W, H, (x, y) => {
  const i = (y * W + x) * 4;
  return [noise[i]!, noise[i + 1]!, noise[i + 2]!, 255];
});
const BIG = PNG.toString("base64"); // about 160 KB: over the fast path's 16 KB floor
// with "=" padding (bytes after IEND are ignored)
const PADDED = [1, 2]
  .map((k) => Buffer.concat([PNG, Buffer.alloc(k)]).toString("base64"))
  .find((b) => b.endsWith("="))!;
const SMALL = makePng(32, 20).toString("base64");

const send = (raw: string, key = acct.test_key) =>
  call(s.url, "POST", "/v1/predict", { key, raw, headers: { "Content-Type": "application/json" } });

/** status and body without what differs per request */
function observed(r: Res) {
  const strip = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(strip)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([k]) => k !== "request_id" && k !== "id")
              .map(([k, x]) => [k, strip(x)]),
          )
        : v;
  return { status: r.status, body: strip(r.body) };
}

async function sameBothWays(raw: string, key = acct.test_key) {
  expect(raw).toContain('"screenshot":');
  const fast = await send(raw, key);
  const plain = await send(raw.replaceAll('{"screenshot":', '{"\\u0073creenshot":'), key);
  expect(observed(fast)).toEqual(observed(plain));
  expect(predecodedCount()).toBe(0);
  return fast;
}

describe("a large screenshot decoded from the body's bytes answers as the plain parse", () => {
  it("a valid body: 200 with the image's size", async () => {
    const raw = `{"screenshot":"${BIG}","instruction":"click 10,20 then type 'hi'","screen_width":${W}}`;
    expect(parseScreenshotBody(Buffer.from(raw))).not.toBeNull(); // the fast path takes it
    const r = await sameBothWays(
      `{"screenshot":"${BIG}","instruction":"click 10,20 then type 'hi'","screen_width":${W}}`,
    );
    expect(r.status).toBe(200);
    expect(r.body.screen_width ?? r.body.coordinate_space?.width ?? W).toBe(W);
  });

  it("a PNG data URI: 200; a JPEG data URI over PNG bytes: 400 INVALID_SCREENSHOT", async () => {
    expect((await sameBothWays(`{"screenshot":"data:image/png;base64,${BIG}","instruction":"click 1,2"}`)).status).toBe(
      200,
    );
    const r = await sameBothWays(`{"screenshot":"data:image/jpeg;base64,${BIG}","instruction":"click 1,2"}`);
    envelope(r, 400, "INVALID_SCREENSHOT");
  });

  it("screen_width/height that differ from the image: 422 at that field", async () => {
    const r = await sameBothWays(
      `{"screenshot":"${BIG}","instruction":"click 1,2","screen_width":640,"screen_height":${H}}`,
    );
    const e = envelope(r, 422, "VALIDATION_ERROR");
    expect(e.details).toEqual([{ path: "body.screen_width", message: expect.stringContaining(String(W)) }]);
  });

  it.each([
    ["non-canonical padding", `${BIG.slice(0, -4)}${BIG.slice(-4, -3)}R==`],
    ["URL-safe characters", BIG.replaceAll("+", "-")],
    ["an escaped line break inside", `${BIG.slice(0, 4000)}\\n${BIG.slice(4000)}`],
    ["an escaped space inside", `${BIG.slice(0, 4000)}\\u0020${BIG.slice(4000)}`],
    ["no padding", PADDED.replace(/=+$/, "")],
    ["= in the middle", `${BIG.slice(0, 400)}=${BIG.slice(401)}`],
    ["valid base64 of something else", Buffer.from("x".repeat(120_000)).toString("base64")],
  ])("%s: 400 INVALID_SCREENSHOT, same message", async (_n, shot) => {
    const r = await sameBothWays(`{"screenshot":"${shot}","instruction":"click 1,2"}`);
    envelope(r, 400, "INVALID_SCREENSHOT");
  });

  it("an escaped slash inside the base64 is the same string: 200", async () => {
    const i = BIG.indexOf("/");
    expect(i).toBeGreaterThan(0);
    const r = await sameBothWays(`{"screenshot":"${BIG.slice(0, i)}\\/${BIG.slice(i + 1)}","instruction":"click 1,2"}`);
    expect(r.status).toBe(200);
  });

  it("an unknown field: 422 at its path", async () => {
    const e = envelope(
      await sameBothWays(`{"screenshot":"${BIG}","instruction":"x","surprise":1}`),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details.map((d: { path: string }) => d.path)).toContain("body.surprise");
  });

  it("a NUL in another field: 422", async () => {
    const e = envelope(
      await sameBothWays(`{"screenshot":"${BIG}","instruction":"a\\u0000b"}`),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details[0].path).toBe("body.instruction");
  });

  it("nesting over 64 levels in another field: 422", async () => {
    const deep = `${"[".repeat(70)}${"]".repeat(70)}`;
    envelope(await sameBothWays(`{"screenshot":"${BIG}","instruction":"x","tools":${deep}}`), 422, "VALIDATION_ERROR");
  });

  it.each([
    ["a trailing comma", `{"screenshot":"${BIG}",}`],
    ["a bad literal before", `{"instruction":tru,"screenshot":"${BIG}"}`],
    ["no closing brace", `{"screenshot":"${BIG}","instruction":"x"`],
    ["a control character inside the base64", `{"screenshot":"${BIG.slice(0, 4000)}\t${BIG.slice(4000)}"}`],
  ])("malformed JSON (%s): 400 MALFORMED_JSON", async (_n, raw) => {
    envelope(await sameBothWays(raw), 400, "MALFORMED_JSON");
  });

  it("a later duplicate key wins, as in JSON.parse: 400 for its short value", async () => {
    const r = await sameBothWays(`{"screenshot":"${BIG}","instruction":"x","screenshot":"${SMALL.slice(0, 40)}"}`);
    envelope(r, 400, "INVALID_SCREENSHOT");
  });

  it("an earlier duplicate loses: 200 for the large value that comes last", async () => {
    const r = await sameBothWays(`{"screenshot":"QUJD","instruction":"click 1,2","screenshot":"${BIG}"}`);
    expect(r.status).toBe(200);
  });

  it("the key and a large value inside another string: that string is the instruction (too long: 422)", async () => {
    const r = await sameBothWays(
      `{"screenshot":"${SMALL}","instruction":"type \\"screenshot\\":\\"${BIG.slice(0, 20_000)}\\""}`,
    );
    expect(r.body.error.details[0].path).toBe("body.instruction");
  });

  it("a large screenshot nested in the trajectory only", async () => {
    const r = await sameBothWays(
      `{"screenshot":"${SMALL}","instruction":"click 1,2","trajectory":[{"screenshot":"${BIG}","actions":[]}]}`,
    );
    expect(r.status).toBe(200);
  });

  it("refused before the use case (a bad key): 401, and the decoded screenshot is dropped", async () => {
    const r = await sameBothWays(`{"screenshot":"${BIG}","instruction":"x"}`, "sk_test_nope");
    expect(r.status).toBe(401);
  });

  it("as an event stream (a hijacked reply) refused before the use case: nothing stays behind", async () => {
    const raw = `{"screenshot":"${BIG}","instruction":"click 1,2"}`;
    const bad = await call(s.url, "POST", "/v1/predict", {
      key: "sk_test_nope",
      raw,
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    });
    expect(bad.text).toContain("event: error");
    expect(predecodedCount()).toBe(0);
    const ok = await call(s.url, "POST", "/v1/predict", {
      key: acct.test_key,
      raw,
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    });
    expect(ok.text).toContain("event: result");
    expect(predecodedCount()).toBe(0);
  });

  it("an 8 MB screenshot (under the 10,485,760-character cap) is accepted", async () => {
    const w = 1400;
    const h = 1300;
    const px = randomBytes(w * h * 3);
    const big = makePng(w, h, (x, y) => {
      const i = (y * w + x) * 3;
      return [px[i]!, px[i + 1]!, px[i + 2]!, 255];
    }).toString("base64");
    expect(big.length).toBeGreaterThan(8_000_000);
    expect(big.length).toBeLessThan(10_485_760);
    const r = await sameBothWays(`{"screenshot":"${big}","instruction":"click 1,2","screen_height":${h}}`);
    expect(r.status).toBe(200);
  });
});
