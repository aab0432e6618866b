// Generators over core's one operation list (packages/core/src/operations/registry.ts): the console router,
// and the /v1 operations as tRPC procedures with trpc-to-openapi meta for the OpenAPI document only (the /v1
// routes that serve them are compiled from the same definitions by apps/api/src/http/v1-routes.ts). Nothing
// about an operation is written here; `runOperation` is the one call of a definition's handler both use.
//   /v1:      compiled Fastify route (401 -> 429 -> 403 scope -> Idempotency-Key), caller = the key
//   console:  consoleProcedure (Origin check + cookie session), caller = the operator's account in a chosen
//             mode (input field `mode`, else the mode an id names: mch_test_/run_test_/ses_test_..., else live)
import type { KeyMode } from "@cua/core/keys/scopes";
import { type Caller, operatorCaller } from "@cua/core/operations/caller";
import {
  type AnyOperation,
  type HttpMethod,
  type OperationContext,
  type OperationDefinition,
  servedByRouter,
} from "@cua/core/operations/define";
import { type Operations, operations } from "@cua/core/operations/registry";
import {
  type TRPCMutationProcedure,
  type TRPCQueryProcedure,
  type TRPCSubscriptionProcedure,
  tracked,
} from "@trpc/server";
import { z } from "zod";
import { consoleProcedure } from "./console-procedures.ts";
import { type Ctx, header } from "./context.ts";
import { idempotent } from "./idempotent.ts";
import { type Meta, t } from "./init.ts";

export const IDEMPOTENCY_ERRORS = [
  "IDEMPOTENCY_IN_FLIGHT",
  "IDEMPOTENCY_KEY_REUSED",
  "INVALID_IDEMPOTENCY_KEY",
] as const;

export function endpointOf(op: AnyOperation): string {
  return op.path ? `${op.method} /v1${op.path}` : `CONSOLE ${op.id}`;
}

/** The context a handler sees, over this request's transport state. */
export function operationContext(ctx: Ctx, op: AnyOperation, caller: Caller | null, console = false): OperationContext {
  return {
    deps: ctx.deps,
    caller,
    requestId: ctx.requestId,
    endpoint: endpointOf(op),
    // the console (cookie session) passes no BYOK or other operation headers, only where the browser is
    // (a webhook_url's base is the console's origin, which forwards /v1: X-Forwarded-Host set by its proxy).
    // A method, not an arrow: tsx's keepNames wraps every named arrow in a defineProperty call (issue 16)
    header(name: string) {
      return console ? consoleOriginHeader(ctx, name) : header(ctx.req, name);
    },
    res: ctx.res,
  };
}

function consoleOriginHeader(ctx: Ctx, name: string): string | undefined {
  const n = name.toLowerCase();
  if (n === "host") return header(ctx.req, "x-forwarded-host") ?? header(ctx.req, "host");
  if (n === "x-forwarded-proto") return header(ctx.req, "x-forwarded-proto");
  return undefined;
}

/** Runs a definition's handler for a caller: idempotency (REST with a key) around one call. */
export async function runOperation(
  op: AnyOperation,
  ctx: Ctx,
  caller: Caller | null,
  input: unknown,
  console = false,
): Promise<unknown> {
  if (!op.handler) throw new Error(`operation ${op.id} has no handler`);
  const octx = operationContext(ctx, op, caller, console);
  const p = ctx.principal;
  if (op.idempotency === "none" || !p || console) return answerOf(op, ctx, await op.handler(octx, input), console);
  const scope = op.idempotency === "required-per-account" ? `account:${p.accountId}:${p.mode}` : undefined;
  const call = async () => answerOf(op, ctx, await op.handler!(octx, input), console);
  return idempotent({ ...ctx, principal: p }, input, call, scope ? { scope } : {});
}

/** A handler's answer for its transport: the success status, and request_id in a /v1 JSON object body. */
function answerOf(op: AnyOperation, ctx: Ctx, out: unknown, console: boolean): unknown {
  ctx.res.status ??= op.successStatus;
  // DECISIONS.md "Compatibility amendments": a /v1 JSON body carries request_id. Put here, the stored
  // idempotent answer keeps the original one, so a replay answers it; the compiled route adds it to bodies
  // that still lack it after output validation (the output schema may not name it). A frozen answer (a
  // constant, e.g. the models catalog) is left as it is: the route validates and serialises it once and adds
  // request_id to the text (v1-routes.ts); a constant is never stored for replays (no idempotency class).
  if (
    !console &&
    ctx.transport === "rest" &&
    out &&
    typeof out === "object" &&
    !Array.isArray(out) &&
    !("request_id" in out) &&
    !(op.idempotency === "none" && Object.isFrozen(out))
  )
    return { request_id: ctx.requestId, ...(out as Record<string, unknown>) };
  return out;
}

export function v1Meta(op: AnyOperation): Meta {
  const idem = op.idempotency !== "none";
  const meta: Meta = {
    op,
    errors: [
      ...op.errors,
      ...(op.idempotency === "required-per-account" ? (["IDEMPOTENCY_KEY_REQUIRED"] as const) : []),
      ...(idem ? IDEMPOTENCY_ERRORS : []),
    ],
    openapi: {
      method: op.method,
      path: op.path!,
      tags: op.docs.tags,
      summary: op.docs.summary,
      description: op.docs.description,
    },
  };
  if (op.scope) meta.scope = op.scope;
  if (op.auth === "public") meta.public = true;
  if (idem) meta.idempotent = true;
  if (op.idempotency === "required-per-account") meta.idempotencyRequired = true;
  if (op.successStatus !== 200) meta.successStatus = op.successStatus as 201 | 202;
  return meta;
}

/** The /v1 output: the definition's, plus the request_id every JSON success body carries (a replay keeps its own). */
export function v1Output(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodObject && !("request_id" in schema.shape))
    return schema.safeExtend({ request_id: z.string().describe("the same value as X-Service-Request-Id").optional() });
  return schema;
}

/** A /v1 operation as a procedure for trpc-to-openapi's document generator: its meta and schemas, never called
 * (the compiled route serves it, apps/api/src/http/v1-routes.ts). */
function v1DocProcedure(op: AnyOperation) {
  const p = t.procedure.meta(v1Meta(op)).input(op.input).output(v1Output(op.output));
  const served = (): never => {
    throw new Error(`${op.id} is served by its compiled /v1 route`);
  };
  return op.method === "GET" ? p.query(served) : p.mutation(served);
}

const ConsoleMode = z.enum(["live", "test"]).describe("the mode the operator acts in (default: the id's, else live)");
const TEST_ID = /^(mch|run|ses|sch|wf|wfr|trg)_test_/;

/** The console's input: the operation's own input plus an optional `mode`. */
export function consoleInput(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodObject) return schema.extend({ mode: ConsoleMode.optional() });
  // an optional query object (list operations: limit, cursor): optional for the console too
  if (schema instanceof z.ZodOptional && schema.unwrap() instanceof z.ZodObject)
    return (schema.unwrap() as z.ZodObject).extend({ mode: ConsoleMode.optional() }).optional();
  if (schema instanceof z.ZodVoid || schema instanceof z.ZodUndefined)
    return z.strictObject({ mode: ConsoleMode.optional() }).optional();
  return z.intersection(z.object({ mode: ConsoleMode.optional() }), schema);
}

/** The mode the console acts in: the input's `mode`, else the mode an id of the input names, else live. */
export function consoleModeOf(input: Record<string, unknown> | undefined): KeyMode {
  if (input?.mode === "live" || input?.mode === "test") return input.mode;
  for (const k of ["id", "machine_id", "run_id", "session_id"]) {
    const v = input?.[k];
    if (typeof v === "string" && TEST_ID.test(v)) return "test";
  }
  return "live";
}

/** The own input of an operation from the console's input (without `mode` and tRPC's `lastEventId`). */
function ownInput(op: AnyOperation, input: unknown): unknown {
  if (op.input instanceof z.ZodVoid) return undefined;
  if (!input || typeof input !== "object") return input;
  const { mode: _mode, lastEventId: _last, ...rest } = input as Record<string, unknown>;
  return rest;
}

/** An sse operation in the console: a tRPC subscription of the same frames, resumable by seq (tracked ids). */
function consoleStreamProcedure(op: AnyOperation) {
  const input = (consoleInput(op.input) as z.ZodObject).extend({
    lastEventId: z.string().max(16).nullish().describe("resume after this seq (sent by tRPC's SSE client)"),
  });
  return consoleProcedure
    .meta({ op })
    .input(input)
    .subscription(async function* ({ ctx, input, signal }) {
      const obj = input as Record<string, unknown>;
      const caller = operatorCaller(ctx.operator, consoleModeOf(obj));
      const own = ownInput(op, obj) as Record<string, unknown>;
      const last = obj.lastEventId;
      if (typeof last === "string" && /^\d+$/.test(last)) own.after = last;
      for await (const f of op.stream!(operationContext(ctx, op, caller, true), own, signal)) {
        yield tracked(String(f.seq), f);
      }
    });
}

function consoleOperationProcedure(op: AnyOperation) {
  if (op.transport === "sse") return consoleStreamProcedure(op);
  const p = consoleProcedure.meta({ op }).input(consoleInput(op.input)).output(op.output);
  const resolve = ({
    ctx,
    input,
  }: {
    ctx: Ctx & { operator: Parameters<typeof operatorCaller>[0] };
    input: unknown;
  }) => {
    const obj = (input ?? undefined) as Record<string, unknown> | undefined;
    const caller = operatorCaller(ctx.operator, consoleModeOf(obj));
    return runOperation(op, ctx, caller, ownInput(op, obj), true);
  };
  return op.method === "GET" ? p.query(resolve) : p.mutation(resolve);
}

// ---- types: the routers' shapes follow from the definitions, so the console's client stays typed

type GroupOf<Id> = Id extends `${infer G}.${string}` ? G : never;
type NameOf<Id> = Id extends `${string}.${infer N}` ? N : never;
type Proc<M, In, Out> = M extends "GET"
  ? TRPCQueryProcedure<{ input: In; output: Out; meta: Meta }>
  : TRPCMutationProcedure<{ input: In; output: Out; meta: Meta }>;
// what tRPC infers for an async generator yielding tracked(id, frame): the client sees { id, data }
type Sub<In, Out> = TRPCSubscriptionProcedure<{
  input: In;
  output: AsyncIterable<{ id: string; data: Out }>;
  meta: Meta;
}>;
type OpOf<Ops extends readonly unknown[], Id> = Extract<Ops[number], { id: Id }>;
type Parts<X> =
  X extends OperationDefinition<infer I, infer O, infer _A, infer Id, infer M, infer _P, infer _T, infer _C>
    ? [I, O, Id, M]
    : never;
type ConsoleIn<I extends z.ZodType> = I extends z.ZodVoid
  ? { mode?: KeyMode } | undefined
  : z.input<I> & { mode?: KeyMode };

type V1Ops = Extract<Operations[number], { path: `/${string}`; transport: "json"; auth: "api_key" | "public" }>;
type ConsoleOps = Extract<Operations[number], { console: "shared" | "operator-only" }>;

export type V1Record = {
  [G in GroupOf<V1Ops["id"]>]: {
    [Id in Extract<V1Ops["id"], `${G}.${string}`> as NameOf<Id>]: Parts<OpOf<Operations, Id>> extends [
      infer I extends z.ZodType,
      infer O extends z.ZodType,
      infer _Id,
      infer M,
    ]
      ? Proc<M, z.input<I>, z.output<O>>
      : never;
  };
};

export type ConsoleRecord = {
  [G in GroupOf<ConsoleOps["id"]>]: {
    [Id in Extract<ConsoleOps["id"], `${G}.${string}`> as NameOf<Id>]: Parts<OpOf<Operations, Id>> extends [
      infer I extends z.ZodType,
      infer O extends z.ZodType,
      infer _Id,
      infer M,
    ]
      ? OpOf<Operations, Id> extends { transport: "sse" }
        ? Sub<ConsoleIn<I> & { lastEventId?: string | null }, z.output<O>>
        : Proc<M, ConsoleIn<I>, z.output<O>>
      : never;
  };
};

function nest(entries: [string, unknown][]): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [id, proc] of entries) {
    const [group, name] = id.split(".") as [string, string];
    const g = out[group] ?? {};
    g[name] = proc;
    out[group] = g;
  }
  return out;
}

const all = operations as unknown as readonly AnyOperation[];

/** Every /v1 json operation as a documentation procedure, nested by group ("machines.start" -> machines.start). */
export function v1Procedures(): V1Record {
  return nest(all.filter(servedByRouter).map((o) => [o.id, v1DocProcedure(o)])) as V1Record;
}

/** Every console operation (shared and operator-only) as a console procedure. */
export function consoleProcedures(): ConsoleRecord {
  return nest(
    all.filter((o) => o.console !== false && (o.handler || o.stream)).map((o) => [o.id, consoleOperationProcedure(o)]),
  ) as ConsoleRecord;
}

export type { HttpMethod };
