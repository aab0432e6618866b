-- CreateTable
CREATE TABLE "workflow_callback_deliveries" (
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

    CONSTRAINT "workflow_callback_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "workflow_callback_deliveries_status_created_at_idx" ON "workflow_callback_deliveries"("status", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "workflow_callback_deliveries_run_id_event_key_key" ON "workflow_callback_deliveries"("run_id", "event_key");

-- AddForeignKey
ALTER TABLE "workflow_callback_deliveries" ADD CONSTRAINT "workflow_callback_deliveries_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "workflow_runs"("id") ON DELETE CASCADE ON UPDATE CASCADE;
