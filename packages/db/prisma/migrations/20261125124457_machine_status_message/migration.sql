-- AlterTable
ALTER TABLE "machines" ADD COLUMN     "status_message" TEXT;
