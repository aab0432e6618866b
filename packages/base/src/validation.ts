// THE validation-error mapper: zod issues -> the `details: [{path, message}]` of a 422 VALIDATION_ERROR
// (DECISIONS "Error envelope and statuses": details carry paths like "body.max_actions"), for request
// bodies, query strings and path parameters alike (apps/api's error renderer, machine commands, actions,
// action policies and the pyautogui parser all use it).
// One path spelling: where the value came from (`body`, `query` or `path`), then every segment joined with
// "." (array indices too): body.action_policy.coordinate_bounds.min_x, body.steps.1.command, query.limit,
// path.id. An unknown field is reported at its own path with the message "unknown field".
import type { z } from "zod";
import { CoreError, ERROR_CODES, type ErrorCode } from "./errors.ts";

export interface Detail {
  path: string;
  message: string;
}

export function joinPath(prefix: string, segments: readonly PropertyKey[]): string {
  let out = prefix;
  for (const seg of segments) out += out === "" ? String(seg) : `.${String(seg)}`;
  return out;
}

export function issuesToDetails(issues: readonly z.core.$ZodIssue[], prefix: string): Detail[] {
  const details: Detail[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys)
        details.push({ path: joinPath(prefix, [...issue.path, key]), message: "unknown field" });
    } else {
      details.push({ path: joinPath(prefix, issue.path), message: issue.message });
    }
  }
  return details;
}

/** A CoreError (VALIDATION_ERROR unless told otherwise) whose message names the first problem. */
export function detailsError(details: Detail[], code: ErrorCode = "VALIDATION_ERROR"): CoreError {
  const first = details[0];
  const message = first ? `${first.path}: ${first.message}` : "The request failed validation.";
  return new CoreError(code, message, { details });
}

/** Where a request's values came from: its body or query string, and which fields are path parameters. */
export type Where = "body" | "query" | { default: "body" | "query"; pathParams: readonly string[] };

interface IssueLike {
  path: PropertyKey[];
  message: string;
  code: string;
  keys?: string[];
  /** a 400 code for a path/query value, with the extras its envelope carries (INVALID_LIMIT: actual, min, max) */
  params?: { errorCode?: ErrorCode; extras?: Record<string, unknown> };
}

function locate(where: Where, path: readonly PropertyKey[]): string {
  if (typeof where === "string") return where;
  return path.length > 0 && where.pathParams.includes(String(path[0])) ? "path" : where.default;
}

/** A request's zod issues as the envelope's error: a 400 code a value carries (INVALID_LIMIT, INVALID_*_ID)
 * and 413 for an oversize value come before 422 (DECISIONS.md "Cross-cutting rules": check order). */
export function requestValidationError(issues: readonly IssueLike[], where: Where): CoreError {
  const coded = issues
    .filter((i) => i.params?.errorCode && ERROR_CODES[i.params.errorCode])
    .sort((a, b) => ERROR_CODES[a.params!.errorCode!].status - ERROR_CODES[b.params!.errorCode!].status)[0];
  if (coded?.params?.errorCode === "PAYLOAD_TOO_LARGE") {
    const path = joinPath(locate(where, coded.path), coded.path);
    return new CoreError("PAYLOAD_TOO_LARGE", `${path}: ${coded.message}`, {
      details: [{ path, message: coded.message }],
    });
  }
  if (coded?.params?.errorCode) return new CoreError(coded.params.errorCode, undefined, coded.params.extras ?? {});
  const details: Detail[] = [];
  for (const i of issues) {
    const at = locate(where, i.path);
    if (i.code === "unrecognized_keys" && i.keys?.length) {
      for (const key of i.keys) details.push({ path: joinPath(at, [...i.path, key]), message: "unknown field" });
    } else details.push({ path: joinPath(at, i.path), message: i.message });
  }
  return new CoreError("VALIDATION_ERROR", details.map((d) => `${d.path}: ${d.message}`).join("; "), { details });
}
