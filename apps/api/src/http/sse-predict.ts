// `Accept: text/event-stream` on the operations whose definition says `alsoServes: ["text/event-stream"]`
// (POST /v1/predict and POST /v1/sessions/{id}/predict; SPEC.md "Events" 4, DECISIONS.md "Prediction"): the
// same procedure runs (auth, scope, validation, idempotency, billing) while the client receives
// `event: keepalive` every 5 s, then one `event: result` (the JSON body) or `event: error` (the error
// envelope), then the stream ends.
import type { AnyOperation } from "@cua/core/operations/define";
import { operations } from "@cua/core/operations/registry";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { baseUrlOf, createContextFactory } from "../trpc/context.ts";
import { appRouter } from "../trpc/router.ts";
import { ReplayedResponse, renderError, toCoreError } from "./render-error.ts";

export const KEEPALIVE_MS = 5000;

const STREAMABLE = (operations as unknown as readonly AnyOperation[])
  .filter((o) => o.method === "POST" && o.path && o.alsoServes?.includes("text/event-stream"))
  .map((op) => ({
    op,
    re: new RegExp(`^/v1${op.path!.replace(/\{([^}]+)\}/g, "(?<$1>[^/]+)")}$`),
  }));

export function registerSsePredict(v1: FastifyInstance, deps: AppDeps) {
  v1.addHook("preHandler", async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method !== "POST" || !(req.headers.accept ?? "").includes("text/event-stream")) return;
    const path = req.url.split("?")[0]!;
    const body = (req.body ?? {}) as Record<string, unknown>;
    type Caller = ReturnType<typeof appRouter.createCaller>;
    let run: ((c: Caller) => Promise<unknown>) | null = null;
    for (const { op, re } of STREAMABLE) {
      const m = re.exec(path);
      if (!m) continue;
      const params = Object.fromEntries(Object.entries(m.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]));
      const [group, name] = op.id.split(".") as [string, string];
      run = (c) =>
        (c as unknown as Record<string, Record<string, (i: unknown) => Promise<unknown>>>)[group]![name]!({
          ...body,
          ...params,
        });
      break;
    }
    if (!run) return;

    const ctx = createContextFactory(deps, "rest")({ req });
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
      "X-Service-Request-Id": String(req.id),
    });
    const send = (event: string, data: unknown) => raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    send("keepalive", {});
    const ka = setInterval(() => send("keepalive", {}), KEEPALIVE_MS);
    let status = 200;
    try {
      send("result", await run(appRouter.createCaller(ctx)));
    } catch (e) {
      if (e instanceof ReplayedResponse || (e as { cause?: unknown }).cause instanceof ReplayedResponse) {
        const r = (e instanceof ReplayedResponse ? e : (e as { cause: ReplayedResponse }).cause) as ReplayedResponse;
        status = r.status;
        send("error", r.body);
      } else {
        const ce = toCoreError(e, "body");
        if (ce.code === "INTERNAL_ERROR") req.log.error({ err: (ce as any).original ?? e }, "internal error");
        const r = renderError(ce, ctx.requestId, baseUrlOf(ctx));
        status = r.status;
        send("error", r.body);
      }
    } finally {
      clearInterval(ka);
      raw.end();
    }
    if (ctx.principal && ctx.endpoint) {
      deps.usage.record({
        accountId: ctx.principal.accountId,
        mode: ctx.principal.mode,
        apiKeyId: ctx.principal.keyId,
        method: "POST",
        endpoint: ctx.endpoint,
        status,
        creditsCharged: ctx.res.creditsCharged,
        requestId: String(req.id),
        at: new Date(),
      });
    }
  });
}
