-- CreateTable
CREATE TABLE "schedules" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "api_key_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "machine_id" TEXT NOT NULL,
    "task_prompt" TEXT NOT NULL,
    "frequency" TEXT,
    "time" TEXT,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "day_of_week" INTEGER,
    "day_of_month" INTEGER,
    "cron" TEXT,
    "run_at" TIMESTAMPTZ(3),
    "next_run_at" TIMESTAMPTZ(3),
    "status" TEXT NOT NULL DEFAULT 'active',
    "paused_reason" TEXT,
    "max_consecutive_failures" INTEGER NOT NULL DEFAULT 5,
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "run_count" INTEGER NOT NULL DEFAULT 0,
    "last_run_at" TIMESTAMPTZ(3),
    "llm_provider" TEXT NOT NULL DEFAULT 'managed',
    "llm_model" TEXT,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "generation" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "schedules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedule_runs" (
    "id" TEXT NOT NULL,
    "schedule_id" TEXT NOT NULL,
    "run_id" TEXT,
    "status" TEXT NOT NULL,
    "trigger" TEXT NOT NULL,
    "chain_depth" INTEGER NOT NULL DEFAULT 0,
    "duration_seconds" INTEGER,
    "credits_charged" INTEGER NOT NULL DEFAULT 0,
    "error" JSONB,
    "scheduled_for" TIMESTAMPTZ(3),
    "executed_at" TIMESTAMPTZ(3) NOT NULL,
    "settled_at" TIMESTAMPTZ(3),

    CONSTRAINT "schedule_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedule_triggers" (
    "id" TEXT NOT NULL,
    "schedule_id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "kind" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "webhook_id" TEXT,
    "secret_sealed" BYTEA,
    "rate_limit_per_minute" INTEGER NOT NULL DEFAULT 60,
    "source_schedule_id" TEXT,
    "event" TEXT,
    "pass_output" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "schedule_triggers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" TEXT NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "body_digest" TEXT NOT NULL,
    "schedule_id" TEXT NOT NULL,
    "run_id" TEXT,
    "received_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "schedules_account_id_mode_created_at_idx" ON "schedules"("account_id", "mode", "created_at");

-- CreateIndex
CREATE INDEX "schedules_status_next_run_at_idx" ON "schedules"("status", "next_run_at");

-- CreateIndex
CREATE UNIQUE INDEX "schedule_runs_run_id_key" ON "schedule_runs"("run_id");

-- CreateIndex
CREATE INDEX "schedule_runs_schedule_id_executed_at_idx" ON "schedule_runs"("schedule_id", "executed_at");

-- CreateIndex
CREATE UNIQUE INDEX "schedule_triggers_webhook_id_key" ON "schedule_triggers"("webhook_id");

-- CreateIndex
CREATE INDEX "schedule_triggers_schedule_id_idx" ON "schedule_triggers"("schedule_id");

-- CreateIndex
CREATE INDEX "schedule_triggers_source_schedule_id_idx" ON "schedule_triggers"("source_schedule_id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_webhook_id_body_digest_received_at_idx" ON "webhook_deliveries"("webhook_id", "body_digest", "received_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_webhook_id_received_at_idx" ON "webhook_deliveries"("webhook_id", "received_at");

-- AddForeignKey
ALTER TABLE "schedule_runs" ADD CONSTRAINT "schedule_runs_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedule_triggers" ADD CONSTRAINT "schedule_triggers_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE CASCADE ON UPDATE CASCADE;
