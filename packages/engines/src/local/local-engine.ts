// The built-in local engine (id "local"): OCR-based grounding plus an instruction interpreter for
// imperative steps. No network, no model provider. See docs/engines-local.md.
import { CoreError, isCoreError } from "@cua/base/errors";
import { MANAGED_MODEL_ID } from "../models.ts";
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
  type Plan,
  parseInstruction,
  planActions,
  progressMarker,
  resumePoint,
  type ScreenReader,
  stepNeedsScreen,
} from "./interpreter.ts";
import { configureLocalOcr, type LocalOcrConfig, runLocalOcr, warmUpLocalOcr } from "./ocr.ts";
import { looksLikeDropdown } from "./pixels.ts";
import {
  type Check,
  controlLooksOn,
  decodeState,
  encodeState,
  evaluateCheck,
  type LocalState,
  regionPrint,
  screenLines,
  screenSignature,
} from "./verify.ts";

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

type Verdict =
  | { kind: "plan"; plan: Plan }
  | { kind: "retry"; opts: { resume: { step: number; action: number }; retry: { step: number; t: number } } };

/**
 * Checks what the previous action should have done against the fresh screenshot. Seen: planning goes
 * on. Not seen: a click's effect is waited for (twice, the page may be loading), then the step is
 * tried again once (typing replaces the field's content), then the answer is `fail` with the reason.
 * A false success is the worst outcome: nothing is reported done that was not seen.
 */
function verifyPrevious(
  check: Check,
  ctx: GroundingContext,
  resume: { step: number; action: number } | undefined,
): Verdict | null {
  const r = evaluateCheck(check, ctx);
  const next = resume ?? { step: check.step + 1, action: 0 };
  if (r.ok && check.submit) {
    // a submit's answer must have settled: a page still loading shows a changed screen without the
    // site's error yet. Seen changed once: look again until two screenshots agree (at most 3 waits)
    const sig = screenSignature(ctx);
    if (check.settle !== sig && (check.sw ?? 0) < 3)
      return {
        kind: "plan",
        plan: {
          actions: [{ action_type: "wait", params: { seconds: 1 } }],
          status: "continue",
          reasoning: `Checking: after "${check.d}" the page is still changing; waiting 1 s.`,
          next,
          groundings: 0,
          check: { ...check, settle: sig, sw: (check.sw ?? 0) + 1 },
        },
      };
  }
  if (r.ok) return null;
  const failPlan = (why: string): Verdict => ({
    kind: "plan",
    plan: {
      actions: [{ action_type: "fail", params: { code: "VERIFICATION_FAILED", message: why.slice(0, 2000) } }],
      status: "fail",
      reasoning: why,
      next,
      groundings: 0,
    },
  });
  if (r.fatal) return failPlan(`Not done: ${r.why}.`);
  // a click's effect may take a page load; typed text a busy machine's next frame
  if ((check.k === "change" && check.w < 2) || (check.k === "typed" && check.w < 1)) {
    const seconds = check.w + 1;
    return {
      kind: "plan",
      plan: {
        actions: [{ action_type: "wait", params: { seconds } }],
        status: "continue",
        reasoning: `Checking: ${r.why} yet; waiting ${seconds} s.`,
        next,
        groundings: 0,
        check: { ...check, w: check.w + 1 },
      },
    };
  }
  if (check.t === 0) {
    return { kind: "retry", opts: { resume: { step: check.step, action: 0 }, retry: { step: check.step, t: 1 } } };
  }
  return failPlan(`Not done: ${r.why}, also after trying again.`);
}

/** Fail codes after which a human could get the task going again (not: the instruction said to fail). */
const HUMAN_CAN_HELP = new Set(["ELEMENT_NOT_FOUND", "VERIFICATION_FAILED", "TASK_NOT_COMPLETED"]);

export function createLocalEngine(options: LocalEngineOptions = {}): LocalEngine {
  if (options.ocr) configureLocalOcr(options.ocr);

  async function predict(input: PredictInput): Promise<PredictOutput> {
    abortIfNeeded(input.signal);
    const instruction = input.instruction.trim();
    const steps = parseInstruction(instruction);
    const image = input.screenshot;
    const reasonings = input.trajectory.map((t) => t.reasoning);
    const resume = resumePoint(instruction, reasonings, steps.length);
    // what the previous call expects this screenshot to show (only with its progress marker)
    const state: LocalState = (resume && decodeState(reasonings[reasonings.length - 1])) || {};
    const needsScreen = steps.some(stepNeedsScreen) || state.check !== undefined;
    // the previous action's point: of equal matches, the one near it is meant
    // (the newest action with a point: the last step may have typed, which has none)
    const lastPoint = input.trajectory
      .flatMap((t) => t.actions ?? [])
      .reverse()
      .map((a) => a.params as { x?: number; y?: number })
      .find((p) => typeof p.x === "number" && typeof p.y === "number");
    const near = lastPoint ? { x: lastPoint.x as number, y: lastPoint.y as number } : null;
    const planOn = (c0: GroundingContext | null) => {
      const c = c0 ? { ...c0, near } : null;
      let missed = false;
      const ground: Grounder = (description) => {
        if (!c) throw new Error("grounding without a screenshot context");
        const r = groundInContext(c, description);
        if (!r.found) missed = true;
        return r;
      };
      const screen: ScreenReader | undefined = c
        ? {
            lines: () => screenLines(c),
            signature: () => screenSignature(c),
            region: (box) => (c.pixels ? regionPrint(c.pixels, box) : null),
            controlOn: (box) => (c.pixels ? controlLooksOn(c.pixels, box) : null),
            isDropdown: (box) => (c.pixels ? looksLikeDropdown(c.pixels, box) : false),
          }
        : undefined;
      const opts = {
        maxActions: Math.max(1, input.maxActions),
        tools: input.tools,
        width: image.width,
        height: image.height,
        resume: resume ?? undefined,
        screen,
        retry: state.retry,
        again: state.again,
        near,
      };
      // verification of the previous action on this (fresh) screenshot comes before anything else
      const verdict = c && state.check ? verifyPrevious(state.check, c, opts.resume) : null;
      if (verdict?.kind === "plan") return { value: verdict.plan, missed };
      const value = planActions(steps, ground, verdict?.kind === "retry" ? { ...opts, ...verdict.opts } : opts);
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
    const marker =
      plan.status === "continue"
        ? ` ${progressMarker(instruction, plan.next, steps.length)} ${encodeState({ check: plan.check, retry: plan.retry, again: plan.again })}`.trimEnd()
        : "";
    const failCode = plan.actions.find((a) => a.action_type === "fail")?.params as { code?: string } | undefined;
    return {
      actions: plan.actions,
      reasoning: `${plan.reasoning}${marker}`.trim(),
      status: plan.status,
      // what a human can fix (a missing element, an effect not seen, work that did not finish): offered
      ...(plan.status === "fail" && failCode?.code && HUMAN_CAN_HELP.has(failCode.code)
        ? { needs_human: { reason: `cannot_proceed: ${plan.reasoning}`.slice(0, 500) } }
        : {}),
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
