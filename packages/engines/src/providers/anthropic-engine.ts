// Engine on Anthropic's computer-use tool, through the official SDK's beta Messages API.
// Mapping tables: anthropic-actions.ts. Tool versions and models: anthropic-models.ts. Errors: errors.ts.
import Anthropic from "@anthropic-ai/sdk";
import type {
  BetaContentBlockParam,
  BetaImageBlockParam,
  BetaMessage,
  BetaMessageParam,
  BetaToolResultBlockParam,
  BetaToolUnion,
  BetaToolUseBlockParam,
} from "@anthropic-ai/sdk/resources/beta/messages/messages";
import type { Action } from "@cua/base/actions/action";
import type {
  DecodedImage,
  Engine,
  EngineUsage,
  GroundInput,
  GroundOutput,
  PredictInput,
  PredictOutput,
} from "../types.ts";
import { type AnthropicComputerCall, fromAnthropicCalls, toAnthropicCalls } from "./anthropic-actions.ts";
import {
  ANTHROPIC_DEFAULT_MODEL,
  ANTHROPIC_TOOL_BETA,
  type AnthropicToolVersion,
  anthropicImageLimits,
  anthropicToolVersion,
} from "./anthropic-models.ts";
import { finalizeBatch, stopNote } from "./batch.ts";
import { callScope, rethrowCallerAbort } from "./deadline.ts";
import { type KeySource, mapProviderError, outputError } from "./errors.ts";
import { type ImageLimits, type PreparedImage, prepareImage, toCallerSpace, toModelSpace } from "./image-fit.ts";
import { type Point, pointerAfter } from "./pointer.ts";
import {
  assemblePredictSystem,
  BASE_GROUND_PROMPT,
  confidenceFromText,
  DEFAULT_GROUND_CONFIDENCE,
  groundInstruction,
  isNotFoundText,
  verdictFromText,
} from "./prompt.ts";

export interface AnthropicEngineOptions {
  apiKey: string;
  /** default ANTHROPIC_DEFAULT_MODEL (claude-sonnet-5) */
  model?: string;
  /** default https://api.anthropic.com (never read from the environment) */
  baseURL?: string;
  /** overall budget per call, SDK retries included; default 120000 */
  timeoutMs?: number;
  /** SDK retries on 408/409/429/5xx and connection errors; default 2 */
  maxRetries?: number;
  /** whose key this is; a rejected managed key is reported as UPSTREAM_UNAVAILABLE. Default byok. */
  keySource?: KeySource;
  /** override the tool version picked from the model name */
  toolVersion?: AnthropicToolVersion;
  /** default 8192 (adaptive thinking on current models shares this budget) */
  maxTokens?: number;
}

export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";

const TOOLSET = "computer";

/** Members of the computer toolset we never offer: their results cannot be expressed as our actions. */
const TOOLSET_ALWAYS_OFF = ["zoom", "cursor_position", "hold_key", "left_mouse_down", "left_mouse_up"] as const;

/** Toolset member -> the action types it produces (for the `tools` filter). */
const MEMBER_ACTIONS: Record<string, string[]> = {
  left_click: ["click"],
  double_click: ["click"],
  triple_click: ["click"],
  right_click: ["click"],
  middle_click: ["click"],
  mouse_move: ["move"],
  left_click_drag: ["drag"],
  type: ["type_text"],
  key: ["key_press", "key_combo"],
  scroll: ["scroll"],
  wait: ["wait"],
};

interface Conversation {
  messages: BetaMessageParam[];
  /** pointer position (caller space) after the replayed trajectory */
  cursor?: Point;
  /** toolset members used by the replayed history: they must stay offered */
  usedMembers: Set<string>;
}

function imageBlock(img: PreparedImage): BetaImageBlockParam {
  return {
    type: "image",
    source: { type: "base64", media_type: img.mime, data: img.bytes.toString("base64") },
    // Never let the provider shrink an image silently: coordinates would drift. We fit images ourselves.
    transformations: { oversized_image: "error" },
  };
}

function usageOf(msg: BetaMessage): EngineUsage {
  const u = msg.usage;
  return {
    input_tokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0),
    output_tokens: u.output_tokens,
  };
}

function textOf(msg: BetaMessage): string {
  return msg.content
    .filter((b): b is Extract<typeof b, { type: "text" }> => b.type === "text")
    .map((b) => b.text)
    .join("\n")
    .trim();
}

export function createAnthropicEngine(options: AnthropicEngineOptions): Engine {
  const model = options.model ?? ANTHROPIC_DEFAULT_MODEL;
  const toolVersion = options.toolVersion ?? anthropicToolVersion(model);
  const beta = ANTHROPIC_TOOL_BETA[toolVersion];
  const limits: ImageLimits = anthropicImageLimits(model);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const keySource = options.keySource ?? "byok";
  const maxTokens = options.maxTokens ?? 8192;
  const client = new Anthropic({
    apiKey: options.apiKey,
    authToken: null,
    baseURL: options.baseURL ?? ANTHROPIC_DEFAULT_BASE_URL,
    timeout: timeoutMs,
    maxRetries: options.maxRetries ?? 2,
    logLevel: "off",
  });
  const isToolset = toolVersion === "computer_toolset_20260801";

  function toolUseBlock(id: string, call: AnthropicComputerCall): BetaToolUseBlockParam {
    return isToolset
      ? { type: "tool_use", id, name: call.action, input: call.input, toolset_name: TOOLSET }
      : { type: "tool_use", id, name: "computer", input: { action: call.action, ...call.input } };
  }

  function toolResultBlock(id: string, content?: BetaToolResultBlockParam["content"]): BetaToolResultBlockParam {
    const block: BetaToolResultBlockParam = { type: "tool_result", tool_use_id: id };
    if (content !== undefined) block.content = content;
    if (isToolset) block.toolset_name = TOOLSET;
    return block;
  }

  function computerTool(
    current: PreparedImage,
    allowed: string[] | undefined,
    usedMembers: Set<string>,
  ): BetaToolUnion {
    if (!isToolset) {
      return {
        type: toolVersion,
        name: "computer",
        display_width_px: current.width,
        display_height_px: current.height,
      } as BetaToolUnion;
    }
    const configs: Record<string, { enabled: boolean }> = {};
    for (const member of TOOLSET_ALWAYS_OFF) configs[member] = { enabled: false };
    if (allowed) {
      for (const [member, produces] of Object.entries(MEMBER_ACTIONS)) {
        if (!produces.some((t) => allowed.includes(t)) && !usedMembers.has(member))
          configs[member] = { enabled: false };
      }
    }
    return { type: "computer_toolset_20260801", configs } as BetaToolUnion;
  }

  function callsFrom(msg: BetaMessage): { calls: AnthropicComputerCall[]; foreign: string[] } {
    const calls: AnthropicComputerCall[] = [];
    const foreign: string[] = [];
    for (const block of msg.content) {
      if (block.type !== "tool_use") continue;
      const b = block as { name: string; input: unknown; toolset_name?: string | null };
      const input =
        b.input && typeof b.input === "object" && !Array.isArray(b.input) ? (b.input as Record<string, unknown>) : null;
      if (!input) {
        calls.push({ action: b.toolset_name === TOOLSET ? b.name : "(malformed input)", input: {} });
      } else if (b.toolset_name === TOOLSET) {
        calls.push({ action: b.name, input });
      } else if (b.name === "computer" && typeof input.action === "string") {
        const { action, ...rest } = input;
        calls.push({ action: action as string, input: rest });
      } else {
        foreign.push(b.name);
      }
    }
    return { calls, foreign };
  }

  /** Replays the trajectory as tool_use / tool_result turns; see docs/engines-providers.md "Trajectory replay". */
  function buildConversation(input: PredictInput, current: PreparedImage): Conversation {
    const steps = input.trajectory;
    const prepared = steps.map((s) => (s.screenshot ? prepareImage(s.screenshot, limits) : null));
    const first = steps.length > 0 ? prepared[0] : current;
    const opening: BetaContentBlockParam[] = [];
    if (first) opening.push(imageBlock(first));
    else opening.push({ type: "text", text: "(The screenshot of the first step is not available.)" });
    opening.push({ type: "text", text: input.instruction });
    const messages: BetaMessageParam[] = [{ role: "user", content: opening }];
    const usedMembers = new Set<string>();
    let cursor: Point | undefined;

    steps.forEach((step, i) => {
      const seen = prepared[i] ?? current; // the image the model saw when it chose this step's actions
      const next = i + 1 < steps.length ? prepared[i + 1] : current;
      const centre = { x: Math.floor(seen.originalWidth / 2), y: Math.floor(seen.originalHeight / 2) };
      const assistant: BetaContentBlockParam[] = [];
      if (step.reasoning?.trim()) assistant.push({ type: "text", text: step.reasoning.trim() });
      const ids: string[] = [];
      let terminal: Action | undefined;
      const calls: AnthropicComputerCall[] = [];
      for (const action of step.actions) {
        if (action.action_type === "done" || action.action_type === "fail") {
          terminal = action;
          continue;
        }
        calls.push(...toAnthropicCalls(action, { toModel: (p) => toModelSpace(seen, p.x, p.y), cursor, centre }));
        cursor = pointerAfter(action, cursor);
      }
      if (calls.length === 0 && !terminal) calls.push({ action: "screenshot", input: {} });
      calls.forEach((call, j) => {
        const id = `toolu_replay_${i}_${j}`;
        ids.push(id);
        usedMembers.add(call.action);
        assistant.push(toolUseBlock(id, call));
      });
      if (terminal && ids.length === 0) {
        const message = terminal.action_type === "fail" && terminal.params.message ? ` ${terminal.params.message}` : "";
        assistant.push({ type: "text", text: terminal.action_type === "fail" ? `FAIL:${message}` : "Done." });
      }
      messages.push({ role: "assistant", content: assistant });

      const after: BetaContentBlockParam[] = next
        ? [imageBlock(next)]
        : [{ type: "text", text: "(Screenshot omitted from the history.)" }];
      if (ids.length === 0) {
        messages.push({ role: "user", content: [...after, { type: "text", text: "Continue with the task." }] });
      } else {
        const results = ids.map((id, j) =>
          j === ids.length - 1
            ? toolResultBlock(id, after as BetaToolResultBlockParam["content"])
            : toolResultBlock(id),
        );
        messages.push({ role: "user", content: results });
      }
    });
    return { messages, cursor, usedMembers };
  }

  async function send(params: Anthropic.Beta.Messages.MessageCreateParamsNonStreaming, signal: AbortSignal) {
    return (await client.beta.messages.create(params, { signal })) as BetaMessage;
  }

  async function predict(input: PredictInput): Promise<PredictOutput> {
    const current = prepareImage(input.screenshot, limits);
    const conversation = buildConversation(input, current);
    const system = assemblePredictSystem({
      systemPrompt: input.systemPrompt,
      instructions: input.instructions,
      maxActions: input.maxActions,
      tools: input.tools,
      width: current.width,
      height: current.height,
    });
    const scope = callScope(timeoutMs, input.signal);
    let msg: BetaMessage;
    try {
      msg = await send(
        {
          model,
          max_tokens: maxTokens,
          system,
          messages: conversation.messages,
          tools: [computerTool(current, input.tools, conversation.usedMembers)],
          tool_choice: { type: "auto", disable_parallel_tool_use: input.maxActions === 1 },
          ...(beta ? { betas: [beta] } : {}),
        },
        scope.signal,
      );
    } catch (err) {
      rethrowCallerAbort(scope);
      throw mapProviderError(err, {
        provider: "anthropic",
        operation: "predict",
        keySource,
        apiKey: options.apiKey,
        deadline: scope.deadline,
      });
    }
    return interpretPredict(msg, input, current, conversation.cursor);
  }

  function interpretPredict(
    msg: BetaMessage,
    input: PredictInput,
    current: PreparedImage,
    cursor?: Point,
  ): PredictOutput {
    const usage = usageOf(msg);
    const text = textOf(msg);
    const servedModel = msg.model ?? model;

    if (msg.stop_reason === "refusal") {
      const explanation = msg.stop_details?.explanation ?? text ?? "";
      const category = msg.stop_details?.category ?? "unspecified";
      const reason = explanation || "The model declined to continue this task.";
      return {
        actions: [{ action_type: "fail", params: { code: "PROVIDER_REFUSAL", message: reason.slice(0, 2000) } }],
        reasoning: reason,
        status: "fail",
        usage,
        model: servedModel,
        safety_checks: [{ code: `anthropic_refusal_${category}`, message: reason }],
      };
    }

    const { calls, foreign } = callsFrom(msg);
    if (calls.length === 0) {
      if (foreign.length > 0)
        throw outputError("predict", "anthropic", `it called unknown tools: ${foreign.join(", ")}`);
      if (msg.stop_reason === "max_tokens" || msg.stop_reason === "model_context_window_exceeded") {
        throw outputError("predict", "anthropic", `the answer was cut off (${msg.stop_reason})`);
      }
      const verdict = verdictFromText(text);
      const action: Action =
        verdict.status === "fail"
          ? { action_type: "fail", params: { message: verdict.reason.slice(0, 2000) } }
          : { action_type: "done", params: {} };
      return { actions: [action], reasoning: text, status: verdict.status, usage, model: servedModel };
    }

    const steps = fromAnthropicCalls(calls, { toCaller: (p) => toCallerSpace(current, p.x, p.y), cursor });
    const batch = finalizeBatch(steps, {
      width: input.screenshot.width,
      height: input.screenshot.height,
      maxActions: input.maxActions,
      tools: input.tools,
    });
    if (batch.actions.length === 0 && batch.stoppedBy?.kind === "refused") {
      throw outputError("predict", "anthropic", `${batch.stoppedBy.source}: ${batch.stoppedBy.reason}`);
    }
    const note = stopNote(batch);
    return {
      actions: batch.actions,
      reasoning: [text, note].filter(Boolean).join("\n"),
      status: "continue",
      usage,
      model: servedModel,
    };
  }

  async function ground(input: GroundInput): Promise<GroundOutput> {
    const current = prepareImage(input.screenshot, limits);
    const scope = callScope(timeoutMs, input.signal);
    let msg: BetaMessage;
    try {
      const tool = isToolset
        ? ({
            type: "computer_toolset_20260801",
            configs: Object.fromEntries(
              [
                ...TOOLSET_ALWAYS_OFF,
                ...Object.keys(MEMBER_ACTIONS).filter((m) => m !== "left_click"),
                "screenshot",
              ].map((m) => [m, { enabled: false }]),
            ),
          } as BetaToolUnion)
        : computerTool(current, undefined, new Set());
      msg = await send(
        {
          model,
          max_tokens: maxTokens,
          system: BASE_GROUND_PROMPT,
          messages: [
            {
              role: "user",
              content: [
                imageBlock(current),
                { type: "text", text: groundInstruction(input.description, current.width, current.height) },
              ],
            },
          ],
          tools: [tool],
          tool_choice: { type: "auto", disable_parallel_tool_use: true },
          ...(beta ? { betas: [beta] } : {}),
        },
        scope.signal,
      );
    } catch (err) {
      rethrowCallerAbort(scope);
      throw mapProviderError(err, {
        provider: "anthropic",
        operation: "ground",
        keySource,
        apiKey: options.apiKey,
        deadline: scope.deadline,
      });
    }
    return interpretGround(msg, input.screenshot, current);
  }

  function interpretGround(msg: BetaMessage, original: DecodedImage, current: PreparedImage): GroundOutput {
    const usage = usageOf(msg);
    const text = textOf(msg);
    const notFound: GroundOutput = { found: false, x: null, y: null, bbox: null, confidence: 0, usage };
    if (msg.stop_reason === "refusal") {
      throw outputError("ground", "anthropic", `the model declined (${msg.stop_details?.category ?? "refusal"})`);
    }
    const { calls } = callsFrom(msg);
    const pointing = calls.find((c) => Array.isArray(c.input.coordinate));
    if (!pointing) {
      if (calls.length === 0 && (isNotFoundText(text) || msg.stop_reason === "end_turn")) return notFound;
      throw outputError(
        "ground",
        "anthropic",
        calls.length > 0 ? `it answered with ${calls[0]?.action} instead of a click` : "no click and no answer",
      );
    }
    const [mx, my] = pointing.input.coordinate as unknown[];
    if (typeof mx !== "number" || typeof my !== "number" || !Number.isFinite(mx) || !Number.isFinite(my)) {
      throw outputError("ground", "anthropic", "the click coordinate is not a pair of numbers");
    }
    const p = toCallerSpace(current, mx, my);
    if (p.x < 0 || p.y < 0 || p.x >= original.width || p.y >= original.height) {
      throw outputError(
        "ground",
        "anthropic",
        `the click (${p.x}, ${p.y}) is outside the ${original.width}x${original.height} screenshot`,
      );
    }
    return {
      found: true,
      x: p.x,
      y: p.y,
      bbox: null,
      confidence: confidenceFromText(text) ?? DEFAULT_GROUND_CONFIDENCE,
      usage,
    };
  }

  return { id: "anthropic", predict, ground };
}
