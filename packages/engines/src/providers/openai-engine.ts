// Engine on OpenAI's computer-use tool, through the official SDK's Responses API.
// Mapping tables: openai-actions.ts. Errors: errors.ts.
//
// Tool by model: `computer` (the GA tool: no display or environment fields, `computer_call.actions` is a
// batch, screenshots at detail "original") for gpt-5.4 and later; `computer_use_preview` (display_width,
// display_height, environment; one `action` per computer_call; truncation "auto") for computer-use-preview*.
import { createHash } from "node:crypto";
import type { Action } from "@cua/base/actions/action";
import OpenAI from "openai";
import type {
  Response,
  ResponseComputerToolCall,
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
  Tool,
} from "openai/resources/responses/responses";
import type { Engine, EngineUsage, GroundInput, GroundOutput, PredictInput, PredictOutput } from "../types.ts";
import { finalizeBatch, stopNote } from "./batch.ts";
import { callScope, rethrowCallerAbort } from "./deadline.ts";
import { type KeySource, mapProviderError, outputError } from "./errors.ts";
import { describeAction, fromOpenAIActions, type OpenAIComputerAction, toOpenAIActions } from "./openai-actions.ts";
import { type Point, pointerAfter } from "./pointer.ts";
import {
  assemblePredictSystem,
  BASE_GROUND_PROMPT,
  confidenceFromText,
  DEFAULT_GROUND_CONFIDENCE,
  groundInstruction,
  verdictFromText,
} from "./prompt.ts";

export type OpenAIComputerTool = "computer" | "computer_use_preview";
export type OpenAIEnvironment = "browser" | "linux" | "ubuntu" | "windows" | "mac";

/** Default model of the OpenAI engine: GPT-5.4, the first model trained for the GA computer tool. */
export const OPENAI_DEFAULT_MODEL = "gpt-5.4";
export const OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1";

export interface OpenAIEngineOptions {
  apiKey: string;
  /** default OPENAI_DEFAULT_MODEL (gpt-5.4) */
  model?: string;
  /** default https://api.openai.com/v1 (never read from the environment) */
  baseURL?: string;
  /** overall budget per call, SDK retries included; default 120000 */
  timeoutMs?: number;
  /** SDK retries on 408/409/429/5xx and connection errors; default 2 */
  maxRetries?: number;
  /** whose key this is; a rejected managed key is reported as UPSTREAM_UNAVAILABLE. Default byok. */
  keySource?: KeySource;
  /** override the tool picked from the model name */
  tool?: OpenAIComputerTool;
  /** computer_use_preview only: the environment declared to the model. Default linux. */
  environment?: OpenAIEnvironment;
  /** default 8192 (reasoning tokens count against it) */
  maxOutputTokens?: number;
}

export function openaiToolFor(model: string): OpenAIComputerTool {
  return /^computer-use-preview/i.test(model) ? "computer_use_preview" : "computer";
}

function dataUri(img: { bytes: Buffer; mime: string }): string {
  return `data:${img.mime};base64,${img.bytes.toString("base64")}`;
}

/** Stable ids for replayed items: cu_/call_ plus hex, like the provider's own. */
function replayIds(step: number, part: number): { id: string; call_id: string } {
  const hex = createHash("sha256").update(`replay:${step}:${part}`).digest("hex");
  return { id: `cu_${hex.slice(0, 40)}`, call_id: `call_${hex.slice(24, 48)}` };
}

function usageOf(res: Response): EngineUsage {
  return { input_tokens: res.usage?.input_tokens ?? 0, output_tokens: res.usage?.output_tokens ?? 0 };
}

interface ParsedOutput {
  text: string;
  refusal: string;
  summaries: string;
  calls: ResponseComputerToolCall[];
  foreign: string[];
}

function parseOutput(res: Response): ParsedOutput {
  const text: string[] = [];
  const refusal: string[] = [];
  const summaries: string[] = [];
  const calls: ResponseComputerToolCall[] = [];
  const foreign: string[] = [];
  for (const item of res.output ?? []) {
    if (item.type === "message") {
      for (const part of item.content ?? []) {
        if (part.type === "output_text") text.push(part.text);
        else if (part.type === "refusal") refusal.push(part.refusal);
      }
    } else if (item.type === "reasoning") {
      for (const s of item.summary ?? []) if (s.text) summaries.push(s.text);
    } else if (item.type === "computer_call") {
      calls.push(item);
    } else {
      foreign.push(item.type);
    }
  }
  return {
    text: text.join("\n").trim(),
    refusal: refusal.join("\n").trim(),
    summaries: summaries.join("\n").trim(),
    calls,
    foreign,
  };
}

/** The actions of a computer_call: the GA batch `actions`, or the preview's single `action`. */
function actionsOf(call: ResponseComputerToolCall): OpenAIComputerAction[] {
  if (Array.isArray(call.actions) && call.actions.length > 0) return call.actions as unknown as OpenAIComputerAction[];
  if (call.action) return [call.action as unknown as OpenAIComputerAction];
  return [];
}

export function createOpenAIEngine(options: OpenAIEngineOptions): Engine {
  const model = options.model ?? OPENAI_DEFAULT_MODEL;
  const toolKind = options.tool ?? openaiToolFor(model);
  const preview = toolKind === "computer_use_preview";
  const environment = options.environment ?? "linux";
  const timeoutMs = options.timeoutMs ?? 120_000;
  const keySource = options.keySource ?? "byok";
  const client = new OpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL ?? OPENAI_DEFAULT_BASE_URL,
    organization: null,
    project: null,
    adminAPIKey: null,
    webhookSecret: null,
    timeout: timeoutMs,
    maxRetries: options.maxRetries ?? 2,
    logLevel: "off",
  });
  const detail: "high" | "original" = preview ? "high" : "original";

  function tool(width: number, height: number): Tool {
    return preview
      ? { type: "computer_use_preview", display_width: width, display_height: height, environment }
      : { type: "computer" };
  }

  function screenshotOutput(callId: string, img: { bytes: Buffer; mime: string }): ResponseInputItem {
    const output = { type: "computer_screenshot", image_url: dataUri(img), ...(preview ? {} : { detail: "original" }) };
    return { type: "computer_call_output", call_id: callId, output } as ResponseInputItem;
  }

  function computerCall(
    step: number,
    part: number,
    actions: OpenAIComputerAction[],
  ): ResponseInputItem & { call_id: string } {
    const ids = replayIds(step, part);
    const call = {
      type: "computer_call",
      ...ids,
      ...(preview ? { action: actions[0] } : { actions }),
      pending_safety_checks: [],
      status: "completed",
    };
    return call as unknown as ResponseInputItem & { call_id: string };
  }

  /** Trajectory replay: computer_call + computer_call_output items; see docs/engines-providers.md. */
  function buildInput(input: PredictInput): { items: ResponseInputItem[]; cursor?: Point } {
    const steps = input.trajectory;
    const first = steps.length > 0 ? steps[0]?.screenshot : input.screenshot;
    const items: ResponseInputItem[] = [
      {
        role: "user",
        content: [
          { type: "input_text", text: input.instruction },
          ...(first ? [{ type: "input_image" as const, image_url: dataUri(first), detail }] : []),
        ],
      },
    ];
    let cursor: Point | undefined;
    steps.forEach((step, i) => {
      const next = i + 1 < steps.length ? steps[i + 1]?.screenshot : input.screenshot;
      const seen = step.screenshot ?? input.screenshot;
      const centre = { x: Math.floor(seen.width / 2), y: Math.floor(seen.height / 2) };
      if (step.reasoning?.trim()) items.push({ role: "assistant", content: step.reasoning.trim() });
      const replayable = step.actions.filter((a) => a.action_type !== "done" && a.action_type !== "fail");
      const terminal = step.actions.find((a) => a.action_type === "done" || a.action_type === "fail");
      const openaiActions: OpenAIComputerAction[] = [];
      for (const action of replayable) {
        openaiActions.push(...toOpenAIActions(action, { cursor, centre }));
        cursor = pointerAfter(action, cursor);
      }
      if (openaiActions.length === 0 && !terminal) openaiActions.push({ type: "screenshot" });

      if (openaiActions.length > 0 && next) {
        // One computer_call per step (GA batch), or one per action (preview); each answered with the
        // screenshot taken after the step.
        const groups = preview ? openaiActions.map((a) => [a]) : [openaiActions];
        groups.forEach((group, j) => {
          const call = computerCall(i, j, group);
          items.push(call, screenshotOutput(call.call_id, next));
        });
        if (terminal) items.push({ role: "assistant", content: describeAction(terminal) });
        return;
      }
      // No screenshot to answer a call with (it was compacted away), or only done/fail: replay as text.
      const said = [...replayable, ...(terminal ? [terminal] : [])].map(describeAction);
      items.push({
        role: "assistant",
        content: said.length > 0 ? `I ${said.join("; then ")}.` : "I looked at the screen.",
      });
      if (next) {
        items.push({
          role: "user",
          content: [
            { type: "input_text", text: "Here is the screen now. Continue with the task." },
            { type: "input_image", image_url: dataUri(next), detail },
          ],
        });
      } else {
        items.push({
          role: "user",
          content: "(The screenshot after that step is not available.) Continue with the task.",
        });
      }
    });
    return { items, cursor };
  }

  async function send(params: ResponseCreateParamsNonStreaming, signal: AbortSignal): Promise<Response> {
    return await client.responses.create(params, { signal });
  }

  function baseParams(
    instructions: string,
    input: ResponseInputItem[],
    width: number,
    height: number,
  ): ResponseCreateParamsNonStreaming {
    return {
      model,
      instructions,
      input,
      tools: [tool(width, height)],
      store: false,
      max_output_tokens: options.maxOutputTokens ?? 8192,
      ...(preview ? { truncation: "auto" as const, reasoning: { summary: "concise" as const } } : {}),
    };
  }

  async function predict(input: PredictInput): Promise<PredictOutput> {
    const { width, height } = input.screenshot;
    const { items } = buildInput(input);
    const instructions = assemblePredictSystem({
      systemPrompt: input.systemPrompt,
      instructions: input.instructions,
      maxActions: input.maxActions,
      tools: input.tools,
      width,
      height,
    });
    const scope = callScope(timeoutMs, input.signal);
    let res: Response;
    try {
      res = await send(baseParams(instructions, items, width, height), scope.signal);
    } catch (err) {
      rethrowCallerAbort(scope);
      throw mapProviderError(err, {
        provider: "openai",
        operation: "predict",
        keySource,
        apiKey: options.apiKey,
        deadline: scope.deadline,
      });
    }
    return interpretPredict(res, input);
  }

  function interpretPredict(res: Response, input: PredictInput): PredictOutput {
    const usage = usageOf(res);
    const out = parseOutput(res);
    const servedModel = res.model ?? model;
    const safety = out.calls.flatMap((c) =>
      (c.pending_safety_checks ?? []).map((s) => ({
        code: s.code ?? "pending_safety_check",
        message: s.message ?? `safety check ${s.id}`,
      })),
    );
    const withSafety = <T extends PredictOutput>(o: T): T => (safety.length > 0 ? { ...o, safety_checks: safety } : o);

    if (res.status === "failed" || res.error) {
      throw outputError("predict", "openai", `the response failed: ${res.error?.message ?? "no detail"}`);
    }
    if (out.calls.length === 0 && out.refusal) {
      return {
        actions: [{ action_type: "fail", params: { code: "PROVIDER_REFUSAL", message: out.refusal.slice(0, 2000) } }],
        reasoning: out.refusal,
        status: "fail",
        usage,
        model: servedModel,
        safety_checks: [...safety, { code: "openai_refusal", message: out.refusal }],
      };
    }
    const reasoning = [out.summaries, out.text].filter(Boolean).join("\n");
    if (out.calls.length === 0) {
      if (res.status === "incomplete") {
        throw outputError(
          "predict",
          "openai",
          `the answer was cut off (${res.incomplete_details?.reason ?? "incomplete"})`,
        );
      }
      if (out.foreign.length > 0 && !out.text) {
        throw outputError("predict", "openai", `it answered with unexpected items: ${out.foreign.join(", ")}`);
      }
      const verdict = verdictFromText(out.text);
      const action: Action =
        verdict.status === "fail"
          ? { action_type: "fail", params: { message: verdict.reason.slice(0, 2000) } }
          : { action_type: "done", params: {} };
      return withSafety({ actions: [action], reasoning, status: verdict.status, usage, model: servedModel });
    }

    const steps = fromOpenAIActions(out.calls.flatMap(actionsOf));
    const batch = finalizeBatch(steps, {
      width: input.screenshot.width,
      height: input.screenshot.height,
      maxActions: input.maxActions,
      tools: input.tools,
    });
    if (batch.actions.length === 0 && batch.stoppedBy?.kind === "refused") {
      throw outputError("predict", "openai", `${batch.stoppedBy.source}: ${batch.stoppedBy.reason}`);
    }
    const note = stopNote(batch);
    return withSafety({
      actions: batch.actions,
      reasoning: [reasoning, note].filter(Boolean).join("\n"),
      status: "continue",
      usage,
      model: servedModel,
    });
  }

  async function ground(input: GroundInput): Promise<GroundOutput> {
    const { width, height } = input.screenshot;
    const items: ResponseInputItem[] = [
      {
        role: "user",
        content: [
          { type: "input_text", text: groundInstruction(input.description, width, height) },
          { type: "input_image", image_url: dataUri(input.screenshot), detail },
        ],
      },
    ];
    const scope = callScope(timeoutMs, input.signal);
    let res: Response;
    try {
      res = await send(baseParams(BASE_GROUND_PROMPT, items, width, height), scope.signal);
    } catch (err) {
      rethrowCallerAbort(scope);
      throw mapProviderError(err, {
        provider: "openai",
        operation: "ground",
        keySource,
        apiKey: options.apiKey,
        deadline: scope.deadline,
      });
    }
    const usage = usageOf(res);
    const out = parseOutput(res);
    if (res.status === "failed" || res.error)
      throw outputError("ground", "openai", `the response failed: ${res.error?.message ?? "no detail"}`);
    if (out.calls.length === 0 && out.refusal) throw outputError("ground", "openai", "the model declined");
    const actions = out.calls.flatMap(actionsOf);
    const pointing = actions.find(
      (a) => ["click", "double_click", "move"].includes(a.type) && typeof a.x === "number" && typeof a.y === "number",
    );
    if (!pointing) {
      if (actions.length === 0) return { found: false, x: null, y: null, bbox: null, confidence: 0, usage };
      throw outputError("ground", "openai", `it answered with ${actions[0]?.type} instead of a click`);
    }
    const x = Math.round(pointing.x as number);
    const y = Math.round(pointing.y as number);
    if (x < 0 || y < 0 || x >= width || y >= height) {
      throw outputError("ground", "openai", `the click (${x}, ${y}) is outside the ${width}x${height} screenshot`);
    }
    const text = [out.summaries, out.text].join("\n");
    return { found: true, x, y, bbox: null, confidence: confidenceFromText(text) ?? DEFAULT_GROUND_CONFIDENCE, usage };
  }

  return { id: "openai", predict, ground };
}
