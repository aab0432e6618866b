import type { Where } from "@cua/base/validation";
import type { Principal } from "@cua/core/keys/authenticate-key";
import type { FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";

export interface ResponseState {
  /** success status for the REST facade (201, 202...) */
  status?: number;
  headers: Record<string, string>;
  /** credits charged by this request, for usage records */
  creditsCharged: number;
}

export interface Ctx {
  deps: AppDeps;
  req: FastifyRequest;
  requestId: string;
  transport: "rest" | "trpc";
  res: ResponseState;
  principal?: Principal;
  /** "METHOD /v1/path/{param}" of the REST operation, for usage records and idempotency */
  endpoint?: string;
  /** the operation's path parameters: their validation details read `path.<name>` */
  pathParams?: string[];
}

/** Where a request's values came from, for validation details (body.x, query.x, path.id). */
export function whereOf(ctx: Ctx): Where {
  const dflt = ctx.req.method === "GET" || ctx.req.method === "DELETE" ? "query" : "body";
  return ctx.pathParams?.length ? { default: dflt, pathParams: ctx.pathParams } : dflt;
}

export function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export function baseUrlOf(ctx: { deps: AppDeps; req: FastifyRequest }): string {
  if (ctx.deps.env.PUBLIC_BASE_URL) return ctx.deps.env.PUBLIC_BASE_URL.replace(/\/$/, "");
  const host = header(ctx.req, "host") ?? `127.0.0.1:${ctx.deps.env.PORT}`;
  return `${ctx.req.protocol}://${host}`;
}

export function responseStateOf(req: FastifyRequest): ResponseState {
  const r = req as FastifyRequest & { svcRes?: ResponseState };
  r.svcRes ??= { headers: {}, creditsCharged: 0 };
  return r.svcRes;
}

export function createContextFactory(deps: AppDeps, transport: "rest" | "trpc") {
  return ({ req }: { req: FastifyRequest }): Ctx => {
    const ctx: Ctx = { deps, req, requestId: String(req.id), transport, res: responseStateOf(req) };
    (req as FastifyRequest & { svcCtx?: Ctx }).svcCtx = ctx;
    return ctx;
  };
}
