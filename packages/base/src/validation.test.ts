import { describe, expect, it } from "vitest";
import { z } from "zod";
import { detailsError, issuesToDetails, joinPath, requestValidationError } from "./validation.ts";

// DECISIONS "Error envelope and statuses": 422 VALIDATION_ERROR carries details [{path, message}].
describe("joinPath", () => {
  it.each<[string, PropertyKey[], string]>([
    ["body", [], "body"],
    ["body", ["max_actions"], "body.max_actions"],
    ["body", ["trajectory", 2, "actions", 0, "params", "x"], "body.trajectory.2.actions.0.params.x"],
    ["", ["a", 1], "a.1"],
    ["", [], ""],
  ])("%s + %j -> %s", (prefix, segs, expected) => {
    expect(joinPath(prefix, segs)).toBe(expected);
  });
});

describe("issuesToDetails", () => {
  const S = z.strictObject({ a: z.number(), b: z.array(z.string()) });
  it("one detail per unknown key and per issue", () => {
    const r = S.safeParse({ a: "x", b: ["ok", 3], c: 1, d: 2 });
    expect(r.success).toBe(false);
    const details = issuesToDetails(r.error!.issues, "body");
    expect(details.map((d) => d.path).sort()).toEqual(["body.a", "body.b.1", "body.c", "body.d"]);
    expect(details.find((d) => d.path === "body.c")!.message).toBe("unknown field");
  });
  it("detailsError names the first problem and is a 422", () => {
    const e = detailsError([{ path: "body.x", message: "bad" }]);
    expect(e.code).toBe("VALIDATION_ERROR");
    expect(e.status).toBe(422);
    expect(e.message).toBe("body.x: bad");
  });
});

// Issue 11: one mapper, one path spelling for request values: body.x, query.x, path.<param>.
describe("requestValidationError", () => {
  const Input = z.strictObject({
    id: z.string().min(3),
    steps: z.array(z.object({ command: z.string() })),
    limit: z
      .string()
      .optional()
      .refine((v) => v === undefined || v === "5", { message: "1 to 200", params: { errorCode: "INVALID_LIMIT" } }),
  });
  const issues = (v: unknown) => Input.safeParse(v).error!.issues;

  it("names path parameters path.<name>, the rest by where they came from, indices dotted", () => {
    const e = requestValidationError(issues({ id: "x", steps: [{ command: "a" }, {}], colour: 1 }), {
      default: "body",
      pathParams: ["id"],
    });
    expect(e.code).toBe("VALIDATION_ERROR");
    expect(e.status).toBe(422);
    expect((e.extras.details ?? []).map((d) => d.path).sort()).toEqual([
      "body.colour",
      "body.steps.1.command",
      "path.id",
    ]);
    expect(e.extras.details!.find((d) => d.path === "body.colour")!.message).toBe("unknown field");
    const q = requestValidationError(issues({ id: "abc", steps: "no" }), "query");
    expect(q.extras.details!.map((d) => d.path)).toEqual(["query.steps"]);
  });

  it("answers a value's 400 code before any 422 (DECISIONS check order)", () => {
    const e = requestValidationError(issues({ id: "x", steps: [], limit: "999" }), "query");
    expect(e.code).toBe("INVALID_LIMIT");
    expect(e.status).toBe(400);
  });
});
