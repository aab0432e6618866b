// Triggers (SPEC.md "Trigger", "States and transitions / Trigger", "Schedules and triggers", "Authentication" 6;
// DECISIONS.md "Schedules and triggers" and its Compatibility amendment). A webhook trigger fires its schedule
// on a signed POST to its webhook_url; a chain trigger fires its schedule when a run of the source schedule ends
// (on_complete, on_failure, on_any), at most 5 levels deep, never in a cycle.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { CoreError, validationError } from "@cua/base/errors";
import { hex } from "@cua/base/ids";
import type { Schedule, ScheduleTrigger } from "@cua/db/generated";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { SCHEDULE_PRICING } from "../pricing/pricing.ts";
import { newWebhookSecret, openRunSecret, sealRunSecret } from "../runs/run-secrets.ts";
import { type FireDeps, fireNow, MAX_CHAIN_DEPTH } from "./fire.ts";
import {
  isScheduleIdForm,
  isTriggerIdForm,
  newHistoryId,
  newTriggerId,
  newWebhookId,
  type TriggerRecord,
  TX_OPTIONS,
  toTriggerRecord,
  WEBHOOK_ID_RE,
} from "./schedule-record.ts";
import { loadSchedule, walletGate } from "./schedules.ts";

/** SPEC "Limits": webhook replay window 5 minutes, dedup 60 seconds, body 1,000,000 bytes */
export const WEBHOOK_REPLAY_WINDOW_SECONDS = SCHEDULE_PRICING.webhook_replay_window_seconds;
export const WEBHOOK_DEDUP_WINDOW_SECONDS = SCHEDULE_PRICING.webhook_dedup_window_seconds;
export const WEBHOOK_MAX_BODY_BYTES = 1_000_000;
const TASK_PAYLOAD_MAX = 8_000;

export interface CreateTriggerInput {
  id: string;
  kind: "webhook" | "chain";
  rate_limit_per_minute?: number;
  source_schedule_id?: string;
  event?: "on_complete" | "on_failure" | "on_any";
  pass_output?: boolean;
  enabled?: boolean;
}

const secretContext = (triggerId: string) => `trigger-${triggerId}`;

/** Chain edges of an account and mode: source schedule -> schedules it fires. */
async function chainGraph(deps: CoreDeps, p: { accountId: string; mode: "live" | "test" }) {
  const edges = await deps.db.scheduleTrigger.findMany({
    where: { accountId: p.accountId, mode: p.mode, kind: "chain", deletedAt: null },
    select: { scheduleId: true, sourceScheduleId: true },
  });
  const out = new Map<string, string[]>();
  const into = new Map<string, string[]>();
  for (const e of edges) {
    if (!e.sourceScheduleId) continue;
    out.set(e.sourceScheduleId, [...(out.get(e.sourceScheduleId) ?? []), e.scheduleId]);
    into.set(e.scheduleId, [...(into.get(e.scheduleId) ?? []), e.sourceScheduleId]);
  }
  return { out, into };
}

/** The longest path (in edges) from `start` following `next` (the graph is acyclic: cycles are refused). */
function longest(start: string, next: Map<string, string[]>, seen = new Set<string>()): number {
  if (seen.has(start)) return 0;
  seen.add(start);
  let best = 0;
  for (const n of next.get(start) ?? []) best = Math.max(best, 1 + longest(n, next, new Set(seen)));
  return best;
}

function reaches(from: string, to: string, next: Map<string, string[]>): boolean {
  const stack = [from];
  const seen = new Set<string>();
  while (stack.length) {
    const x = stack.pop()!;
    if (x === to) return true;
    if (seen.has(x)) continue;
    seen.add(x);
    stack.push(...(next.get(x) ?? []));
  }
  return false;
}

export async function createTrigger(
  deps: CoreDeps,
  p: Principal,
  input: CreateTriggerInput,
  baseUrl: string,
): Promise<TriggerRecord> {
  if (input.kind === "webhook") {
    for (const k of ["source_schedule_id", "event", "pass_output"] as const)
      if (input[k] !== undefined) throw validationError(`body.${k}`, "applies only to kind chain.");
  } else {
    if (input.rate_limit_per_minute !== undefined)
      throw validationError("body.rate_limit_per_minute", "applies only to kind webhook.");
    if (input.source_schedule_id === undefined)
      throw validationError("body.source_schedule_id", "a chain trigger needs source_schedule_id.");
  }
  const target = await loadSchedule(deps, p, input.id);
  const id = newTriggerId();
  const now = deps.clock.now();
  if (input.kind === "webhook") {
    const secret = newWebhookSecret();
    const row = await deps.db.scheduleTrigger.create({
      data: {
        id,
        scheduleId: target.id,
        accountId: p.accountId,
        mode: p.mode,
        kind: "webhook",
        enabled: input.enabled ?? true,
        webhookId: newWebhookId(),
        secretSealed: sealRunSecret(deps.kek, secretContext(id), "webhook", secret),
        rateLimitPerMinute: input.rate_limit_per_minute ?? 60,
        createdAt: now,
      },
    });
    return toTriggerRecord(row, baseUrl, secret);
  }
  const sourceId = input.source_schedule_id!;
  const source = isScheduleIdForm(sourceId)
    ? await deps.db.schedule.findFirst({
        where: { id: sourceId, accountId: p.accountId, mode: p.mode, deletedAt: null },
      })
    : null;
  if (!source) throw new CoreError("SOURCE_SCHEDULE_NOT_FOUND", "The source schedule does not exist.");
  const row = await deps.db.$transaction(async (tx) => {
    // one chain change at a time per account and mode: two edges cannot close a cycle concurrently
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`chains:${p.accountId}:${p.mode}`}))`;
    const g = await chainGraph({ ...deps, db: tx as unknown as CoreDeps["db"] }, p);
    if (source.id === target.id || reaches(target.id, source.id, g.out))
      throw validationError("body.source_schedule_id", "this chain would form a cycle.");
    const depth = longest(source.id, g.into) + 1 + longest(target.id, g.out);
    if (depth > MAX_CHAIN_DEPTH)
      throw validationError(
        "body.source_schedule_id",
        `this chain would be ${depth} levels deep; at most ${MAX_CHAIN_DEPTH} are allowed.`,
      );
    return tx.scheduleTrigger.create({
      data: {
        id,
        scheduleId: target.id,
        accountId: p.accountId,
        mode: p.mode,
        kind: "chain",
        enabled: input.enabled ?? true,
        sourceScheduleId: source.id,
        event: input.event ?? "on_complete",
        passOutput: input.pass_output ?? true,
        createdAt: now,
      },
    });
  }, TX_OPTIONS);
  return toTriggerRecord(row, baseUrl);
}

export async function listTriggers(deps: CoreDeps, p: Principal, scheduleId: string, baseUrl: string) {
  const s = await loadSchedule(deps, p, scheduleId);
  const rows = await deps.db.scheduleTrigger.findMany({
    where: { scheduleId: s.id, deletedAt: null },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    take: 200,
  });
  const data = rows.map((r) => toTriggerRecord(r, baseUrl));
  return { object: "list" as const, data, has_more: false, next_cursor: null, triggers: data };
}

async function loadTrigger(deps: CoreDeps, p: Principal, scheduleId: string, triggerId: string) {
  if (!isTriggerIdForm(triggerId)) throw new CoreError("INVALID_TRIGGER_ID");
  const s = await loadSchedule(deps, p, scheduleId);
  const t = await deps.db.scheduleTrigger.findFirst({ where: { id: triggerId, scheduleId: s.id, deletedAt: null } });
  if (!t) throw new CoreError("TRIGGER_NOT_FOUND", "The trigger does not exist.");
  return t;
}

export async function updateTrigger(
  deps: CoreDeps,
  p: Principal,
  input: { id: string; trigger_id: string; enabled: boolean },
  baseUrl: string,
): Promise<TriggerRecord> {
  const t = await loadTrigger(deps, p, input.id, input.trigger_id);
  const row = await deps.db.scheduleTrigger.update({ where: { id: t.id }, data: { enabled: input.enabled } });
  return toTriggerRecord(row, baseUrl);
}

/** Deleting is final: a new trigger gets a new webhook id and secret (SPEC: recreating rotates the secret). */
export async function deleteTrigger(deps: CoreDeps, p: Principal, scheduleId: string, triggerId: string) {
  const t = await loadTrigger(deps, p, scheduleId, triggerId);
  await deps.db.scheduleTrigger.update({ where: { id: t.id }, data: { deletedAt: deps.clock.now() } });
  return { object: "trigger" as const, id: t.id, deleted: true as const };
}

// --- the public webhook fire ------------------------------------------------------------------------

const invalidSignature = (why: string) => new CoreError("INVALID_SIGNATURE", `Service-Signature: ${why}.`);

/** Service-Signature `t=<unix seconds>,v1=<hex>[,v1=<hex>]`: checked over `<t>.` + raw body, in constant time. */
export function parseSignature(header: string | undefined): { t: string; v1: string[] } {
  if (!header) throw invalidSignature("missing");
  let t: string | null = null;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const [k, v] = part.trim().split("=", 2) as [string, string | undefined];
    if (k === "t" && v !== undefined) t = v;
    else if (k === "v1" && v !== undefined) v1.push(v);
  }
  if (t === null || !/^\d{1,12}$/.test(t) || v1.length === 0 || v1.some((s) => !/^[0-9a-f]{64}$/.test(s)))
    throw invalidSignature("malformed (expected t=<unix seconds>,v1=<64 lowercase hex>)");
  return { t, v1 };
}

export function verifySignature(header: string | undefined, secret: string, raw: Buffer, now: Date): void {
  const { t, v1 } = parseSignature(header);
  if (Math.abs(now.getTime() / 1000 - Number(t)) > WEBHOOK_REPLAY_WINDOW_SECONDS)
    throw invalidSignature(`stale (the timestamp is more than ${WEBHOOK_REPLAY_WINDOW_SECONDS} seconds away)`);
  const want = createHmac("sha256", secret).update(`${t}.`).update(raw).digest();
  if (!v1.some((s) => timingSafeEqual(Buffer.from(s, "hex"), want))) throw invalidSignature("does not match the body");
}

export interface WebhookAnswer {
  received: boolean;
  schedule_id: string;
  run_id: string | null;
  deduplicated: boolean;
  message: string;
}

/** Body text for the task: JSON pretty enough to read, bounded. */
function payloadText(raw: Buffer): string {
  const text = raw.toString("utf8");
  return text.length > TASK_PAYLOAD_MAX ? `${text.slice(0, TASK_PAYLOAD_MAX)}...` : text;
}

export async function fireWebhook(
  deps: FireDeps,
  webhookId: string,
  req: { signature: string | undefined; raw: Buffer; requestId: string },
): Promise<WebhookAnswer> {
  if (req.raw.length > WEBHOOK_MAX_BODY_BYTES)
    throw new CoreError("PAYLOAD_TOO_LARGE", `A webhook body is at most ${WEBHOOK_MAX_BODY_BYTES} bytes.`);
  parseSignature(req.signature); // 401 for a missing or malformed signature, before anything is looked up
  const trigger: (ScheduleTrigger & { schedule: Schedule }) | null = WEBHOOK_ID_RE.test(webhookId)
    ? await deps.db.scheduleTrigger.findFirst({
        where: { webhookId, kind: "webhook", deletedAt: null },
        include: { schedule: true },
      })
    : null;
  if (!trigger?.secretSealed || trigger.schedule.deletedAt)
    throw new CoreError("TRIGGER_NOT_FOUND", "No webhook trigger has this URL.");
  const now = deps.clock.now();
  const secret = openRunSecret(deps.kek, secretContext(trigger.id), "webhook", trigger.secretSealed);
  verifySignature(req.signature, secret, req.raw, now); // 401
  if (!trigger.enabled) throw new CoreError("WEBHOOK_DISABLED", "This webhook trigger is disabled by its owner.");
  const s = trigger.schedule;
  const digest = createHash("sha256").update(req.raw).digest("hex");
  const claim = await deps.db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`webhook:${webhookId}`}))`;
    const since = new Date(now.getTime() - WEBHOOK_DEDUP_WINDOW_SECONDS * 1000);
    const dup = await tx.webhookDelivery.findFirst({
      where: { webhookId, bodyDigest: digest, receivedAt: { gt: since } },
      orderBy: { receivedAt: "asc" },
    });
    if (dup) return { dup };
    const recent = await tx.webhookDelivery.count({
      where: { webhookId, receivedAt: { gt: new Date(now.getTime() - 60_000) } },
    });
    if (recent >= trigger.rateLimitPerMinute)
      throw new CoreError(
        "RATE_LIMIT_EXCEEDED",
        `This webhook accepts ${trigger.rateLimitPerMinute} deliveries per minute.`,
        { retry_after: 60 },
      );
    const d = await tx.webhookDelivery.create({
      data: { id: `whd_${hex(12)}`, webhookId, bodyDigest: digest, scheduleId: s.id, receivedAt: now },
    });
    // keep the table small: deliveries older than the windows are of no use
    await tx.webhookDelivery.deleteMany({
      where: { webhookId, receivedAt: { lt: new Date(now.getTime() - 10 * 60_000) } },
    });
    return { delivery: d };
  }, TX_OPTIONS);
  if ("dup" in claim && claim.dup) {
    // the first delivery may still be starting its run: its run id is worth a short wait
    let runId = claim.dup.runId;
    for (let i = 0; runId === null && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      runId = (await deps.db.webhookDelivery.findUnique({ where: { id: claim.dup.id } }))?.runId ?? null;
    }
    return {
      received: true,
      schedule_id: s.id,
      run_id: runId,
      deduplicated: true,
      message: `The same body arrived within ${WEBHOOK_DEDUP_WINDOW_SECONDS} seconds; no new run was started.`,
    };
  }
  const delivery = claim.delivery!;
  if (s.status !== "active") {
    await deps.db.scheduleRun.create({
      data: {
        id: newHistoryId(),
        scheduleId: s.id,
        status: "skipped",
        trigger: "webhook",
        scheduledFor: now,
        executedAt: now,
        settledAt: now,
        error: { code: "INVALID_STATE", message: "The schedule is paused." },
      },
    });
    return {
      received: true,
      schedule_id: s.id,
      run_id: null,
      deduplicated: false,
      message: "The schedule is paused; the delivery was recorded as skipped.",
    };
  }
  try {
    await walletGate(deps, s, s.llmProvider); // 402 for a managed live schedule under 20 credits
  } catch (e) {
    await deps.db.webhookDelivery.delete({ where: { id: delivery.id } }).catch(() => {});
    throw e;
  }
  const entry = await fireNow(deps, s, "webhook", {
    requestId: req.requestId,
    ...(req.raw.length > 0 ? { extraTask: `Webhook payload:\n${payloadText(req.raw)}` } : {}),
  });
  await deps.db.webhookDelivery.update({ where: { id: delivery.id }, data: { runId: entry.runId } });
  return {
    received: true,
    schedule_id: s.id,
    run_id: entry.runId,
    deduplicated: false,
    message: entry.runId
      ? "Run started."
      : `No run started: ${(entry.error as { message?: string } | null)?.message ?? entry.status}.`,
  };
}
