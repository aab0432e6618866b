import { describe, expect, it } from "vitest";
import { newRequestId } from "./ids.ts";

describe("request ids", () => {
  it("are req_ plus 24 hex characters and do not repeat across pool refills", () => {
    const ids = Array.from({ length: 2000 }, () => newRequestId()); // ~6 refills of the 4 KiB pool
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
