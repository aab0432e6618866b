-- AlterTable
ALTER TABLE "runs" ADD COLUMN     "awaiting_human_since" TIMESTAMPTZ(3),
ADD COLUMN     "awaiting_human_timeout_seconds" INTEGER,
ADD COLUMN     "instructions" TEXT,
ADD COLUMN     "metadata" JSONB,
ADD COLUMN     "system_prompt" TEXT;
