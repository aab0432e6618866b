// The engine port: what every prediction engine (sandbox, local OCR, Anthropic, OpenAI,
// OpenAI-compatible) implements. Coordinates are always in the space of the image the engine saw.
import type { Action } from "@cua/base/actions/action";
import type { DecodedImage } from "@cua/base/images/screenshot";

export type CuaVersion = "v5" | "v4" | "v3" | "v1";

export type { DecodedImage };

export interface TrajectoryStep {
  screenshot: DecodedImage | null;
  actions: Action[];
  reasoning?: string;
}

export interface PredictInput {
  screenshot: DecodedImage;
  instruction: string;
  cuaVersion: CuaVersion;
  maxActions: number;
  trajectory: TrajectoryStep[];
  systemPrompt?: string;
  instructions?: string;
  /** action types the caller allows the engine to use (filterable tools) */
  tools?: string[];
  signal?: AbortSignal;
}

export interface EngineUsage {
  input_tokens: number;
  output_tokens: number;
}

export interface PredictOutput {
  actions: Action[];
  reasoning: string;
  status: "continue" | "done" | "fail";
  usage: EngineUsage;
  /** provider safety checks or warnings, kept visible to the caller */
  safety_checks?: { code: string; message: string }[];
  /**
   * With status fail: a human could get the task going again (an element the engine cannot find, an
   * effect it did not see). A run that allows pausing (on_awaiting_human: pause) asks for one with this
   * reason instead of failing; other callers see the fail as it is.
   */
  needs_human?: { reason: string };
  model: string;
}

export interface GroundInput {
  screenshot: DecodedImage;
  description: string;
  cuaVersion: CuaVersion;
  signal?: AbortSignal;
}

export interface GroundOutput {
  found: boolean;
  x: number | null;
  y: number | null;
  bbox: { x: number; y: number; width: number; height: number } | null;
  confidence: number;
  usage: EngineUsage;
}

export interface OcrWord {
  text: string;
  confidence: number;
  bbox: { x: number; y: number; width: number; height: number };
}

export interface OcrOutput {
  text: string;
  words: OcrWord[];
  lines: { text: string; bbox: { x: number; y: number; width: number; height: number } }[];
}

export interface Engine {
  readonly id: string; // "sandbox" | "local" | "anthropic" | "openai" | "openai-compatible"
  predict(input: PredictInput): Promise<PredictOutput>;
  ground(input: GroundInput): Promise<GroundOutput>;
  ocr?(image: DecodedImage, signal?: AbortSignal): Promise<OcrOutput>;
  /** loads what the engine needs before its first call (the local engine's OCR models) */
  warmUp?(): Promise<{ backend: string; ms: number }>;
}
