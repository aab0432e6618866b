-- CreateTable
CREATE TABLE "usage_rollups" (
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "period" TEXT NOT NULL,
    "endpoint" TEXT NOT NULL,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "credits_charged" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "usage_rollups_pkey" PRIMARY KEY ("account_id","mode","period","endpoint")
);

-- Backfill: requests from the rows recorded before this table existed, credits from what the wallet took
-- (captured reservations by their endpoint, machine metering charges).
INSERT INTO "usage_rollups" ("account_id", "mode", "period", "endpoint", "requests", "credits_charged")
SELECT "account_id", "mode", to_char("created_at" AT TIME ZONE 'UTC', 'YYYY-MM'), "endpoint", count(*), 0
FROM "usage_records"
GROUP BY 1, 2, 3, 4;

INSERT INTO "usage_rollups" ("account_id", "mode", "period", "endpoint", "requests", "credits_charged")
SELECT r."account_id", 'live', to_char(r."settled_at" AT TIME ZONE 'UTC', 'YYYY-MM'), r."endpoint", 0, sum(r."amount")
FROM "reservations" r
WHERE r."status" = 'captured' AND r."amount" > 0 AND r."settled_at" IS NOT NULL
GROUP BY 1, 3, 4
ON CONFLICT ("account_id", "mode", "period", "endpoint") DO UPDATE
SET "credits_charged" = "usage_rollups"."credits_charged" + EXCLUDED."credits_charged";

INSERT INTO "usage_rollups" ("account_id", "mode", "period", "endpoint", "requests", "credits_charged")
SELECT w."account_id", 'live', to_char(w."created_at" AT TIME ZONE 'UTC', 'YYYY-MM'), 'machines (metering)', 0, sum(w."amount")
FROM "wallet_entries" w
WHERE w."kind" = 'charge' AND w."amount" > 0
GROUP BY 1, 3
ON CONFLICT ("account_id", "mode", "period", "endpoint") DO UPDATE
SET "credits_charged" = "usage_rollups"."credits_charged" + EXCLUDED."credits_charged";
