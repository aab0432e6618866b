// The built-in local engine (id "local"): OCR-based grounding plus an instruction interpreter for
// imperative steps. No network, no model provider. See docs/engines-local.md.
import { CoreError, isCoreError } from "../../errors.ts";
import { MANAGED_MODEL_ID } from "../../pricing/pricing.ts";
import type {
  DecodedImage,
  Engine,
  GroundInput,
  GroundOutput,
  OcrOutput,
  PredictInput,
  PredictOutput,
} from "../types.ts";
import { groundInContext, prepareGrounding } from "./ground.ts";
import {
  type Grounder,
  parseInstruction,
  planActions,
  progressMarker,
  resumePoint,
  stepNeedsScreen,
} from "./interpreter.ts";
import { configureLocalOcr, type LocalOcrConfig, runLocalOcr, warmUpLocalOcr } from "./ocr.ts";

export interface LocalEngineOptions {
  /** OCR settings (backend, detection size, threads, tesseract path); process-wide */
  ocr?: Partial<LocalOcrConfig>;
}

export interface LocalEngine extends Engine {
  readonly id: "local";
  /** loads the OCR models and runs one tiny image; call at server start */
  warmUp(): Promise<{ backend: string; ms: number }>;
}

function abortIfNeeded(signal?: AbortSignal): void {
  if (signal?.aborted) throw new CoreError("UPSTREAM_TIMEOUT", "The local engine was cancelled.");
}

/** Any failure of OCR itself (not a CoreError) is the engine's failure, reported with `code`. */
async function engineCall<T>(code: "PREDICTION_FAILED" | "GROUNDING_FAILED", fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isCoreError(e)) throw e;
    throw new CoreError(code, `The local engine failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export function createLocalEngine(options: LocalEngineOptions = {}): LocalEngine {
  if (options.ocr) configureLocalOcr(options.ocr);

  async function predict(input: PredictInput): Promise<PredictOutput> {
    abortIfNeeded(input.signal);
    const instruction = input.instruction.trim();
    const steps = parseInstruction(instruction);
    const needsScreen = steps.some(stepNeedsScreen);
    const image = input.screenshot;
    let ctx: Awaited<ReturnType<typeof prepareGrounding>> | null = null;
    if (needsScreen) ctx = await engineCall("PREDICTION_FAILED", () => prepareGrounding(image, input.signal));
    abortIfNeeded(input.signal);
    const ground: Grounder = (description) => {
      if (!ctx) throw new Error("grounding without a screenshot context");
      return groundInContext(ctx, description);
    };
    const resume = resumePoint(
      instruction,
      input.trajectory.map((t) => t.reasoning),
      steps.length,
    );
    const plan = planActions(steps, ground, {
      maxActions: Math.max(1, input.maxActions),
      tools: input.tools,
      width: image.width,
      height: image.height,
      resume: resume ?? undefined,
    });
    const marker = plan.status === "continue" ? ` ${progressMarker(instruction, plan.next, steps.length)}` : "";
    return {
      actions: plan.actions,
      reasoning: `${plan.reasoning}${marker}`.trim(),
      status: plan.status,
      // no language model runs: input_tokens counts the words OCR read, output_tokens stays 0
      usage: { input_tokens: ctx ? ctx.ocr.words.length : 0, output_tokens: 0 },
      model: MANAGED_MODEL_ID,
    };
  }

  async function ground(input: GroundInput): Promise<GroundOutput> {
    abortIfNeeded(input.signal);
    const ctx = await engineCall("GROUNDING_FAILED", () => prepareGrounding(input.screenshot, input.signal));
    const r = groundInContext(ctx, input.description);
    return {
      found: r.found,
      x: r.x,
      y: r.y,
      bbox: r.bbox,
      confidence: r.confidence,
      usage: { input_tokens: ctx.ocr.words.length, output_tokens: 0 },
    };
  }

  async function ocr(image: DecodedImage, signal?: AbortSignal): Promise<OcrOutput> {
    abortIfNeeded(signal);
    const r = await engineCall("PREDICTION_FAILED", () => runLocalOcr(image, signal));
    return { text: r.text, words: r.words, lines: r.lines };
  }

  return {
    id: "local",
    predict,
    ground,
    ocr,
    warmUp: () => warmUpLocalOcr(),
  };
}
