// Which errors the API answers with 503 DB_UNAVAILABLE (SPEC "Errors"; issue 2 "DB outage gives 503
// DB_UNAVAILABLE with Retry-After, never a hang or a 500"). The outage itself is tested end to end in
// apps/api/test/db-outage.test.ts; these are the shapes node-postgres and Prisma report it in.
import { describe, expect, it } from "vitest";
import { isDbUnavailable } from "./client.ts";

describe("isDbUnavailable", () => {
  it.each([
    ["a refused connection", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
    ["pg-pool's connect timeout", new Error("timeout exceeded when trying to connect")],
    ["pg's query_timeout", new Error("Query read timeout")],
    ["a server shutting down", Object.assign(new Error("terminating connection"), { code: "57P01" })],
    [
      "Prisma wrapping a lost connection",
      new Error("wrapped", { cause: new Error("Connection terminated unexpectedly") }),
    ],
    [
      "Prisma's transaction start over a saturated pool (issue 10)",
      Object.assign(new Error("Transaction API error: Unable to start a transaction in the given time."), {
        code: "P2028",
      }),
    ],
    [
      "a transaction that expired while queued",
      Object.assign(
        new Error(
          "Transaction API error: Transaction already closed: A commit cannot be executed on an expired transaction.",
        ),
        { code: "P2028" },
      ),
    ],
  ])("%s is unavailable", (_name, e) => {
    expect(isDbUnavailable(e)).toBe(true);
  });

  it.each([
    ["a syntax error", Object.assign(new Error("syntax error at or near"), { code: "42601" })],
    ["a unique violation", Object.assign(new Error("duplicate key value"), { code: "23505" })],
    ["not an error", "oops"],
    [
      "a transaction used after it ended (a bug, not load)",
      Object.assign(new Error("Transaction API error: Transaction not found."), { code: "P2028" }),
    ],
  ])("%s is not", (_name, e) => {
    expect(isDbUnavailable(e)).toBe(false);
  });
});
