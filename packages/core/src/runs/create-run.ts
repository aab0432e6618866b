// POST /v1/runs (SPEC.md "Runs"; DECISIONS.md "Runs"). Validates, snapshots a BYOK key, records the run
// (status queued, with its first `status` frame) and asks the executor to drive it. Check order
// (DECISIONS "Cross-cutting rules"): 422 body (BYOK intent on a test key, webhook_url) -> 404 machine ->
// 402 wallet (one step's price) -> 409 machine state.
import { CoreError } from "@cua/base/errors";
import type { Principal } from "../keys/authenticate-key.ts";
import { resolveStoredLlmKey } from "../llm-keys/llm-keys.ts";
import { runnableMachine } from "../machines-service/machine-access.ts";
import { loadMachine } from "../machines-service/record.ts";
import type { ActionPolicy } from "../policy/action-policy.ts";
import { type LlmChoiceInput, withModelChoice } from "../predict/model-choice.ts";
import { type LlmRequest, readLlmIntent } from "../predict/resolve-engine.ts";
import { checkPromptBudget } from "../predict/run-engine.ts";
import { getBalance } from "../wallet/wallet.ts";
import { checkCallbackUrl, type LookupAll } from "./callbacks.ts";
import type { RunsDeps } from "./ports.ts";
import {
  DEFAULT_MAX_STEPS,
  defaultMaxIterations,
  newRunId,
  type OnAwaitingHuman,
  type RunRecord,
  toRunRecord,
} from "./run-record.ts";
import { newWebhookSecret, sealRunSecret } from "./run-secrets.ts";
import { parseRunDirectives } from "./sandbox-agent.ts";
import { runStepPrice } from "./step-billing.ts";
import { appendEvents } from "./transitions.ts";

export interface CreateRunInput {
  machine_id: string;
  task: string;
  cua_version?: "v5" | "v4" | "v3" | "v1";
  max_steps?: number;
  on_awaiting_human?: OnAwaitingHuman;
  webhook_url?: string;
  budget_cents?: number;
  max_iterations?: number;
  action_policy?: ActionPolicy;
  // DECISIONS.md "Compatibility amendments (2026-11-25)": runs
  instructions?: string;
  system_prompt?: string;
  model?: string;
  llm?: LlmChoiceInput;
  /** 1 to 86,400: the run times out (timed_out) this many seconds after creation */
  deadline_seconds?: number;
  /** a pause longer than this fails the run (the on_awaiting_human fallback) */
  awaiting_human_timeout_seconds?: number;
  /** at most 50 string keys */
  metadata?: Record<string, string>;
}

export interface CreateRunContext {
  principal: Principal;
  requestId: string;
  /** X-LLM-Provider / X-LLM-Api-Key / X-LLM-Model */
  llm: LlmRequest;
  /** tests: DNS resolution of webhook hosts */
  lookup?: LookupAll;
}

export async function createRun(deps: RunsDeps, ctx: CreateRunContext, input: CreateRunInput): Promise<RunRecord> {
  const p = ctx.principal;
  checkPromptBudget(input.system_prompt, input.instructions); // 400 INPUT_TOO_LARGE
  // BYOK intent: a header (or `llm`) naming a provider (not "managed") or carrying a key
  const intent = readLlmIntent(withModelChoice(ctx.llm, { model: input.model, llm: input.llm }));
  const byok = (intent.provider !== null && intent.provider !== "managed") || Boolean(intent.apiKey);
  if (byok && p.mode === "test") {
    throw new CoreError(
      "LLM_PROVIDER_UNSUPPORTED",
      "Test-mode runs are deterministic sandbox runs; BYOK (X-LLM-Provider / X-LLM-Api-Key) needs a live key.",
    );
  }
  const webhookUrl =
    input.webhook_url === undefined
      ? null
      : await checkCallbackUrl(input.webhook_url, deps.runsConfig.allowInsecureCallbacks, ctx.lookup);

  const machine = await loadMachine(deps, p, input.machine_id); // 400 INVALID_MACHINE_ID / 404 MACHINE_NOT_FOUND

  const provider = byok && intent.provider !== null && intent.provider !== "managed" ? intent.provider : "managed";
  let providerKey: string | null = null;
  if (provider !== "managed") {
    providerKey = intent.apiKey ?? (await resolveStoredLlmKey(deps, p.accountId, provider));
    if (!providerKey) {
      throw new CoreError(
        "LLM_KEY_NOT_CONFIGURED",
        `No ${provider} key is stored; PUT /v1/llm/keys/${provider} or send X-LLM-Api-Key.`,
      );
    }
  }
  const cuaVersion = input.cua_version ?? "v5";
  const price = runStepPrice({ mode: p.mode, llmProvider: provider, cuaVersion });
  if (price > 0) {
    const balance = await getBalance(deps, p.accountId);
    if (balance < price) {
      throw new CoreError(
        "INSUFFICIENT_CREDITS",
        `A run needs at least one step's price (${price} credits); the wallet holds ${balance}.`,
        {
          required: price,
          balance,
          suggestion: "Top up the wallet, then retry.",
        },
      );
    }
  }
  runnableMachine(deps, p, machine.id, machine); // 409 INVALID_STATE when the machine is not running (the row read above)

  const id = newRunId(p.mode);
  const now = deps.clock.now();
  const directives = p.mode === "test" ? parseRunDirectives(input.task) : null;
  const deadlineSeconds = Math.min(
    input.deadline_seconds ?? deps.runsConfig.deadlineSeconds,
    deps.runsConfig.deadlineSeconds,
  );
  const deadlineAt = directives?.timeout ? now : new Date(now.getTime() + deadlineSeconds * 1000);
  const maxSteps = input.max_steps ?? DEFAULT_MAX_STEPS;
  const secret = webhookUrl ? newWebhookSecret() : null;
  const row = await deps.db.$transaction(async (tx) => {
    await tx.run.create({
      data: {
        id,
        accountId: p.accountId,
        mode: p.mode,
        apiKeyId: p.keyId,
        machineId: machine.id,
        task: input.task,
        instructions: input.instructions ?? null,
        systemPrompt: input.system_prompt ?? null,
        metadata: input.metadata ?? undefined,
        awaitingHumanTimeoutSeconds: input.awaiting_human_timeout_seconds ?? null,
        cuaVersion,
        maxSteps,
        maxIterations: input.max_iterations ?? defaultMaxIterations(maxSteps),
        onAwaitingHuman: input.on_awaiting_human ?? "pause",
        budgetCents: input.budget_cents ?? 0,
        actionPolicy: input.action_policy ? (input.action_policy as object) : undefined,
        webhookUrl,
        webhookSecretSealed: secret ? sealRunSecret(deps.kek, id, "webhook", secret) : null,
        status: "queued",
        llmProvider: provider,
        llmModel:
          provider === "managed"
            ? p.mode === "test"
              ? "svc-sandbox"
              : deps.engines.managedModel()
            : (intent.model ?? null),
        llmKeySealed: providerKey ? sealRunSecret(deps.kek, id, "llm", providerKey) : null,
        deadlineAt,
        createdAt: now,
      },
    });
    await appendEvents(tx, id, [{ event: "status", data: { run_id: id, status: "queued" } }]);
    return tx.run.findUniqueOrThrow({ where: { id } });
  });
  try {
    await deps.runJobs.started(id);
  } catch (e) {
    // the sweeper starts queued runs whose event was lost (the event id makes it idempotent)
    deps.logger.warn("run start not queued", { run_id: id, err: String(e) });
  }
  return toRunRecord(row, [], secret);
}
