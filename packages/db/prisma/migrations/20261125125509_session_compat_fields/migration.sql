-- AlterTable
ALTER TABLE "predict_sessions" ADD COLUMN     "credits_used" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "max_trajectory_length" INTEGER NOT NULL DEFAULT 20,
ADD COLUMN     "metadata" JSONB,
ADD COLUMN     "tools" JSONB,
ADD COLUMN     "trajectory_length" INTEGER NOT NULL DEFAULT 0;

-- sessions created before this migration: their trajectory holds the newest min(step_count, 20) steps
UPDATE "predict_sessions" SET "trajectory_length" = LEAST("step_count", 20);
