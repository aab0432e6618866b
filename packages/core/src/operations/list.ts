// The one list shape (DECISIONS.md "Compatibility amendments (2026-11-25)", bullet "Lists"): every list answers
// `{object: "list", data: [...], has_more, next_cursor, request_id}`; the limit is 1 to 200, default 20
// (SPEC "Limits": machines default 50). request_id is added to every JSON success body by the /v1 transport.

import { CoreError } from "@cua/base/errors";
import { z } from "zod";

export const LIST_MIN_LIMIT = 1;
export const LIST_MAX_LIMIT = 200;
export const LIST_DEFAULT_LIMIT = 20;

export interface Page {
  has_more: boolean;
  next_cursor: string | null;
}

export interface ListBody<T> extends Page {
  object: "list";
  data: T[];
}

/** The list body; `extra` carries SPEC's own array name where it shows one (sessions, keys). */
export function listBody<T, E extends Record<string, unknown> = Record<never, never>>(
  data: T[],
  page: Page = { has_more: false, next_cursor: null },
  extra?: E,
): ListBody<T> & E {
  return { object: "list", data, has_more: page.has_more, next_cursor: page.next_cursor, ...(extra as E) };
}

/** The list schema for an item schema; `extra` adds SPEC's own array field(s). */
export function listOf<T extends z.ZodType, E extends z.ZodRawShape = Record<never, never>>(
  item: T,
  describe: string,
  extra?: E,
) {
  return z
    .object({
      object: z.literal("list").describe("always list"),
      data: z.array(item).describe(describe),
      has_more: z.boolean().describe("whether another page exists"),
      next_cursor: z.string().nullable().describe("pass as cursor for the next page; null on the last page"),
      ...(extra as E),
    })
    .describe("A page of a list (DECISIONS.md Compatibility amendments: lists)");
}

const INVALID_LIMIT_MESSAGE = `limit must be an integer from ${LIST_MIN_LIMIT} to ${LIST_MAX_LIMIT}.`;

/** The INVALID_LIMIT error with its extras `actual, min, max`. */
export function invalidLimit(actual: unknown): CoreError {
  return new CoreError("INVALID_LIMIT", INVALID_LIMIT_MESSAGE, {
    actual: typeof actual === "string" ? actual.slice(0, 40) : actual,
    min: LIST_MIN_LIMIT,
    max: LIST_MAX_LIMIT,
  });
}

/** A query `limit` (a string from the URL, or a number): the default when absent, else 1..200 or INVALID_LIMIT. */
export function parseListLimit(raw: unknown, dflt = LIST_DEFAULT_LIMIT): number {
  if (raw === undefined || raw === null || raw === "") return dflt;
  const n = typeof raw === "number" ? raw : /^\d{1,4}$/.test(String(raw)) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < LIST_MIN_LIMIT || n > LIST_MAX_LIMIT) throw invalidLimit(raw);
  return n;
}

/** The INVALID_STATUS_FILTER error with its extra `valid_options`. */
export function invalidStatusFilter(actual: string, valid: readonly string[]): CoreError {
  return new CoreError(
    "INVALID_STATUS_FILTER",
    `Unknown status "${actual.slice(0, 40)}": one of ${valid.join(", ")}.`,
    {
      valid_options: [...valid],
    },
  );
}

/** A zod query field for `limit`: refused with 400 INVALID_LIMIT (extras actual, min, max) before any 422. */
export function limitQuery(dflt = LIST_DEFAULT_LIMIT) {
  return z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      if (v === undefined) return;
      try {
        parseListLimit(v, dflt);
      } catch (e) {
        ctx.addIssue({
          code: "custom",
          message: INVALID_LIMIT_MESSAGE,
          params: { errorCode: "INVALID_LIMIT", extras: (e as CoreError).extras },
        });
      }
    })
    .describe(`${LIST_MIN_LIMIT} to ${LIST_MAX_LIMIT} (default ${dflt})`);
}

/** A zod query field for `status`: refused with 400 INVALID_STATUS_FILTER (extra valid_options). */
export function statusQuery(valid: readonly string[], describe: string) {
  return z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      if (v !== undefined && !valid.includes(v))
        ctx.addIssue({
          code: "custom",
          message: `one of ${valid.join(", ")}`,
          params: { errorCode: "INVALID_STATUS_FILTER", extras: { valid_options: [...valid] } },
        });
    })
    .describe(describe);
}

/** An opaque cursor for lists ordered by (created_at desc, id desc). */
export function encodeListCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify([createdAt.toISOString(), id])).toString("base64url");
}

/** The position a cursor names; 400 INVALID_CURSOR for anything this service did not hand out. */
export function decodeListCursor(raw: string): { createdAt: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as [string, string];
    const createdAt = new Date(t);
    if (typeof id === "string" && !Number.isNaN(createdAt.getTime())) return { createdAt, id };
  } catch {}
  throw new CoreError("INVALID_CURSOR", "The cursor is not one this endpoint returned.");
}

/** The Prisma condition "after this cursor" for (created_at desc, id desc). */
export function afterListCursor(raw: string | undefined) {
  if (!raw) return {};
  const c = decodeListCursor(raw);
  return { OR: [{ createdAt: { lt: c.createdAt } }, { createdAt: c.createdAt, id: { lt: c.id } }] };
}
