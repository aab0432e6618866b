-- CreateTable
CREATE TABLE "runs" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "api_key_id" TEXT NOT NULL,
    "machine_id" TEXT NOT NULL,
    "task" TEXT NOT NULL,
    "cua_version" TEXT NOT NULL,
    "max_steps" INTEGER NOT NULL,
    "max_iterations" INTEGER NOT NULL,
    "on_awaiting_human" TEXT NOT NULL,
    "budget_cents" INTEGER NOT NULL DEFAULT 0,
    "action_policy" JSONB,
    "webhook_url" TEXT,
    "webhook_secret_sealed" BYTEA,
    "status" TEXT NOT NULL,
    "step_count" INTEGER NOT NULL DEFAULT 0,
    "iteration_count" INTEGER NOT NULL DEFAULT 0,
    "awaiting_human_reason" TEXT,
    "resume_count" INTEGER NOT NULL DEFAULT 0,
    "resumed_at_step" INTEGER NOT NULL DEFAULT 0,
    "result" JSONB,
    "error" JSONB,
    "credits_charged" INTEGER NOT NULL DEFAULT 0,
    "llm_provider" TEXT NOT NULL DEFAULT 'managed',
    "llm_model" TEXT,
    "llm_key_sealed" BYTEA,
    "last_step_error" JSONB,
    "event_seq" INTEGER NOT NULL DEFAULT 0,
    "deadline_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "run_steps" (
    "run_id" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "phase" TEXT NOT NULL,
    "screenshot_digest" TEXT,
    "actions_digest" TEXT,
    "actions" JSONB,
    "reasoning" TEXT,
    "engine_status" TEXT,
    "usage" JSONB,
    "results" JSONB,
    "exec_attempts" INTEGER NOT NULL DEFAULT 0,
    "credits_charged" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "committed_at" TIMESTAMPTZ(3),

    CONSTRAINT "run_steps_pkey" PRIMARY KEY ("run_id","step")
);

-- CreateTable
CREATE TABLE "run_events" (
    "run_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "run_events_pkey" PRIMARY KEY ("run_id","seq")
);

-- CreateTable
CREATE TABLE "run_callback_deliveries" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "event_key" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "attempts" JSONB NOT NULL DEFAULT '[]',
    "attempt_count" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_attempt_at" TIMESTAMPTZ(3),
    "delivered_at" TIMESTAMPTZ(3),

    CONSTRAINT "run_callback_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "runs_account_id_mode_created_at_idx" ON "runs"("account_id", "mode", "created_at");

-- CreateIndex
CREATE INDEX "runs_account_id_mode_status_created_at_idx" ON "runs"("account_id", "mode", "status", "created_at");

-- CreateIndex
CREATE INDEX "runs_status_idx" ON "runs"("status");

-- CreateIndex
CREATE INDEX "run_callback_deliveries_status_created_at_idx" ON "run_callback_deliveries"("status", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "run_callback_deliveries_run_id_event_key_key" ON "run_callback_deliveries"("run_id", "event_key");

-- AddForeignKey
ALTER TABLE "run_steps" ADD CONSTRAINT "run_steps_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run_events" ADD CONSTRAINT "run_events_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "run_callback_deliveries" ADD CONSTRAINT "run_callback_deliveries_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
