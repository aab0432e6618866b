// Error codes the /machines/{id}/... operations share (for their definitions' `errors`).
import type { ErrorCode } from "@cua/base/errors";

/** Every /machines/{id}/... operation. */
export const ID_ERRORS: ErrorCode[] = ["INVALID_MACHINE_ID", "MACHINE_NOT_FOUND"];
export const RUNNING_ERRORS: ErrorCode[] = [...ID_ERRORS, "INVALID_STATE"];
/** Extra errors when the machine is external (the driver answers, or does not). */
export const DISPATCH_ERRORS: ErrorCode[] = [
  "MACHINE_BUSY",
  "FRAME_PRECONDITION_FAILED",
  "UPSTREAM_TIMEOUT",
  "UPSTREAM_UNAVAILABLE",
];
