// Engine for any OpenAI-compatible Chat Completions endpoint an operator configures (vLLM, Ollama, a gateway)
// serving a vision model without a native computer-use tool. The model is asked for our Action list as JSON
// directly: a JSON-schema response format (default), plain JSON mode, or one forced function tool. The answer
// is parsed leniently (code fences, text around the object) and then validated strictly: envelope shape,
// every action against the Action schema, the tools filter, max_actions, coordinates inside the screenshot.

import { type Action, FILTERABLE_TOOLS } from "@cua/base/actions/action";
import OpenAI from "openai";
import type {
  ChatCompletion,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import { z } from "zod";
import type {
  DecodedImage,
  Engine,
  EngineUsage,
  GroundInput,
  GroundOutput,
  PredictInput,
  PredictOutput,
} from "../types.ts";
import { finalizeBatch, type MappedStep, type ProposedAction, stopNote } from "./batch.ts";
import { callScope, rethrowCallerAbort } from "./deadline.ts";
import { type EngineOperation, type KeySource, mapProviderError, outputError } from "./errors.ts";
import { assemblePredictSystem, BASE_GROUND_PROMPT, jsonProtocol, NOT_FOUND_MARKER } from "./prompt.ts";

export type CompatibleResponseFormat = "json_schema" | "json_object" | "tool";
export type CompatibleCoordinates = "pixels" | "normalized-1000";

export interface OpenAICompatibleEngineOptions {
  /** the upstream's base URL, e.g. http://vllm:8000/v1 or http://ollama:11434/v1 */
  baseURL: string;
  /** the model name the upstream serves */
  model: string;
  /** optional: many self-hosted upstreams need none */
  apiKey?: string;
  /** overall budget per call, SDK retries included; default 120000 */
  timeoutMs?: number;
  /** default 2 */
  maxRetries?: number;
  /** default managed (operators configure these upstreams) */
  keySource?: KeySource;
  /** how the answer's shape is enforced; default json_schema */
  responseFormat?: CompatibleResponseFormat;
  /** the space the model answers in; default pixels */
  coordinates?: CompatibleCoordinates;
  /** trajectory screenshots sent as images besides the current one (newest first); default 0 */
  historyImages?: number;
  /** default 2048 */
  maxTokens?: number;
}

/** Placeholder bearer token for upstreams that take no key (the SDK always sends one). */
export const NO_KEY_PLACEHOLDER = "no-key";

const PREDICT_TOOL = "propose_actions";
const GROUND_TOOL = "locate_element";

const int = { type: "integer" } as const;

function actionSchemas(allowed: readonly string[]): Record<string, unknown>[] {
  const key = { type: "string", minLength: 1 };
  const hold = { type: "array", items: { type: "string", enum: ["ctrl", "alt", "shift", "meta"] }, maxItems: 4 };
  const params: Record<string, Record<string, unknown>> = {
    click: {
      type: "object",
      properties: {
        x: int,
        y: int,
        button: { type: "string", enum: ["left", "right", "middle"] },
        clicks: { type: "integer", minimum: 1, maximum: 3 },
        hold_keys: hold,
      },
      required: ["x", "y"],
    },
    move: { type: "object", properties: { x: int, y: int }, required: ["x", "y"] },
    drag: { type: "object", properties: { x1: int, y1: int, x2: int, y2: int }, required: ["x1", "y1", "x2", "y2"] },
    type_text: { type: "object", properties: { text: { type: "string", minLength: 1 } }, required: ["text"] },
    key_press: {
      type: "object",
      properties: { keys: { type: "array", items: key, minItems: 1, maxItems: 100 } },
      required: ["keys"],
    },
    key_combo: {
      type: "object",
      properties: { keys: { type: "array", items: key, minItems: 2, maxItems: 8 } },
      required: ["keys"],
    },
    scroll: {
      type: "object",
      properties: { clicks: int, direction: { type: "string", enum: ["vertical", "horizontal"] }, x: int, y: int },
      required: ["clicks"],
    },
    wait: {
      type: "object",
      properties: { seconds: { type: "number", minimum: 0, maximum: 60 } },
      required: ["seconds"],
    },
  };
  return allowed
    .filter((t) => params[t])
    .map((t) => ({
      type: "object",
      properties: { action_type: { type: "string", const: t }, params: { ...params[t], additionalProperties: false } },
      required: ["action_type", "params"],
      additionalProperties: false,
    }));
}

/** The JSON schema of a predict answer, narrowed to the allowed action types and max_actions. */
export function predictAnswerSchema(tools: readonly string[] | undefined, maxActions: number): Record<string, unknown> {
  const variants = actionSchemas(tools ?? FILTERABLE_TOOLS);
  return {
    type: "object",
    properties: {
      reasoning: { type: "string" },
      status: { type: "string", enum: ["continue", "done", "fail"] },
      actions:
        variants.length > 0
          ? { type: "array", maxItems: maxActions, items: { anyOf: variants } }
          : { type: "array", maxItems: 0 },
    },
    required: ["reasoning", "status", "actions"],
    additionalProperties: false,
  };
}

export const GROUND_ANSWER_SCHEMA: Record<string, unknown> = {
  type: "object",
  properties: {
    found: { type: "boolean" },
    x: { type: ["integer", "null"] },
    y: { type: ["integer", "null"] },
    bbox: {
      anyOf: [
        {
          type: "object",
          properties: { x: int, y: int, width: int, height: int },
          required: ["x", "y", "width", "height"],
          additionalProperties: false,
        },
        { type: "null" },
      ],
    },
    confidence: { type: "number", minimum: 0, maximum: 1 },
  },
  required: ["found", "x", "y", "bbox", "confidence"],
  additionalProperties: false,
};

const PredictAnswer = z.object({
  reasoning: z.string().optional().default(""),
  status: z.enum(["continue", "done", "fail"]).optional(),
  actions: z
    .array(z.object({ action_type: z.string(), params: z.record(z.string(), z.unknown()).optional().default({}) }))
    .default([]),
});

const Box = z.object({ x: z.number(), y: z.number(), width: z.number(), height: z.number() });
const GroundAnswer = z.object({
  found: z.boolean(),
  x: z.number().nullable().optional(),
  y: z.number().nullable().optional(),
  bbox: Box.nullable().optional(),
  confidence: z.number().min(0).max(1).optional(),
});

/** The first JSON object in a model's text: tolerates code fences and prose around it. */
export function extractJsonObject(text: string): unknown {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    // fall through to scanning
  }
  const start = trimmed.indexOf("{");
  if (start === -1) throw new Error("no JSON object in the answer");
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = start; i < trimmed.length; i++) {
    const ch = trimmed[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === "\\") escaped = true;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === "{") depth++;
    else if (ch === "}") {
      depth--;
      if (depth === 0) return JSON.parse(trimmed.slice(start, i + 1));
    }
  }
  throw new Error("the JSON object in the answer is not closed");
}

function dataUri(img: DecodedImage): string {
  return `data:${img.mime};base64,${img.bytes.toString("base64")}`;
}

function usageOf(c: ChatCompletion): EngineUsage {
  return { input_tokens: c.usage?.prompt_tokens ?? 0, output_tokens: c.usage?.completion_tokens ?? 0 };
}

export function createOpenAICompatibleEngine(options: OpenAICompatibleEngineOptions): Engine {
  const model = options.model;
  const format = options.responseFormat ?? "json_schema";
  const coordinates = options.coordinates ?? "pixels";
  const timeoutMs = options.timeoutMs ?? 120_000;
  const keySource = options.keySource ?? "managed";
  const historyImages = options.historyImages ?? 0;
  const apiKey = options.apiKey && options.apiKey.length > 0 ? options.apiKey : NO_KEY_PLACEHOLDER;
  const client = new OpenAI({
    apiKey,
    baseURL: options.baseURL,
    organization: null,
    project: null,
    adminAPIKey: null,
    webhookSecret: null,
    timeout: timeoutMs,
    maxRetries: options.maxRetries ?? 2,
    logLevel: "off",
  });

  const toPixels = (v: number, size: number) => (coordinates === "pixels" ? v : Math.round((v / 1000) * size));
  const fromPixels = (v: number, size: number) => (coordinates === "pixels" ? v : Math.round((v / size) * 1000));

  function shapeParams(name: string, schema: Record<string, unknown>) {
    if (format === "json_schema") {
      return { response_format: { type: "json_schema" as const, json_schema: { name, schema } } };
    }
    if (format === "json_object") return { response_format: { type: "json_object" as const } };
    return {
      tools: [{ type: "function" as const, function: { name, description: "Report the answer.", parameters: schema } }],
      tool_choice: { type: "function" as const, function: { name } },
    };
  }

  async function complete(
    params: ChatCompletionCreateParamsNonStreaming,
    signal: AbortSignal | undefined,
    op: EngineOperation,
  ) {
    const scope = callScope(timeoutMs, signal);
    try {
      return (await client.chat.completions.create(params, { signal: scope.signal })) as ChatCompletion;
    } catch (err) {
      rethrowCallerAbort(scope);
      throw mapProviderError(err, {
        provider: "openai-compatible",
        operation: op,
        keySource,
        apiKey: options.apiKey,
        deadline: scope.deadline,
      });
    }
  }

  function answerText(c: ChatCompletion, op: EngineOperation): string {
    const choice = c.choices?.[0];
    if (!choice) throw outputError(op, "openai-compatible", "the answer has no choices");
    if (choice.finish_reason === "length")
      throw outputError(op, "openai-compatible", "the answer was cut off (finish_reason length)");
    if (choice.finish_reason === "content_filter")
      throw outputError(op, "openai-compatible", "the upstream's content filter stopped the answer");
    const call = choice.message.tool_calls?.[0];
    if (call && call.type === "function") return call.function.arguments;
    if (choice.message.refusal)
      throw outputError(op, "openai-compatible", `the model declined: ${choice.message.refusal}`);
    return choice.message.content ?? "";
  }

  /** Replay: earlier answers as assistant JSON, each followed by the screenshot after it (or a note). */
  function buildMessages(input: PredictInput, system: string): ChatCompletionMessageParam[] {
    const messages: ChatCompletionMessageParam[] = [{ role: "system", content: system }];
    const steps = input.trajectory;
    const image = (img: DecodedImage): ChatCompletionContentPart => ({
      type: "image_url",
      image_url: { url: dataUri(img), detail: "high" },
    });
    // Which trajectory screenshots go as images: the newest `historyImages` of them.
    const withImage = new Set<number>();
    for (let i = steps.length - 1; i >= 0 && withImage.size < historyImages; i--)
      if (steps[i]?.screenshot) withImage.add(i);

    const opening: ChatCompletionContentPart[] = [{ type: "text", text: `Task: ${input.instruction}` }];
    if (steps.length === 0) opening.push(image(input.screenshot));
    else if (steps[0]?.screenshot && withImage.has(0)) opening.push(image(steps[0].screenshot));
    else opening.push({ type: "text", text: "(Screenshot of the first step omitted.)" });
    messages.push({ role: "user", content: opening });

    steps.forEach((step, i) => {
      const terminal = step.actions.find((a) => a.action_type === "done" || a.action_type === "fail");
      const actions = step.actions
        .filter((a) => a.action_type !== "done" && a.action_type !== "fail")
        .map((a) => ({
          action_type: a.action_type,
          params: toModelParams(a.params as Record<string, unknown>, step.screenshot ?? input.screenshot),
        }));
      messages.push({
        role: "assistant",
        content: JSON.stringify({
          reasoning: step.reasoning ?? "",
          status: terminal ? terminal.action_type : "continue",
          actions,
        }),
      });
      const last = i === steps.length - 1;
      const next = last ? input.screenshot : steps[i + 1]?.screenshot;
      const parts: ChatCompletionContentPart[] = [];
      if (last && next) parts.push({ type: "text", text: "The screen now:" }, image(next));
      else if (next && withImage.has(i + 1))
        parts.push({ type: "text", text: "The screen after that step:" }, image(next));
      else parts.push({ type: "text", text: "(Screenshot after that step omitted.)" });
      messages.push({ role: "user", content: parts });
    });
    return messages;
  }

  function toModelParams(params: Record<string, unknown>, img: DecodedImage): Record<string, unknown> {
    if (coordinates === "pixels") return params;
    const out = { ...params };
    for (const k of ["x", "x1", "x2"]) if (typeof out[k] === "number") out[k] = fromPixels(out[k] as number, img.width);
    for (const k of ["y", "y1", "y2"])
      if (typeof out[k] === "number") out[k] = fromPixels(out[k] as number, img.height);
    return out;
  }

  function toCallerParams(params: Record<string, unknown>, img: DecodedImage): Record<string, unknown> {
    if (coordinates === "pixels") return params;
    const out = { ...params };
    for (const k of ["x", "x1", "x2"]) if (typeof out[k] === "number") out[k] = toPixels(out[k] as number, img.width);
    for (const k of ["y", "y1", "y2"]) if (typeof out[k] === "number") out[k] = toPixels(out[k] as number, img.height);
    return out;
  }

  async function predict(input: PredictInput): Promise<PredictOutput> {
    const { width, height } = input.screenshot;
    const promptInput = {
      systemPrompt: input.systemPrompt,
      instructions: input.instructions,
      maxActions: input.maxActions,
      tools: input.tools,
      width,
      height,
    };
    const system = assemblePredictSystem(promptInput, jsonProtocol({ ...promptInput, coordinates }));
    const completion = await complete(
      {
        model,
        messages: buildMessages(input, system),
        temperature: 0,
        max_tokens: options.maxTokens ?? 2048,
        ...shapeParams(PREDICT_TOOL, predictAnswerSchema(input.tools, input.maxActions)),
      },
      input.signal,
      "predict",
    );
    const usage = usageOf(completion);
    const text = answerText(completion, "predict");
    let raw: unknown;
    try {
      raw = extractJsonObject(text);
    } catch (e) {
      throw outputError("predict", "openai-compatible", `the answer is not JSON (${(e as Error).message})`);
    }
    const parsed = PredictAnswer.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw outputError(
        "predict",
        "openai-compatible",
        `the answer does not have the expected shape (${issue?.path.join(".") || "answer"}: ${issue?.message})`,
      );
    }
    const answer = parsed.data;
    const servedModel = completion.model || model;

    // A done/fail action ends the list; so does a done/fail status.
    const proposed: ProposedAction[] = [];
    let terminal: "done" | "fail" | undefined;
    for (const a of answer.actions) {
      if (a.action_type === "done" || a.action_type === "fail") {
        terminal = a.action_type;
        break;
      }
      proposed.push({ action_type: a.action_type, params: toCallerParams(a.params, input.screenshot) });
    }
    if (!terminal && (answer.status === "done" || answer.status === "fail")) terminal = answer.status;

    const steps: MappedStep[] = proposed.map((p, i) => ({ kind: "actions", source: `actions[${i}]`, actions: [p] }));
    const batch = finalizeBatch(steps, { width, height, maxActions: input.maxActions, tools: input.tools });
    if (batch.stoppedBy?.kind === "refused" && batch.actions.length === 0) {
      throw outputError("predict", "openai-compatible", `${batch.stoppedBy.source}: ${batch.stoppedBy.reason}`);
    }
    const reasoning = [answer.reasoning, stopNote(batch)].filter(Boolean).join("\n");
    if (terminal && !batch.stoppedBy) {
      const end: Action =
        terminal === "fail"
          ? { action_type: "fail", params: answer.reasoning ? { message: answer.reasoning.slice(0, 2000) } : {} }
          : { action_type: "done", params: {} };
      return { actions: [...batch.actions, end], reasoning, status: terminal, usage, model: servedModel };
    }
    if (batch.actions.length === 0) {
      throw outputError("predict", "openai-compatible", "no actions and the task is neither done nor failed");
    }
    return { actions: batch.actions, reasoning, status: "continue", usage, model: servedModel };
  }

  async function ground(input: GroundInput): Promise<GroundOutput> {
    const { width, height } = input.screenshot;
    const space =
      coordinates === "pixels"
        ? `The screenshot is ${width}x${height} pixels; x, y and bbox are integer pixels of it.`
        : "x, y and bbox are integers from 0 to 1000 relative to the screenshot's width and height.";
    const completion = await complete(
      {
        model,
        messages: [
          { role: "system", content: BASE_GROUND_PROMPT },
          {
            role: "user",
            content: [
              {
                type: "text",
                text: [
                  `Locate this element: ${input.description}`,
                  space,
                  'Answer with one JSON object and nothing else: {"found": boolean, "x": centre x or null, "y": centre y or null,',
                  '"bbox": {"x", "y", "width", "height"} or null, "confidence": 0 to 1}.',
                  `If nothing matches, answer found false with nulls (${NOT_FOUND_MARKER}).`,
                ].join("\n"),
              },
              { type: "image_url", image_url: { url: dataUri(input.screenshot), detail: "high" } },
            ],
          },
        ],
        temperature: 0,
        max_tokens: options.maxTokens ?? 2048,
        ...shapeParams(GROUND_TOOL, GROUND_ANSWER_SCHEMA),
      },
      input.signal,
      "ground",
    );
    const usage = usageOf(completion);
    let raw: unknown;
    try {
      raw = extractJsonObject(answerText(completion, "ground"));
    } catch (e) {
      throw outputError("ground", "openai-compatible", `the answer is not JSON (${(e as Error).message})`);
    }
    const parsed = GroundAnswer.safeParse(raw);
    if (!parsed.success)
      throw outputError("ground", "openai-compatible", "the answer does not have the expected shape");
    const a = parsed.data;
    if (!a.found) return { found: false, x: null, y: null, bbox: null, confidence: 0, usage };

    let x = a.x ?? null;
    let y = a.y ?? null;
    const box = a.bbox
      ? {
          x: toPixels(a.bbox.x, width),
          y: toPixels(a.bbox.y, height),
          width: toPixels(a.bbox.width, width),
          height: toPixels(a.bbox.height, height),
        }
      : null;
    if (x !== null && y !== null) {
      x = toPixels(x, width);
      y = toPixels(y, height);
    } else if (box) {
      x = Math.round(box.x + box.width / 2);
      y = Math.round(box.y + box.height / 2);
    } else {
      throw outputError("ground", "openai-compatible", "found is true but there is neither a point nor a bbox");
    }
    x = Math.round(x);
    y = Math.round(y);
    if (x < 0 || y < 0 || x >= width || y >= height) {
      throw outputError(
        "ground",
        "openai-compatible",
        `the point (${x}, ${y}) is outside the ${width}x${height} screenshot`,
      );
    }
    return { found: true, x, y, bbox: box, confidence: a.confidence ?? 0.5, usage };
  }

  return { id: "openai-compatible", predict, ground };
}
