-- CreateTable
CREATE TABLE "machines" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "kind" TEXT NOT NULL,
    "is_test" BOOLEAN NOT NULL DEFAULT false,
    "display_name" TEXT NOT NULL DEFAULT '',
    "os_type" TEXT NOT NULL DEFAULT 'linux',
    "desktop_enabled" BOOLEAN NOT NULL DEFAULT true,
    "status" TEXT NOT NULL,
    "status_reason" TEXT,
    "provider" TEXT NOT NULL,
    "handle" JSONB,
    "ttl_minutes" INTEGER,
    "expires_at" TIMESTAMPTZ(3),
    "screen_width" INTEGER NOT NULL DEFAULT 1280,
    "screen_height" INTEGER NOT NULL DEFAULT 720,
    "capabilities" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "fencing_token" INTEGER NOT NULL DEFAULT 0,
    "device_token_hash" TEXT,
    "device_token_revoked_at" TIMESTAMPTZ(3),
    "protocol_version" INTEGER,
    "last_sequence" INTEGER NOT NULL DEFAULT 0,
    "last_frame_id" TEXT,
    "command_seq" INTEGER NOT NULL DEFAULT 0,
    "last_heartbeat_at" TIMESTAMPTZ(3),
    "driver_status" JSONB,
    "billed_through" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "meter_remainder" INTEGER NOT NULL DEFAULT 0,
    "credits_charged" INTEGER NOT NULL DEFAULT 0,
    "op_locked_until" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "terminated_at" TIMESTAMPTZ(3),

    CONSTRAINT "machines_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "machine_snapshots" (
    "id" TEXT NOT NULL,
    "machine_id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "name" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "size_bytes" BIGINT,
    "provider_ref" TEXT,
    "credits_charged" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "machine_snapshots_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "machine_commands" (
    "id" TEXT NOT NULL,
    "machine_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "command" TEXT NOT NULL,
    "parameters" JSONB NOT NULL,
    "capability" TEXT NOT NULL,
    "fencing_token" INTEGER NOT NULL,
    "precondition_frame_id" TEXT,
    "deadline" TIMESTAMPTZ(3) NOT NULL,
    "status" TEXT NOT NULL,
    "delivery_count" INTEGER NOT NULL DEFAULT 0,
    "delivered_at" TIMESTAMPTZ(3),
    "result" JSONB,
    "result_hash" TEXT,
    "completed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "machine_commands_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "machine_frames" (
    "id" TEXT NOT NULL,
    "machine_id" TEXT NOT NULL,
    "sequence" INTEGER NOT NULL,
    "mime_type" TEXT NOT NULL,
    "width" INTEGER NOT NULL,
    "height" INTEGER NOT NULL,
    "ciphertext" BYTEA NOT NULL,
    "iv" BYTEA NOT NULL,
    "tag" BYTEA NOT NULL,
    "request_digest" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "stored_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "machine_frames_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "machines_device_token_hash_key" ON "machines"("device_token_hash");

-- CreateIndex
CREATE INDEX "machines_account_id_mode_created_at_idx" ON "machines"("account_id", "mode", "created_at");

-- CreateIndex
CREATE INDEX "machines_status_idx" ON "machines"("status");

-- CreateIndex
CREATE INDEX "machine_snapshots_account_id_mode_machine_id_idx" ON "machine_snapshots"("account_id", "mode", "machine_id");

-- CreateIndex
CREATE INDEX "machine_commands_machine_id_status_idx" ON "machine_commands"("machine_id", "status");

-- CreateIndex
CREATE UNIQUE INDEX "machine_commands_machine_id_seq_key" ON "machine_commands"("machine_id", "seq");

-- CreateIndex
CREATE INDEX "machine_frames_expires_at_idx" ON "machine_frames"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "machine_frames_machine_id_sequence_key" ON "machine_frames"("machine_id", "sequence");

-- AddForeignKey
ALTER TABLE "machine_snapshots" ADD CONSTRAINT "machine_snapshots_machine_id_fkey" FOREIGN KEY ("machine_id") REFERENCES "machines"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "machine_commands" ADD CONSTRAINT "machine_commands_machine_id_fkey" FOREIGN KEY ("machine_id") REFERENCES "machines"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "machine_frames" ADD CONSTRAINT "machine_frames_machine_id_fkey" FOREIGN KEY ("machine_id") REFERENCES "machines"("id") ON DELETE CASCADE ON UPDATE CASCADE;
