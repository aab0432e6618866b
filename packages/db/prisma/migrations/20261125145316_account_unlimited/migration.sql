-- AlterTable
ALTER TABLE "accounts" ADD COLUMN     "unlimited" BOOLEAN NOT NULL DEFAULT false;
