// Billing per completed step (SPEC "Runs": 5 credits v3/v4/v5, 8 v1, charged after each step completes,
// idempotent per step; 0 on test keys and with BYOK). Before a step runs, its price is reserved from
// the wallet (so a wallet that cannot pay the step stops the run with WALLET_EXHAUSTED before any
// work); the step's commit records its charge; the reservation is then captured. A step's reservations
// carry the request id `run:<run id>:step:<n>`, so a retried step reuses its hold and settlement is
// idempotent: a committed step captures exactly one reservation, anything else is released.
import type { Run } from "@cua/db/generated";
import type { CuaVersion } from "@cua/engines/types";
import type { CoreDeps } from "../deps.ts";
import { priceRunStep } from "../pricing/pricing.ts";
import { capture, release, reserve } from "../wallet/wallet.ts";

export const RUN_STEP_ENDPOINT = "POST /v1/runs (step)";

export const stepRequestId = (runId: string, step: number): string => `run:${runId}:step:${step}`;

/** The price of one step of this run (0 on test keys and with BYOK). */
export function runStepPrice(run: Pick<Run, "mode" | "llmProvider" | "cuaVersion">): number {
  const mode = run.mode === "test" ? "test" : run.llmProvider === "managed" ? "managed" : "byok";
  return priceRunStep({ cuaVersion: run.cuaVersion as CuaVersion, mode }).total;
}

/** Holds the step's price (reusing a hold a previous attempt made). Throws 402 INSUFFICIENT_CREDITS. */
export async function reserveStep(deps: CoreDeps, run: Run, step: number, amount: number): Promise<string | null> {
  if (amount === 0) return null;
  const requestId = stepRequestId(run.id, step);
  const held = await deps.db.reservation.findFirst({
    where: { accountId: run.accountId, requestId, status: "reserved" },
  });
  if (held) return held.id;
  const r = await reserve(deps, { accountId: run.accountId, amount, endpoint: RUN_STEP_ENDPOINT, requestId });
  return r.id;
}

/**
 * Settles the holds of one step (or of every step when `step` is omitted): a committed step with a
 * charge captures one hold (unless one was captured already) and releases the rest; an uncommitted
 * step releases all of its holds.
 */
export async function settleRunReservations(
  deps: CoreDeps,
  runId: string,
  step?: number,
  /**
   * What the caller knows already, to spare the reads: the run's account, and (with `step`) the charge of
   * that step when the caller has just committed it (issue 16: a live step's settlement was four statements)
   */
  known?: { accountId: string; committedCharge?: number },
): Promise<void> {
  const run = known
    ? { accountId: known.accountId }
    : await deps.db.run.findUnique({ where: { id: runId }, select: { accountId: true } });
  if (!run) return;
  const prefix = step === undefined ? `run:${runId}:step:` : stepRequestId(runId, step);
  const holds = await deps.db.reservation.findMany({
    where: {
      accountId: run.accountId,
      ...(step === undefined ? { requestId: { startsWith: prefix } } : { requestId: prefix }),
      status: { in: ["reserved", "captured"] },
    },
    orderBy: { createdAt: "asc" },
  });
  if (holds.length === 0) return;
  const byStep = new Map<number, typeof holds>();
  for (const h of holds) {
    const n = Number(h.requestId!.slice(`run:${runId}:step:`.length));
    byStep.set(n, [...(byStep.get(n) ?? []), h]);
  }
  const steps =
    step !== undefined && known?.committedCharge !== undefined
      ? [{ step, phase: "committed", creditsCharged: known.committedCharge }]
      : await deps.db.runStep.findMany({
          where: { runId, step: { in: [...byStep.keys()] } },
          select: { step: true, phase: true, creditsCharged: true },
        });
  const committed = new Map(steps.filter((s) => s.phase === "committed").map((s) => [s.step, s.creditsCharged]));
  for (const [n, list] of byStep) {
    const charge = committed.get(n) ?? 0;
    let captured = list.some((h) => h.status === "captured");
    for (const h of list) {
      if (h.status !== "reserved") continue;
      if (charge > 0 && !captured && h.amount === charge) {
        await capture(deps, h.id);
        captured = true;
      } else {
        await release(deps, h.id);
      }
    }
  }
}
