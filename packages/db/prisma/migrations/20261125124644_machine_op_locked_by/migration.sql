-- AlterTable
ALTER TABLE "machines" ADD COLUMN     "op_locked_by" TEXT;
