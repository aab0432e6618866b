-- CreateTable
CREATE TABLE "predict_sessions" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "mode" "KeyMode" NOT NULL,
    "api_key_id" TEXT NOT NULL,
    "cua_version" TEXT NOT NULL,
    "screen_width" INTEGER,
    "screen_height" INTEGER,
    "action_policy" JSONB,
    "instructions" TEXT,
    "system_prompt" TEXT,
    "llm_provider" TEXT,
    "llm_model" TEXT,
    "step_count" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "predict_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "session_steps" (
    "id" BIGSERIAL NOT NULL,
    "session_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "screenshot" BYTEA NOT NULL,
    "mime" TEXT NOT NULL,
    "width" INTEGER NOT NULL,
    "height" INTEGER NOT NULL,
    "actions" JSONB NOT NULL,
    "reasoning" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_steps_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "predict_sessions_account_id_mode_expires_at_idx" ON "predict_sessions"("account_id", "mode", "expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "session_steps_session_id_seq_key" ON "session_steps"("session_id", "seq");

-- AddForeignKey
ALTER TABLE "session_steps" ADD CONSTRAINT "session_steps_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "predict_sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
