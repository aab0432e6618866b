-- CreateTable
CREATE TABLE "executor_functions" (
    "id" TEXT NOT NULL,
    "app_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "config" JSONB NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "executor_functions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "executor_events" (
    "id" TEXT NOT NULL,
    "external_id" TEXT,
    "name" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "executor_events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "executor_runs" (
    "id" TEXT NOT NULL,
    "function_id" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "event" JSONB NOT NULL,
    "event_id" TEXT,
    "output" JSONB,
    "error" JSONB,
    "disable_immediate_execution" BOOLEAN NOT NULL DEFAULT false,
    "step_seq" INTEGER NOT NULL DEFAULT 0,
    "parent_run_id" TEXT,
    "parent_step_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "executor_runs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "executor_steps" (
    "run_id" TEXT NOT NULL,
    "step_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "op" TEXT NOT NULL,
    "name" TEXT,
    "data" JSONB,
    "error" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "executor_steps_pkey" PRIMARY KEY ("run_id","step_id")
);

-- CreateTable
CREATE TABLE "executor_queue" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "function_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "step_id" TEXT,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "dedupe_key" TEXT,
    "rediscover" BOOLEAN NOT NULL DEFAULT false,
    "payload" JSONB,
    "run_at" TIMESTAMPTZ(3) NOT NULL,
    "lease_owner" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "executor_queue_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "executor_waits" (
    "id" TEXT NOT NULL,
    "run_id" TEXT NOT NULL,
    "step_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "event_name" TEXT,
    "expression" TEXT,
    "child_run_id" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "executor_waits_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "executor_functions_app_id_idx" ON "executor_functions"("app_id");

-- CreateIndex
CREATE UNIQUE INDEX "executor_events_external_id_key" ON "executor_events"("external_id");

-- CreateIndex
CREATE INDEX "executor_events_name_received_at_idx" ON "executor_events"("name", "received_at");

-- CreateIndex
CREATE INDEX "executor_runs_status_function_id_idx" ON "executor_runs"("status", "function_id");

-- CreateIndex
CREATE INDEX "executor_runs_function_id_created_at_idx" ON "executor_runs"("function_id", "created_at");

-- CreateIndex
CREATE INDEX "executor_runs_event_id_idx" ON "executor_runs"("event_id");

-- CreateIndex
CREATE INDEX "executor_runs_parent_run_id_idx" ON "executor_runs"("parent_run_id");

-- CreateIndex
CREATE UNIQUE INDEX "executor_queue_dedupe_key_key" ON "executor_queue"("dedupe_key");

-- CreateIndex
CREATE INDEX "executor_queue_run_at_idx" ON "executor_queue"("run_at");

-- CreateIndex
CREATE INDEX "executor_queue_run_id_idx" ON "executor_queue"("run_id");

-- CreateIndex
CREATE UNIQUE INDEX "executor_waits_child_run_id_key" ON "executor_waits"("child_run_id");

-- CreateIndex
CREATE INDEX "executor_waits_event_name_idx" ON "executor_waits"("event_name");

-- CreateIndex
CREATE UNIQUE INDEX "executor_waits_run_id_step_id_key" ON "executor_waits"("run_id", "step_id");
