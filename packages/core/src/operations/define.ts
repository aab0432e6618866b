// One definition per operation (HOUSE-STYLE "One definition per operation"). An operation declares, once:
// its method and /v1 path, who may call it (auth, scope), its idempotency class, input and output schemas,
// success status, billing note, the error codes it can answer, docs, its transport, whether the console and
// MCP expose it, and its handler `(ctx, input) => useCase(ctx.deps, ctx.caller, input)`. The generators in
// apps/api (the /v1 router and OpenAPI, the console router) and the MCP server walk `operations`
// (./registry.ts). No transport library is imported here.

import type { ErrorCode } from "@cua/base/errors";
import type { z } from "zod";
import type { CoreDeps } from "../deps.ts";
import type { KeyCache } from "../keys/key-cache.ts";
import type { Scope } from "../keys/scopes.ts";
import type { MachinesRuntime } from "../machines-service/runtime.ts";
import type { EnginePort } from "../predict/engine-port.ts";
import type { SessionKeyStore } from "../predict/sessions.ts";
import type { RunEventHub } from "../runs/event-hub.ts";
import type { RunJobs, RunsConfig } from "../runs/ports.ts";
import type { SchedulesPort } from "../schedules/ports.ts";
import type { UsageRecorder } from "../usage/usage.ts";
import type { WorkflowsPort } from "../workflows/ports.ts";
import type { Caller } from "./caller.ts";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** How the operation answers. json: a JSON body through the generated router. The others are served by a
 * plain route in apps/api/src/http/ that reads this definition for its OpenAPI entry and error envelope. */
export type Transport = "json" | "sse" | "raw-body" | "image" | "inngest";

/** Who may call it. api_key: X-API-Key / Bearer (401, 429, 403 scope); public: nobody needs a key;
 * device_token: the external driver's token; signature: a signed raw body (webhooks, inngest);
 * session: the console's cookie session only (sign-in and friends are not registry operations). */
export type Auth = "api_key" | "public" | "device_token" | "signature";

/** SPEC "Idem.": none; reserve-and-replay (optional Idempotency-Key, scoped to the API key);
 * required-per-account (the header is required, scoped to the account and mode: survives key rotation). */
export type Idempotency = "none" | "reserve-and-replay" | "required-per-account";

/** the console: "shared" (same procedure, operator as caller), "operator-only" (console only), false */
export type ConsoleExposure = "shared" | "operator-only" | false;

export type McpGroup = "predict" | "machines" | "schedules" | "account" | "public";

/** Ports an operation handler may use (apps/api's AppDeps satisfies it). */
export interface OperationDeps extends CoreDeps {
  keyCache?: KeyCache;
  usage: UsageRecorder;
  engines: EnginePort;
  sessionKeys: SessionKeyStore;
  machines: MachinesRuntime;
  runJobs: RunJobs;
  runsConfig: RunsConfig;
  runEvents: RunEventHub;
  version: string;
  durable?: { health(): Promise<{ ok: boolean }> };
  /** schedule timers (events to the durable executor) and the public base URL of webhook_url */
  schedules?: SchedulesPort;
  /** workflow runs: events to the durable executor (docs/workflows.md) */
  workflows?: WorkflowsPort;
}

/** What the transport gives a handler, and what the handler may set on the answer. */
export interface OperationContext<A extends Auth = Auth> {
  deps: OperationDeps;
  /** API key or console operator; null only for public operations */
  caller: A extends "api_key" ? Caller : Caller | null;
  requestId: string;
  /** "METHOD /v1/path/{param}": usage records and idempotency */
  endpoint: string;
  /** a request header (lower-case name); the console and MCP give none of the BYOK headers */
  header(name: string): string | undefined;
  res: {
    /** success status when it depends on the outcome (e.g. 201 for a test machine, 202 for a live one) */
    status?: number;
    headers: Record<string, string>;
    /** credits charged by this request, for usage records */
    creditsCharged: number;
  };
}

export interface OperationDefinition<
  I extends z.ZodType = z.ZodType,
  O extends z.ZodType = z.ZodType,
  A extends Auth = Auth,
  Id extends string = string,
  M extends HttpMethod = HttpMethod,
  P extends `/${string}` | null = `/${string}` | null,
  T extends Transport = Transport,
  C extends ConsoleExposure = ConsoleExposure,
> {
  /** "group.name": the tRPC procedure path (/v1's router) and the console's `console.<id>` */
  id: Id;
  method: M;
  /** path under /v1 ("/machines/{id}/start"); null for an operation with no REST route (console-only) */
  path: P;
  auth: A;
  /** the scope the caller needs; undefined = any valid key (or a scope that depends on the body) */
  scope?: Scope;
  idempotency: Idempotency;
  input: I;
  output: O;
  successStatus: 200 | 201 | 202 | 204;
  /** what it costs, in words ("free", "5 credits + surcharges"); the OpenAPI description carries it */
  billing: string;
  /** codes this operation answers beyond the cross-cutting ones the generators add (401/403/429, bodies...) */
  errors: readonly ErrorCode[];
  docs: { summary: string; description: string; tags: string[] };
  transport: T;
  /** a route outside /v1 (absolute path), for `path: null` operations such as the Inngest serve endpoint;
   * not part of the public OpenAPI document */
  route?: string;
  /** request headers worth documenting beyond auth and Idempotency-Key (Accept, Last-Event-ID...) */
  requestHeaders?: readonly { name: string; description: string }[];
  /** other representations chosen by Accept (served by a plain route that runs this same operation) */
  alsoServes?: readonly ("text/event-stream" | "image/png")[];
  /** the console: "shared" (same procedure, operator as caller), "operator-only" (console only), false */
  console: C;
  mcp?: { tool: string; group: McpGroup };
  /** sse transport: the frames, ending when the stream ends (the console gets them as a subscription) */
  stream?: (
    ctx: OperationContext<A>,
    input: z.output<I>,
    signal?: AbortSignal,
  ) => AsyncIterable<{ seq: number; event: string; data: unknown }>;
  /** json transport: the one call into the use case. Plain transports may omit it (their route serves them). */
  handler?: (ctx: OperationContext<A>, input: z.output<I>) => Promise<z.input<O>> | z.input<O>;
}

export type AnyOperation = OperationDefinition<
  z.ZodType,
  z.ZodType,
  Auth,
  string,
  HttpMethod,
  `/${string}` | null,
  Transport,
  ConsoleExposure
> & {
  handler?: (ctx: any, input: any) => unknown;
  stream?: (ctx: any, input: any, signal?: AbortSignal) => AsyncIterable<{ seq: number; event: string; data: unknown }>;
};

/** Declares an operation. Defaults: auth api_key, idempotency none, success 200, transport json, no
 * console, billing "free", no extra errors. */
export function defineOperation<
  I extends z.ZodType,
  O extends z.ZodType,
  Id extends `${string}.${string}`,
  M extends HttpMethod,
  P extends `/${string}` | null,
  A extends Auth = "api_key",
  T extends Transport = "json",
  C extends ConsoleExposure = false,
>(
  def: Omit<
    OperationDefinition<I, O, A, Id, M, P, T, C>,
    "auth" | "idempotency" | "successStatus" | "transport" | "console" | "billing" | "errors"
  > &
    Partial<
      Pick<
        OperationDefinition<I, O, A, Id, M, P, T, C>,
        "auth" | "idempotency" | "successStatus" | "transport" | "console" | "billing" | "errors"
      >
    >,
): OperationDefinition<I, O, A, Id, M, P, T, C> {
  return {
    auth: "api_key" as A,
    idempotency: "none",
    successStatus: 200,
    transport: "json" as T,
    console: false as C,
    billing: "free",
    errors: [],
    ...def,
  };
}

/** Whether the generated /v1 router serves it (JSON with an API key or public); the others have a plain route. */
export function servedByRouter(op: { path: string | null; transport: Transport; auth: Auth }): boolean {
  return op.path !== null && op.transport === "json" && (op.auth === "api_key" || op.auth === "public");
}

/** Path parameters of a /v1 path template ("/machines/{id}/files/{op}" -> ["id", "op"]). */
export function pathParams(path: string | null): string[] {
  return path ? [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!) : [];
}
