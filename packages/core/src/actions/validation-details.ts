// Turns zod issues into the `details: [{path, message}]` of a 422 VALIDATION_ERROR
// (DECISIONS "Error envelope and statuses": details carry paths like "body.max_actions").
// Path spelling: every segment joined with "." (array indices too), as the API renders zod issues
// (apps/api render-error): body.action_policy.coordinate_bounds.min_x, body.trajectory.2.actions.0.params.x.
import type { z } from "zod";
import { CoreError, type ErrorCode } from "../errors.ts";

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
