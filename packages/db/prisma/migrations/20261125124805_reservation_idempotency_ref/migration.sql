-- AlterTable
ALTER TABLE "reservations" ADD COLUMN     "idempotency_ref" TEXT;

-- CreateIndex
CREATE INDEX "reservations_status_created_at_idx" ON "reservations"("status", "created_at");

-- CreateIndex
CREATE INDEX "reservations_idempotency_ref_idx" ON "reservations"("idempotency_ref");
