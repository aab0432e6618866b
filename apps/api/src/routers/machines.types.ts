// Schemas and OpenAPI meta of the machine routes (the schemas themselves live in core).
import type { ErrorCode } from "@cua/core/errors";
import type { Scope } from "@cua/core/keys/scopes";
import type { Meta } from "../trpc/init.ts";

export { MachineRecord } from "@cua/core/machines-service/record";
export {
  ActionBody,
  ActionResponse,
  BatchBodySchema,
  BatchResponse,
  ConnectionResponse,
  EnrollBody,
  EnrollResponse,
  LifecycleResponse,
  ListQuery,
  ListResponse,
  MachineIdParam,
  MachinesHealth,
  OpBody,
  OpResponse,
  PatchBody,
  PricingResponse,
  ProvisionBody,
  ProvisionResponse,
  RestoreBody,
  ScreenshotResponse,
  SnapshotBody,
  SnapshotRecord,
  TerminalBody,
  TerminalResponse,
  TerminateResponse,
} from "@cua/core/machines-service/schemas";

type Method = "GET" | "POST" | "PATCH" | "DELETE";

export function machineMeta(
  method: Method,
  path: `/${string}`,
  summary: string,
  description: string,
  opts: {
    scope?: Scope;
    errors?: ErrorCode[];
    successStatus?: 200 | 201 | 202;
    idempotent?: boolean;
    tag?: string;
  } = {},
): Meta {
  const m: Meta = {
    openapi: { method, path, tags: [opts.tag ?? "Machines"], summary, description },
    errors: opts.errors ?? [],
  };
  if (opts.scope) m.scope = opts.scope;
  if (opts.successStatus) m.successStatus = opts.successStatus;
  if (opts.idempotent) m.idempotent = true;
  return m;
}

/** Errors every /machines/{id}/... route can return. */
export const ID_ERRORS: ErrorCode[] = ["INVALID_MACHINE_ID", "NOT_FOUND"];
export const RUNNING_ERRORS: ErrorCode[] = [...ID_ERRORS, "INVALID_STATE"];
/** Extra errors when the machine is external (the driver answers, or does not). */
export const DISPATCH_ERRORS: ErrorCode[] = [
  "MACHINE_BUSY",
  "FRAME_PRECONDITION_FAILED",
  "UPSTREAM_TIMEOUT",
  "UPSTREAM_UNAVAILABLE",
];
