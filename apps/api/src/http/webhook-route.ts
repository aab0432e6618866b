// POST /v1/triggers/webhook/{webhook_id}: the public, signed webhook fire (SPEC.md "Schedules and triggers",
// "Authentication" 6; definition: packages/core/src/schedules/triggers.op.ts, transport raw-body). The body
// is kept as the exact bytes that were signed, whatever its content type; a JSON body is also inspected like
// every JSON body (nesting, NUL, lone surrogates: 422) before it reaches a task.
import { CoreError } from "@cua/base/errors";
import { fireWebhook, WEBHOOK_MAX_BODY_BYTES } from "@cua/core/schedules/triggers";
import { fireWebhookOp } from "@cua/core/schedules/triggers.op";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { baseUrlOf } from "../trpc/context.ts";
import { drainRequest, inspectJson } from "./hostile-input.ts";
import { renderError, toCoreError } from "./render-error.ts";

const URL_PATH = `/v1${fireWebhookOp.path}`.replace("{webhook_id}", ":webhook_id");

function send(deps: AppDeps, req: FastifyRequest, reply: FastifyReply, e: unknown) {
  const ce = toCoreError(e, "body");
  if (ce.code === "INTERNAL_ERROR") req.log.error({ err: e }, "internal error");
  const r = renderError(ce, String(req.id), baseUrlOf({ deps, req }));
  return reply.code(r.status).headers(r.headers).type("application/json").send(r.body);
}

export function registerWebhookRoute(app: FastifyInstance, deps: AppDeps): void {
  void app.register(async (scope) => {
    // any content type, as raw bytes (the signature covers them); 1,000,000 bytes at most (SPEC "Limits")
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: WEBHOOK_MAX_BODY_BYTES }, (_req, body, done) =>
      done(null, body),
    );
    scope.setErrorHandler(async (err: FastifyError, req, reply) => {
      if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
        await drainRequest(req.raw);
        return send(
          deps,
          req,
          reply,
          new CoreError("PAYLOAD_TOO_LARGE", `A webhook body is at most ${WEBHOOK_MAX_BODY_BYTES} bytes.`),
        );
      }
      return send(deps, req, reply, err);
    });
    scope.post(URL_PATH, { bodyLimit: WEBHOOK_MAX_BODY_BYTES }, async (req, reply) => {
      try {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        if (/json/i.test(String(req.headers["content-type"] ?? "")) && raw.length > 0) {
          let value: unknown;
          try {
            value = JSON.parse(raw.toString("utf8"));
          } catch {
            throw new CoreError("MALFORMED_JSON", "The body is labelled JSON but is not valid JSON.");
          }
          const bad = inspectJson(value, raw.includes("\\u"));
          if (bad) throw bad;
        }
        const sig = req.headers["service-signature"];
        const answer = await fireWebhook(deps, (req.params as { webhook_id: string }).webhook_id, {
          signature: Array.isArray(sig) ? sig[0] : sig,
          raw,
          requestId: String(req.id),
        });
        return reply
          .code(fireWebhookOp.successStatus)
          .header("X-Service-Webhook-Deduplicated", String(answer.deduplicated))
          .send({ ...answer, request_id: String(req.id) });
      } catch (e) {
        return send(deps, req, reply, e);
      }
    });
  });
}
