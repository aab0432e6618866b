// Stateful sessions (SPEC.md "Session" resource and state table; DECISIONS.md "Prediction").
// Sessions and their trajectories live in the database (they survive restarts and are shared by API
// processes); a BYOK session's provider key is held only in the memory of the process that created it.

import type { Action } from "@cua/base/actions/action";
import { CoreError } from "@cua/base/errors";
import { hex } from "@cua/base/ids";
import { checkScreenSize, decodeScreenshot } from "@cua/base/images/screenshot";
import type { PredictSession } from "@cua/db/generated";
import { SANDBOX_MODEL_ID } from "@cua/engines/models";
import type { TrajectoryStep } from "@cua/engines/types";
import type { Principal } from "../keys/authenticate-key.ts";
import type { LlmProvider } from "../llm-keys/llm-keys.ts";
import { type ListBody, listBody, parseListLimit } from "../operations/list.ts";
import type { ActionPolicy } from "../policy/action-policy.ts";
import { pricePredict, priceSessionCreate } from "../pricing/pricing.ts";
import { withCharge } from "./charge.ts";
import { withModelChoice } from "./model-choice.ts";
import type { Billed, CallContext, PredictDeps } from "./predict.ts";
import { type EngineChoice, resolveEngine } from "./resolve-engine.ts";
import { billedPrediction, billingModeOf, checkPromptBudget, shapeAnswer } from "./run-engine.ts";
import type { PredictResponse, SessionCreateBody, SessionInfo, SessionPredictBody } from "./schemas.ts";

export const SESSION_IDLE_TTL_SECONDS = 7200;
export const SESSION_TRAJECTORY_STEPS = 20;
/** prior steps the engine sees (the stateless trajectory limit) */
export const SESSION_VISIBLE_STEPS = 19;
export const CONCURRENT_SESSIONS = { free: 2, starter: 5, professional: 20, enterprise: 100 } as const;

interface HeldKey {
  provider: LlmProvider;
  apiKey: string;
  model?: string;
}

/** BYOK keys of sessions, in this process's memory only. */
export class SessionKeyStore {
  private keys = new Map<string, HeldKey>();
  set(id: string, k: HeldKey) {
    this.keys.set(id, k);
  }
  get(id: string): HeldKey | undefined {
    return this.keys.get(id);
  }
  drop(id: string) {
    this.keys.delete(id);
  }
}

export interface SessionDeps extends PredictDeps {
  sessionKeys: SessionKeyStore;
}

function info(s: PredictSession): SessionInfo {
  return {
    session_id: s.id,
    status: "active",
    cua_version: s.cuaVersion,
    screen_width: s.screenWidth,
    screen_height: s.screenHeight,
    // DECISIONS.md "Compatibility amendments (2026-11-25)": sessions
    screen_size:
      s.screenWidth !== null && s.screenHeight !== null ? { width: s.screenWidth, height: s.screenHeight } : null,
    step_count: s.trajectoryLength,
    total_steps: s.stepCount,
    max_trajectory_length: s.maxTrajectoryLength,
    tools: (s.tools ?? null) as string[] | null,
    metadata: (s.metadata ?? {}) as Record<string, string>,
    total_credits_used: s.creditsUsed,
    action_policy: s.actionPolicy ?? null,
    llm: s.llmProvider ? { provider: s.llmProvider, model: s.llmModel ?? "" } : null,
    created_at: s.createdAt.toISOString(),
    last_used_at: s.lastUsedAt.toISOString(),
    expires_at: s.expiresAt.toISOString(),
  };
}

const zeroUsage = (credits: number) => ({
  input_tokens: 0,
  output_tokens: 0,
  credits_charged: credits,
  cost_cents: credits,
});
const ttlFrom = (now: Date) => new Date(now.getTime() + SESSION_IDLE_TTL_SECONDS * 1000);

export async function createSession(
  deps: SessionDeps,
  ctx: CallContext,
  body: SessionCreateBody,
): Promise<Billed<SessionInfo & { usage: ReturnType<typeof zeroUsage> }>> {
  checkPromptBudget(body.system_prompt, body.instructions);
  const p = ctx.principal;
  // validates the provider intent and the key's availability; creation makes no inference call
  const choice = await resolveEngine(deps, p, withModelChoice(ctx.llm, body));
  const limit = CONCURRENT_SESSIONS[p.tier];
  const id = `ses_${hex(12)}`;
  const price = priceSessionCreate({
    mode: billingModeOf(choice),
  });
  const r = await withCharge(
    deps,
    {
      accountId: p.accountId,
      amount: price.total,
      billable: choice.kind === "managed",
      endpoint: ctx.endpoint,
      requestId: ctx.requestId,
    },
    () =>
      deps.db.$transaction(async (tx) => {
        // one creator at a time per account and mode, so the limit holds under concurrency
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`sessions:${p.accountId}:${p.mode}`}))`;
        const now = deps.clock.now();
        const active = await tx.predictSession.findMany({
          where: { accountId: p.accountId, mode: p.mode, deletedAt: null, expiresAt: { gt: now } },
          select: { expiresAt: true },
          orderBy: { expiresAt: "asc" },
        });
        if (active.length >= limit) {
          const soonest = Math.max(1, Math.ceil((active[0]!.expiresAt.getTime() - now.getTime()) / 1000));
          throw new CoreError(
            "SESSION_LIMIT_REACHED",
            `The ${p.tier} tier allows ${limit} concurrent sessions; delete one or wait for it to expire.`,
            {
              retry_after: soonest,
            },
          );
        }
        return tx.predictSession.create({
          data: {
            id,
            accountId: p.accountId,
            mode: p.mode,
            apiKeyId: p.keyId,
            cuaVersion: body.cua_version ?? "v5",
            screenWidth: body.screen_width ?? null,
            screenHeight: body.screen_height ?? null,
            actionPolicy: (body.action_policy as object | undefined) ?? undefined,
            instructions: body.instructions ?? null,
            systemPrompt: body.system_prompt ?? null,
            llmProvider: choice.kind === "byok" ? choice.provider : null,
            llmModel: choice.kind === "byok" ? (choice.model ?? null) : null,
            maxTrajectoryLength: body.max_trajectory_length ?? SESSION_TRAJECTORY_STEPS,
            tools: body.tools ? [...body.tools] : undefined,
            metadata: body.metadata ?? undefined,
            creditsUsed: price.total > 0 && choice.kind === "managed" ? price.total : 0,
            createdAt: now,
            lastUsedAt: now,
            expiresAt: ttlFrom(now),
          },
        });
      }),
  );
  if (choice.kind === "byok")
    deps.sessionKeys.set(id, { provider: choice.provider, apiKey: choice.apiKey, model: choice.model });
  return { charged: r.charged, remaining: r.remaining, body: { ...info(r.result), usage: zeroUsage(r.charged) } };
}

async function activeSession(deps: SessionDeps, p: Principal, id: string): Promise<PredictSession> {
  const s = await deps.db.predictSession.findFirst({
    where: {
      id,
      accountId: p.accountId,
      mode: p.mode,
      apiKeyId: p.keyId,
      deletedAt: null,
      expiresAt: { gt: deps.clock.now() },
    },
  });
  if (!s) throw new CoreError("SESSION_NOT_FOUND");
  return s;
}

function encodeCursor(s: PredictSession): string {
  return Buffer.from(JSON.stringify([s.createdAt.toISOString(), s.id])).toString("base64url");
}

function decodeCursor(c: string): { createdAt: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(c, "base64url").toString("utf8")) as [string, string];
    const createdAt = new Date(t);
    if (typeof id === "string" && !Number.isNaN(createdAt.getTime())) return { createdAt, id };
  } catch {}
  throw new CoreError("INVALID_CURSOR", "The cursor is not one this endpoint returned.");
}

/** GET /v1/sessions: the list shape, with SPEC's own `sessions` array too (newest first). */
export async function listSessions(
  deps: SessionDeps,
  p: Principal,
  q: { limit?: string | number | undefined; cursor?: string | undefined } = {},
): Promise<ListBody<SessionInfo> & { sessions: SessionInfo[] }> {
  const limit = parseListLimit(q.limit);
  const cur = q.cursor ? decodeCursor(q.cursor) : null;
  const rows = await deps.db.predictSession.findMany({
    where: {
      accountId: p.accountId,
      mode: p.mode,
      apiKeyId: p.keyId,
      deletedAt: null,
      expiresAt: { gt: deps.clock.now() },
      ...(cur ? { OR: [{ createdAt: { lt: cur.createdAt } }, { createdAt: cur.createdAt, id: { lt: cur.id } }] } : {}),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit).map(info);
  const hasMore = rows.length > limit;
  return listBody(
    page,
    { has_more: hasMore, next_cursor: hasMore ? encodeCursor(rows[limit - 1]!) : null },
    { sessions: page },
  );
}

export async function getSession(deps: SessionDeps, p: Principal, id: string): Promise<SessionInfo> {
  return info(await activeSession(deps, p, id));
}

export async function deleteSession(deps: SessionDeps, p: Principal, id: string) {
  await activeSession(deps, p, id);
  await deps.db.$transaction([
    deps.db.sessionStep.deleteMany({ where: { sessionId: id } }),
    deps.db.predictSession.update({ where: { id }, data: { deletedAt: deps.clock.now() } }),
  ]);
  deps.sessionKeys.drop(id);
  return { status: "ok" as const, session_id: id, deleted: true as const };
}

export async function resetSession(deps: SessionDeps, p: Principal, id: string) {
  await activeSession(deps, p, id);
  const now = deps.clock.now();
  await deps.db.$transaction([
    deps.db.sessionStep.deleteMany({ where: { sessionId: id } }),
    // the trajectory is cleared; `step` numbering goes on (stepCount is not reset)
    deps.db.predictSession.update({
      where: { id },
      data: { trajectoryLength: 0, lastUsedAt: now, expiresAt: ttlFrom(now) },
    }),
  ]);
  return { status: "ok" as const, session_id: id, reset: true as const, step_count: 0 as const };
}

function sessionEngine(deps: SessionDeps, p: Principal, s: PredictSession): EngineChoice {
  if (s.llmProvider) {
    const k = deps.sessionKeys.get(s.id);
    if (!k) {
      throw new CoreError(
        "LLM_KEY_NOT_CONFIGURED",
        "This BYOK session's provider key is held only by the service process that created it (which restarted or is another instance); create a new session.",
      );
    }
    const engine = deps.engines.provider(k.provider, k.apiKey, k.model);
    return { kind: "byok", engine, provider: k.provider, model: k.model ?? engine.id, apiKey: k.apiKey };
  }
  if (p.mode === "test")
    return { kind: "sandbox", engine: deps.engines.sandbox(), provider: "managed", model: SANDBOX_MODEL_ID };
  return { kind: "managed", engine: deps.engines.managed(), provider: "managed", model: deps.engines.managedModel() };
}

export async function sessionPredict(
  deps: SessionDeps,
  ctx: CallContext,
  id: string,
  body: SessionPredictBody,
): Promise<Billed<PredictResponse & { step: number }>> {
  const p = ctx.principal;
  const s = await activeSession(deps, p, id);
  const image = decodeScreenshot(body.screenshot);
  checkScreenSize(image, body.screen_width ?? s.screenWidth, body.screen_height ?? s.screenHeight);
  // model/llm on a session predict must agree with the session's own provider (422 otherwise)
  if (body.model !== undefined || body.llm !== undefined)
    withModelChoice({ headerProvider: s.llmProvider ?? "managed", headerModel: s.llmModel ?? undefined }, body);
  const choice = sessionEngine(deps, p, s);
  const stored = await deps.db.sessionStep.findMany({
    where: { sessionId: id },
    orderBy: { seq: "desc" },
    take: Math.min(SESSION_VISIBLE_STEPS, s.maxTrajectoryLength),
  });
  const trajectory: TrajectoryStep[] = stored.reverse().map((st) => ({
    screenshot: {
      bytes: Buffer.from(st.screenshot),
      mime: st.mime as "image/png" | "image/jpeg",
      width: st.width,
      height: st.height,
    },
    actions: st.actions as Action[],
    reasoning: st.reasoning,
  }));
  const cuaVersion = s.cuaVersion as "v5" | "v4" | "v3" | "v1";
  const price = pricePredict({
    kind: "session_predict",
    cuaVersion,
    image,
    trajectoryImages: trajectory.map((t) => t.screenshot!),
    systemPrompt: s.systemPrompt,
    instructions: s.instructions,
    mode: billingModeOf(choice),
  });
  const r = await billedPrediction(
    deps,
    ctx,
    choice,
    price.total,
    {
      screenshot: image,
      instruction: body.instruction,
      cuaVersion,
      maxActions: body.max_actions ?? 10,
      trajectory,
      systemPrompt: s.systemPrompt ?? undefined,
      instructions: s.instructions ?? undefined,
      tools: body.tools ?? ((s.tools ?? undefined) as SessionPredictBody["tools"]),
    },
    s.actionPolicy as ActionPolicy | null,
  );
  const pr = r.body;
  const step = await deps.db.$transaction(async (tx) => {
    const now = deps.clock.now();
    const rows = await tx.$queryRaw<{ step_count: number }[]>`
      UPDATE predict_sessions SET step_count = step_count + 1, last_used_at = ${now}, expires_at = ${ttlFrom(now)},
        trajectory_length = LEAST(trajectory_length + 1, max_trajectory_length),
        credits_used = credits_used + ${r.charged}
      WHERE id = ${id} RETURNING step_count`;
    const seq = rows[0]!.step_count;
    await tx.sessionStep.create({
      data: {
        sessionId: id,
        seq,
        screenshot: new Uint8Array(image.bytes),
        mime: image.mime,
        width: image.width,
        height: image.height,
        actions: pr.actions as object[],
        reasoning: pr.reasoning,
      },
    });
    // compaction: keep the newest max_trajectory_length steps (at most 20)
    await tx.sessionStep.deleteMany({ where: { sessionId: id, seq: { lte: seq - s.maxTrajectoryLength } } });
    return seq;
  });
  return { charged: r.charged, remaining: r.remaining, body: { ...shapeAnswer(pr, body), step } };
}

export async function purgeExpiredSessions(deps: SessionDeps): Promise<number> {
  const now = deps.clock.now();
  const old = await deps.db.predictSession.findMany({
    where: { OR: [{ expiresAt: { lte: now } }, { deletedAt: { not: null } }] },
    select: { id: true },
    take: 1000,
  });
  for (const o of old) deps.sessionKeys.drop(o.id);
  const r = await deps.db.predictSession.deleteMany({ where: { id: { in: old.map((o) => o.id) } } });
  return r.count;
}
