// The price catalog: every credit amount the service charges, in one place (1 credit = $0.01).
// Sources: SPEC "Prediction and grounding" (Credits (managed) column and Surcharges), SPEC "Runs"
// (step price), SPEC "Machines" (managed pricing defaults), SPEC "Schedules and triggers" and
// "Limits" (wallet gates, scheduled runtime, webhook windows), DECISIONS "Prediction" (GET /v1/models,
// POST /v1/ocr), DECISIONS "Machines" (GET /v1/machines/pricing) and DECISIONS "Precise answers"
// (HD threshold, the 500-character rule).
//
// Decisions where SPEC/DECISIONS are silent:
// - "characters" are Unicode code points (an emoji counts as one), after trimming surrounding
//   whitespace (String.prototype.trim) of system_prompt and of instructions separately.
// - OCR has no surcharge (SPEC lists it at a flat 3); parse is free.
// - The breakdown lists the base price first, then only the surcharges that apply, each once with
//   its summed credits, in this order: cua_version_v1, trajectory_screenshots, hd_images, long_prompt.
// - BYOK and test keys are priced at 0 (calculators take `mode`); the breakdown is then empty.

import { ACTION_TYPES } from "@cua/base/actions/action";
import { MANAGED_MODEL_ID } from "@cua/engines/models";
import type { CuaVersion } from "@cua/engines/types";

export type BillingMode = "managed" | "byok" | "test";

export const CUA_VERSIONS = ["v5", "v4", "v3", "v1"] as const satisfies readonly CuaVersion[];
export const DEFAULT_CUA_VERSION: CuaVersion = "v5";

export const PREDICT_BASE_CREDITS = 5;
export const SESSION_PREDICT_BASE_CREDITS = 4;
export const SESSION_CREATE_CREDITS = 10;
export const GROUND_BASE_CREDITS = 3;
export const OCR_CREDITS = 3;
export const PARSE_CREDITS = 0;

export const TRAJECTORY_SCREENSHOT_CREDITS = 2;
export const HD_IMAGE_CREDITS = 1;
export const HD_THRESHOLD = { width: 1280, height: 720 } as const;
export const CUA_V1_SURCHARGE_CREDITS = 3;
export const LONG_PROMPT_CREDITS = 1;
export const LONG_PROMPT_THRESHOLD_CHARS = 500;

/** SPEC "Runs": step price 5 credits for v3, v4, v5; 8 for v1. */
export const RUN_STEP_CREDITS: Readonly<Record<CuaVersion, number>> = { v5: 5, v4: 5, v3: 5, v1: 8 };

/** DECISIONS "Machines": the GET /v1/machines/pricing body. */
export const MACHINE_PRICING = {
  linux_running_per_hour: 5,
  windows_running_per_hour: 9,
  stopped_per_hour: 1,
  billing: "per_minute",
  provision_gate_credits: 20,
  snapshot_credits: 1,
} as const;

/** SPEC "Schedules and triggers" and "Limits"; served as pricing.schedules by GET /v1/models. */
export const SCHEDULE_PRICING = {
  wallet_gate_credits: 20,
  credits_per_minute: 10,
  start_minimum_credits: 20,
  cap_hours: 6,
  webhook_dedup_window_seconds: 60,
  webhook_replay_window_seconds: 300,
} as const;

export interface ImageSize {
  width: number;
  height: number;
}

export interface PriceLine {
  item: "base" | "cua_version_v1" | "trajectory_screenshots" | "hd_images" | "long_prompt";
  credits: number;
}

export interface Price {
  total: number;
  breakdown: PriceLine[];
}

/** DECISIONS "Precise answers": an image is HD when width > 1280 or height > 720. */
export function isHd(img: ImageSize): boolean {
  return img.width > HD_THRESHOLD.width || img.height > HD_THRESHOLD.height;
}

const codePoints = (s: string | undefined | null): number => (s ? [...s.trim()].length : 0);

/** DECISIONS "Precise answers": trimmed system_prompt plus trimmed instructions, summed. */
export function promptChars(systemPrompt?: string | null, instructions?: string | null): number {
  return codePoints(systemPrompt) + codePoints(instructions);
}

/** Strictly over 500 characters: exactly 500 is free. */
export function isLongPrompt(systemPrompt?: string | null, instructions?: string | null): boolean {
  return promptChars(systemPrompt, instructions) > LONG_PROMPT_THRESHOLD_CHARS;
}

export function isBillable(mode: BillingMode | undefined): boolean {
  return (mode ?? "managed") === "managed";
}

function total(lines: PriceLine[], mode: BillingMode | undefined): Price {
  if (!isBillable(mode)) return { total: 0, breakdown: [] };
  const breakdown = lines.filter((l) => l.item === "base" || l.credits > 0);
  return { total: breakdown.reduce((s, l) => s + l.credits, 0), breakdown };
}

export interface PredictPriceInput {
  kind: "predict" | "session_predict";
  cuaVersion: CuaVersion;
  /** the current screenshot */
  image: ImageSize;
  /** images the provider sees from earlier steps (session predict: after compaction) */
  trajectoryImages: ImageSize[];
  systemPrompt?: string | null;
  instructions?: string | null;
  mode?: BillingMode;
}

/** Price of POST /v1/predict or POST /v1/sessions/{id}/predict (SPEC Surcharges). */
export function pricePredict(input: PredictPriceInput): Price {
  const base = input.kind === "predict" ? PREDICT_BASE_CREDITS : SESSION_PREDICT_BASE_CREDITS;
  const hdCount = (isHd(input.image) ? 1 : 0) + input.trajectoryImages.filter(isHd).length;
  return total(
    [
      { item: "base", credits: base },
      { item: "cua_version_v1", credits: input.cuaVersion === "v1" ? CUA_V1_SURCHARGE_CREDITS : 0 },
      { item: "trajectory_screenshots", credits: input.trajectoryImages.length * TRAJECTORY_SCREENSHOT_CREDITS },
      { item: "hd_images", credits: hdCount * HD_IMAGE_CREDITS },
      { item: "long_prompt", credits: isLongPrompt(input.systemPrompt, input.instructions) ? LONG_PROMPT_CREDITS : 0 },
    ],
    input.mode,
  );
}

/** Price of POST /v1/ground: base 3, plus only the current-image HD surcharge. */
export function priceGround(input: { image: ImageSize; mode?: BillingMode }): Price {
  return total(
    [
      { item: "base", credits: GROUND_BASE_CREDITS },
      { item: "hd_images", credits: isHd(input.image) ? HD_IMAGE_CREDITS : 0 },
    ],
    input.mode,
  );
}

/** Price of POST /v1/ocr: a flat 3. */
export function priceOcr(input: { mode?: BillingMode } = {}): Price {
  return total([{ item: "base", credits: OCR_CREDITS }], input.mode);
}

/** Price of POST /v1/sessions: 10 fixed, no surcharge. */
export function priceSessionCreate(input: { mode?: BillingMode } = {}): Price {
  return total([{ item: "base", credits: SESSION_CREATE_CREDITS }], input.mode);
}

/** Price of one run step (runs and workflow task steps). */
export function priceRunStep(input: { cuaVersion: CuaVersion; mode?: BillingMode }): Price {
  return total([{ item: "base", credits: RUN_STEP_CREDITS[input.cuaVersion] }], input.mode);
}

/** The `pricing` object of GET /v1/models: every price and surcharge. */
export function pricingCatalog() {
  return {
    currency: "credits",
    credit_usd: 0.01,
    predict: { base_credits: PREDICT_BASE_CREDITS },
    session_create: { credits: SESSION_CREATE_CREDITS },
    session_predict: { base_credits: SESSION_PREDICT_BASE_CREDITS },
    ground: { base_credits: GROUND_BASE_CREDITS },
    ocr: { credits: OCR_CREDITS },
    parse: { credits: PARSE_CREDITS },
    surcharges: {
      trajectory_screenshot_credits: TRAJECTORY_SCREENSHOT_CREDITS,
      hd_image_credits: HD_IMAGE_CREDITS,
      hd_threshold: { width: HD_THRESHOLD.width, height: HD_THRESHOLD.height },
      cua_version_v1_credits: CUA_V1_SURCHARGE_CREDITS,
      long_prompt_credits: LONG_PROMPT_CREDITS,
      long_prompt_threshold_chars: LONG_PROMPT_THRESHOLD_CHARS,
      applies_to: {
        predict: ["trajectory_screenshot", "hd_image", "cua_version_v1", "long_prompt"],
        session_predict: ["trajectory_screenshot", "hd_image", "cua_version_v1", "long_prompt"],
        ground: ["hd_image"],
        session_create: [],
        ocr: [],
      },
    },
    run_step_credits: { ...RUN_STEP_CREDITS },
    workflow_task_step_credits: { ...RUN_STEP_CREDITS },
    machines: { ...MACHINE_PRICING },
    byok_credits: 0,
    test_mode_credits: 0,
    schedules: { ...SCHEDULE_PRICING },
  };
}

export type PricingCatalog = ReturnType<typeof pricingCatalog>;

export const MODELS = [
  { id: MANAGED_MODEL_ID, provider: "managed" },
  { id: "claude-sonnet-4-5", provider: "anthropic" },
  { id: "claude-opus-4-5", provider: "anthropic" },
  { id: "computer-use-preview", provider: "openai" },
] as const;

/** The whole GET /v1/models body (DECISIONS "Prediction"). */
export function modelsCatalog() {
  return {
    models: MODELS.map((m) => ({ id: m.id, provider: m.provider, cua_versions: [...CUA_VERSIONS] })),
    cua_versions: CUA_VERSIONS.map((id) => ({
      id,
      default: id === DEFAULT_CUA_VERSION,
      step_credits: RUN_STEP_CREDITS[id],
    })),
    action_types: [...ACTION_TYPES],
    pricing: pricingCatalog(),
  };
}

export type ModelsCatalog = ReturnType<typeof modelsCatalog>;
