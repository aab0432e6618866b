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
import { type GroundingContext, groundElement, groundInContext, onFastThenFine } from "./ground.ts";
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
    const resume = resumePoint(
      instruction,
      input.trajectory.map((t) => t.reasoning),
      steps.length,
    );
    const planOn = (c: GroundingContext | null) => {
      let missed = false;
      const ground: Grounder = (description) => {
        if (!c) throw new Error("grounding without a screenshot context");
        const r = groundInContext(c, description);
        if (!r.found) missed = true;
        return r;
      };
      const value = planActions(steps, ground, {
        maxActions: Math.max(1, input.maxActions),
        tools: input.tools,
        width: image.width,
        height: image.height,
        resume: resume ?? undefined,
      });
      return { value, missed };
    };
    // something not found on the fast OCR pass is looked for again on the fine one (planning is pure)
    const { value: plan, ocrWords } = needsScreen
      ? await engineCall("PREDICTION_FAILED", async () => {
          const r = await onFastThenFine(image, input.signal, planOn);
          return { value: r.value, ocrWords: r.ctx.ocr.words.length };
        })
      : { value: planOn(null).value, ocrWords: 0 };
    abortIfNeeded(input.signal);
    const marker = plan.status === "continue" ? ` ${progressMarker(instruction, plan.next, steps.length)}` : "";
    return {
      actions: plan.actions,
      reasoning: `${plan.reasoning}${marker}`.trim(),
      status: plan.status,
      // no language model runs: input_tokens counts the words OCR read, output_tokens stays 0
      usage: { input_tokens: ocrWords, output_tokens: 0 },
      model: MANAGED_MODEL_ID,
    };
  }

  async function ground(input: GroundInput): Promise<GroundOutput> {
    abortIfNeeded(input.signal);
    const r = await engineCall("PREDICTION_FAILED", () =>
      groundElement(input.screenshot, input.description, input.signal),
    );
    return {
      found: r.found,
      x: r.x,
      y: r.y,
      bbox: r.bbox,
      confidence: r.confidence,
      usage: { input_tokens: r.ocr.words.length, output_tokens: 0 },
    };
  }

  async function ocr(image: DecodedImage, signal?: AbortSignal): Promise<OcrOutput> {
    abortIfNeeded(signal);
    // a full read: the fine pass (detection at up to detectionFineSide), not the fast one grounding tries first
    const r = await engineCall("PREDICTION_FAILED", () => runLocalOcr(image, signal, "fine"));
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
