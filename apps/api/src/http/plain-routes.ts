// Routes served as plain Fastify handlers (SSE streams, raw-body webhooks) rather than through
// trpc-to-openapi; each one registers its OpenAPI operation here so the document stays complete.
import type { ErrorCode } from "@cua/core/errors";
import type { Scope } from "@cua/core/keys/scopes";

export interface PlainRoute {
  method: "get" | "post";
  path: string; // OpenAPI path under /v1, e.g. "/runs/{id}/events"
  operation: {
    summary: string;
    description: string;
    tags: string[];
    operationId: string;
    parameters?: unknown[];
    requestBody?: unknown;
    responses: Record<string, unknown>;
    public?: boolean;
    scope?: Scope;
    extraErrors?: ErrorCode[];
  };
}

export const PLAIN_ROUTES: PlainRoute[] = [];
