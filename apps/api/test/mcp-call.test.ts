// Issue 11 "MCP server", the call path's pure parts (apps/api/src/mcp/call.ts): how a tool's arguments become
// its REST request, and how a REST answer becomes the tool result (DECISIONS "Compatibility amendments",
// bullet "MCP server": structured content and JSON text, screenshots as image content, errors as isError).
import { makePng } from "@cua/base/images/screenshot";
import { operationById } from "@cua/core/operations/registry";
import { describe, expect, it } from "vitest";
import { type RestAnswer, restRequestOf, toolResultOf } from "../src/mcp/call.ts";
import type { McpOperation } from "../src/mcp/operations.ts";

const op = (id: string) => {
  const o = operationById(id);
  if (!o?.mcp) throw new Error(`no MCP operation ${id}`);
  return o as McpOperation;
};
const json = (status: number, body: unknown, headers: Record<string, string> = {}): RestAnswer => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8", ...headers },
  body: Buffer.from(JSON.stringify(body)),
});
const PNG_B64 = makePng(8, 8).toString("base64");
const JPEG_B64 = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(60, 1)]).toString("base64");

describe("restRequestOf: a tool's arguments as its REST request", () => {
  it.each([
    ["machines.get", { id: "mch_test_ab" }, { method: "GET", url: "/v1/machines/mch_test_ab" }],
    [
      "machines.list",
      { limit: 5, status: "running", cursor: "c/1" },
      { method: "GET", url: "/v1/machines?limit=5&status=running&cursor=c%2F1" },
    ],
    ["machines.start", { id: "m 1" }, { method: "POST", url: "/v1/machines/m%201/start", body: {} }],
    [
      "machines.files",
      { id: "mch_test_ab", op: "read", path: "/tmp/x" },
      { method: "POST", url: "/v1/machines/mch_test_ab/files/read", body: { path: "/tmp/x" } },
    ],
    ["sessions.delete", { session_id: "ses_1" }, { method: "DELETE", url: "/v1/sessions/ses_1" }],
    ["usage.get", undefined, { method: "GET", url: "/v1/usage" }],
  ])("%s %j", (id, args, expected) => {
    expect(restRequestOf(op(id), args as Record<string, unknown> | undefined)).toEqual(expected);
  });

  it("a missing path parameter is the operation's VALIDATION_ERROR at path.<name>", () => {
    const e = (() => {
      try {
        restRequestOf(op("machines.files"), { id: "mch_test_ab", path: "/tmp/x" });
      } catch (err) {
        return err as { code: string; extras: { details: { path: string }[] } };
      }
    })();
    expect(e?.code).toBe("VALIDATION_ERROR");
    expect(e?.extras.details.map((d) => d.path)).toContain("path.op");
  });
});

describe("toolResultOf: a REST answer as the tool result", () => {
  it("a JSON success: structuredContent and the same JSON as text, no isError, status in _meta", () => {
    const r = toolResultOf(json(201, { id: "x", n: 1 }, { "x-credits-charged": "0", "x-service-key-kind": "test" }));
    expect(r.isError).toBeUndefined();
    expect(r.structuredContent).toEqual({ id: "x", n: 1 });
    expect(r.content).toEqual([{ type: "text", text: '{"id":"x","n":1}' }]);
    expect(r._meta).toEqual({ "svc/http_status": 201, "svc/x-credits-charged": "0", "svc/x-service-key-kind": "test" });
  });

  it("an error status: isError with the envelope as structuredContent and text", () => {
    const env = { error: { code: "INSUFFICIENT_SCOPE", message: "m", type: "forbidden" } };
    const r = toolResultOf(json(403, env));
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toEqual(env);
    expect(JSON.parse((r.content[0] as { text: string }).text)).toEqual(env);
  });

  it.each([
    ["screenshot (PNG)", { screenshot: PNG_B64 }, "image/png"],
    ["image_b64 (PNG)", { image_b64: PNG_B64, mime_type: "image/png" }, "image/png"],
    ["a PNG data URI", { screenshot: `data:image/png;base64,${PNG_B64}` }, "image/png"],
    ["a JPEG", { screenshot: JPEG_B64 }, "image/jpeg"],
    ["nested in batch results", { results: [{ screenshot: PNG_B64 }] }, "image/png"],
  ])("%s becomes image content; the text names it; structuredContent keeps the base64", (_n, body, mime) => {
    const r = toolResultOf(json(200, body));
    const images = r.content.filter((c) => c.type === "image");
    expect(images).toHaveLength(1);
    expect(images[0]).toMatchObject({ type: "image", mimeType: mime });
    expect((r.content[0] as { text: string }).text).not.toContain(PNG_B64.slice(0, 40));
    expect((r.content[0] as { text: string }).text).toContain(`<${mime}, `);
    expect(r.structuredContent).toEqual(body);
  });

  it("a non-image string under an image key, or a short one, stays text", () => {
    const body = { screenshot: "not an image at all, just words ".repeat(4), image: "abc" };
    const r = toolResultOf(json(200, body));
    expect(r.content.filter((c) => c.type === "image")).toHaveLength(0);
    expect(JSON.parse((r.content[0] as { text: string }).text)).toEqual(body);
  });

  it("a raw image answer is image content; a non-JSON body is text", () => {
    const png = makePng(4, 4);
    const img = toolResultOf({ status: 200, headers: { "content-type": "image/png" }, body: png });
    expect(img.content).toEqual([{ type: "image", data: png.toString("base64"), mimeType: "image/png" }]);
    const txt = toolResultOf({
      status: 502,
      headers: { "content-type": "text/plain" },
      body: Buffer.from("bad gateway"),
    });
    expect(txt).toMatchObject({ isError: true, content: [{ type: "text", text: "bad gateway" }] });
  });
});
