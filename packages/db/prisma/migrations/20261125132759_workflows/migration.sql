-- CreateTable
CREATE TABLE "workflows" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "description" TEXT,
    "status" TEXT NOT NULL DEFAULT 'active',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workflows_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workflow_versions" (
    "workflow_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "definition" JSONB NOT NULL,
    "inputs_schema" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workflow_versions_pkey" PRIMARY KEY ("workflow_id","version")
);

-- CreateTable
CREATE TABLE "workflow_runs" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "api_key_id" TEXT NOT NULL,
    "workflow_id" TEXT,
    "workflow_version" INTEGER,
    "definition" JSONB NOT NULL,
    "inputs_schema" JSONB,
    "inputs" JSONB NOT NULL DEFAULT '{}',
    "machine_id" TEXT,
    "status" TEXT NOT NULL,
    "output" JSONB,
    "error" JSONB,
    "awaiting_human_reason" TEXT,
    "awaiting_step_id" TEXT,
    "iterations_used" INTEGER NOT NULL DEFAULT 0,
    "max_iterations" INTEGER NOT NULL,
    "spent_cents" INTEGER NOT NULL DEFAULT 0,
    "budget_cents" INTEGER NOT NULL DEFAULT 0,
    "deadline_at" TIMESTAMPTZ(3) NOT NULL,
    "webhook_url" TEXT,
    "webhook_secret_sealed" BYTEA,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "llm" JSONB,
    "resume_count" INTEGER NOT NULL DEFAULT 0,
    "event_seq" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "workflow_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workflow_run_steps" (
    "run_id" TEXT NOT NULL,
    "step_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "output" JSONB,
    "error" JSONB,
    "child_run_id" TEXT,
    "iteration" TEXT NOT NULL DEFAULT '',
    "decision" JSONB,
    "ordinal" INTEGER NOT NULL DEFAULT 0,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "workflow_run_steps_pkey" PRIMARY KEY ("run_id","step_id")
);

-- CreateTable
CREATE TABLE "workflow_run_events" (
    "run_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workflow_run_events_pkey" PRIMARY KEY ("run_id","seq")
);

-- CreateIndex
CREATE INDEX "workflows_account_id_mode_created_at_idx" ON "workflows"("account_id", "mode", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "workflows_account_id_mode_slug_key" ON "workflows"("account_id", "mode", "slug");

-- CreateIndex
CREATE INDEX "workflow_runs_account_id_mode_created_at_idx" ON "workflow_runs"("account_id", "mode", "created_at");

-- CreateIndex
CREATE INDEX "workflow_runs_status_idx" ON "workflow_runs"("status");

-- CreateIndex
CREATE INDEX "workflow_run_steps_child_run_id_idx" ON "workflow_run_steps"("child_run_id");

-- AddForeignKey
ALTER TABLE "workflow_versions" ADD CONSTRAINT "workflow_versions_workflow_id_fkey" FOREIGN KEY ("workflow_id") REFERENCES "workflows"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workflow_run_steps" ADD CONSTRAINT "workflow_run_steps_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "workflow_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workflow_run_events" ADD CONSTRAINT "workflow_run_events_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "workflow_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
