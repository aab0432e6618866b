// A stand-in for Anthropic's Messages API (POST /v1/messages, with the SDK's ?beta=true), speaking its wire
// format: x-api-key / anthropic-version / anthropic-beta headers, message JSON with ids, stop_reason and usage,
// error bodies {type: "error", error: {type, message}, request_id} with a request-id header.
//
// It checks what a real endpoint would reject (400 invalid_request_error): missing version header, roles
// that do not alternate, a tool_use without its tool_result right after (or the reverse), a computer tool
// version without its beta flag, a toolset call or result without toolset_name, bad image blocks.
//
// A test scripts computer calls neutrally ({action: "left_click", coordinate: [x, y]}); the stand-in renders
// them in the shape of the tool the request offered: input.action on the single `computer` tool
// (computer_2025xxxx), the member name plus toolset_name on computer_toolset_20260801.
import {
  type HttpReply,
  type RecordedRequest,
  type ScriptStep,
  type StandinCore,
  sniffImage,
  startStandin,
} from "./http-standin.ts";

export interface ComputerCall {
  action: string;
  [field: string]: unknown;
}

export type AnthropicReply =
  | {
      kind: "message";
      text?: string;
      calls?: ComputerCall[];
      /** raw content blocks appended after text and calls (e.g. a malformed tool_use) */
      blocks?: unknown[];
      stop_reason?: string;
      stop_details?: { category: string | null; explanation: string | null };
      usage?: {
        input_tokens?: number;
        output_tokens?: number;
        cache_creation_input_tokens?: number;
        cache_read_input_tokens?: number;
      };
    }
  | { kind: "error"; status: number; type: string; message: string; headers?: Record<string, string> }
  | { kind: "raw"; status: number; body: string; headers?: Record<string, string> };

export type AnthropicStandin = StandinCore<AnthropicReply>;

export const TOOL_BETAS: Record<string, string> = {
  computer_20251124: "computer-use-2025-11-24",
  computer_20250124: "computer-use-2025-01-24",
  computer_20241022: "computer-use-2024-10-22",
};

export const TOOLSET_MEMBERS = [
  "key",
  "hold_key",
  "type",
  "cursor_position",
  "mouse_move",
  "left_mouse_down",
  "left_mouse_up",
  "left_click",
  "left_click_drag",
  "right_click",
  "middle_click",
  "double_click",
  "triple_click",
  "scroll",
  "wait",
  "screenshot",
  "zoom",
];

function errorBody(type: string, message: string, requestId: string) {
  return { type: "error", error: { type, message }, request_id: requestId };
}

function invalid(message: string): HttpReply {
  return {
    status: 400,
    body: errorBody("invalid_request_error", message, "req_standin_invalid"),
    headers: { "request-id": "req_standin_invalid" },
  };
}

function blocksOf(content: unknown): any[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? content : [];
}

function checkImage(block: any, where: string): string | null {
  const src = block?.source;
  if (src?.type !== "base64") return `${where}: image source must be base64 here`;
  if (!["image/png", "image/jpeg", "image/gif", "image/webp"].includes(src.media_type))
    return `${where}: unsupported media_type`;
  const sniffed = sniffImage(String(src.data ?? ""));
  if (!sniffed) return `${where}: image data is not a valid PNG or JPEG`;
  if (sniffed !== src.media_type)
    return `${where}: media_type ${src.media_type} does not match the image data (${sniffed})`;
  const t = block.transformations;
  if (t !== undefined && t !== null && !["downsize", "error", undefined].includes(t.oversized_image)) {
    return `${where}: transformations.oversized_image must be downsize or error`;
  }
  return null;
}

/** What a real endpoint rejects; null when the request is acceptable. */
export function validateMessagesRequest(req: RecordedRequest): string | null {
  const body = req.body;
  if (!body || typeof body !== "object") return "request body is not valid JSON";
  if (!req.headers["anthropic-version"]) return "anthropic-version header is required";
  if (typeof body.model !== "string" || body.model === "") return "model: Field required";
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return "max_tokens: must be a positive integer";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages: at least one message is required";

  const betas = (req.headers["anthropic-beta"] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const tools: any[] = Array.isArray(body.tools) ? body.tools : [];
  let toolset = false;
  for (const [i, tool] of tools.entries()) {
    if (tool?.type === "computer_toolset_20260801") {
      toolset = true;
      if ("name" in tool) return `tools.${i}: a toolset entry carries no name`;
      for (const [member, cfg] of Object.entries(tool.configs ?? {})) {
        if (!TOOLSET_MEMBERS.includes(member)) return `tools.${i}.configs.${member}: unknown member`;
        if (cfg !== null && typeof (cfg as any).enabled !== "boolean")
          return `tools.${i}.configs.${member}.enabled: must be a boolean`;
      }
    } else if (typeof tool?.type === "string" && tool.type.startsWith("computer_")) {
      const beta = TOOL_BETAS[tool.type];
      if (!beta) return `tools.${i}.type: unknown tool type ${tool.type}`;
      if (!betas.includes(beta)) return `tools.${i}: ${tool.type} requires the anthropic-beta header ${beta}`;
      if (tool.name !== "computer") return `tools.${i}.name: must be computer`;
      if (!Number.isInteger(tool.display_width_px) || tool.display_width_px < 1)
        return `tools.${i}.display_width_px: required`;
      if (!Number.isInteger(tool.display_height_px) || tool.display_height_px < 1)
        return `tools.${i}.display_height_px: required`;
    } else {
      return `tools.${i}.type: unsupported tool`;
    }
  }

  let prevToolUses: string[] = [];
  for (const [i, msg] of body.messages.entries()) {
    const expected = i % 2 === 0 ? "user" : "assistant";
    if (msg?.role !== expected) return `messages.${i}.role: roles must alternate, starting with user`;
    const blocks = blocksOf(msg.content);
    if (blocks.length === 0) return `messages.${i}.content: must not be empty`;
    if (msg.role === "user") {
      const results = blocks.filter((b) => b?.type === "tool_result");
      const ids = results.map((b) => b.tool_use_id);
      const missing = prevToolUses.filter((id) => !ids.includes(id));
      if (missing.length > 0) {
        return `messages.${i}: tool_use ids were found without tool_result blocks immediately after: ${missing.join(", ")}`;
      }
      for (const r of results) {
        if (!prevToolUses.includes(r.tool_use_id))
          return `messages.${i}: unexpected tool_use_id ${r.tool_use_id} in tool_result`;
        if (toolset && r.toolset_name !== "computer")
          return `messages.${i}: a toolset tool_result must echo toolset_name`;
        for (const [j, c] of blocksOf(r.content ?? []).entries()) {
          if (c?.type === "image") {
            const bad = checkImage(c, `messages.${i}.tool_result.content.${j}`);
            if (bad) return bad;
          }
        }
      }
      // tool results come before any other content
      const firstOther = blocks.findIndex((b) => b?.type !== "tool_result");
      if (firstOther !== -1 && blocks.slice(firstOther).some((b) => b?.type === "tool_result")) {
        return `messages.${i}: tool_result blocks must come first`;
      }
      for (const [j, b] of blocks.entries()) {
        if (b?.type === "image") {
          const bad = checkImage(b, `messages.${i}.content.${j}`);
          if (bad) return bad;
        }
      }
      prevToolUses = [];
    } else {
      prevToolUses = [];
      for (const b of blocks) {
        if (b?.type !== "tool_use") continue;
        if (typeof b.id !== "string" || !/^[a-zA-Z0-9_-]+$/.test(b.id))
          return `messages.${i}: tool_use id must match ^[a-zA-Z0-9_-]+$`;
        if (toolset) {
          if (b.toolset_name !== "computer" || !TOOLSET_MEMBERS.includes(b.name)) {
            return `messages.${i}: tool_use ${b.name} is not a member call of the computer toolset`;
          }
        } else if (b.name !== "computer" || typeof b.input?.action !== "string") {
          return `messages.${i}: tool_use must call the computer tool with an action`;
        }
        prevToolUses.push(b.id);
      }
    }
  }
  if (body.messages.length % 2 === 0) return "the last message must be a user message";
  return null;
}

/** The key a request authenticated with: x-api-key, or Authorization: Bearer (what SDK 1.x sends). */
export function anthropicKeyOf(req: RecordedRequest): string | undefined {
  if (req.headers["x-api-key"]) return req.headers["x-api-key"];
  const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "");
  return m?.[1];
}

function renderCall(call: ComputerCall, toolset: boolean, id: string) {
  const { action, ...input } = call;
  return toolset
    ? { type: "tool_use", id, name: action, input, toolset_name: "computer" }
    : { type: "tool_use", id, name: "computer", input: { action, ...input } };
}

export async function startAnthropicStandin(opts: { apiKey: string }): Promise<AnthropicStandin> {
  return startStandin<AnthropicReply>({
    check(req) {
      if (req.method !== "POST" || req.path !== "/v1/messages") {
        return { status: 404, body: errorBody("not_found_error", `Not found: ${req.path}`, "req_standin_404") };
      }
      const key = anthropicKeyOf(req);
      if (!key)
        return {
          status: 401,
          body: errorBody("authentication_error", "x-api-key header is required", "req_standin_401"),
        };
      if (key !== opts.apiKey) {
        return {
          status: 401,
          body: errorBody("authentication_error", "invalid x-api-key", "req_standin_401"),
          headers: { "request-id": "req_standin_401" },
        };
      }
      const bad = validateMessagesRequest(req);
      return bad ? invalid(bad) : null;
    },
    render(step, req, seq) {
      const requestId = `req_standin_${seq}`;
      if (step.kind === "error") {
        return {
          status: step.status,
          body: errorBody(step.type, step.message, requestId),
          headers: { "request-id": requestId, ...(step.headers ?? {}) },
        };
      }
      if (step.kind === "raw")
        return { status: step.status, body: step.body, headers: { "request-id": requestId, ...(step.headers ?? {}) } };
      const toolset = (req.body.tools ?? []).some((t: any) => t?.type === "computer_toolset_20260801");
      const content: unknown[] = [];
      if (step.text) content.push({ type: "text", text: step.text, citations: null });
      (step.calls ?? []).forEach((c, i) => {
        content.push(renderCall(c, toolset, `toolu_standin_${seq}_${i}`));
      });
      content.push(...(step.blocks ?? []));
      const hasTool = content.some((b: any) => b?.type === "tool_use");
      return {
        status: 200,
        headers: { "request-id": requestId },
        body: {
          id: `msg_standin_${seq}`,
          type: "message",
          role: "assistant",
          model: req.body.model,
          content,
          stop_reason: step.stop_reason ?? (hasTool ? "tool_use" : "end_turn"),
          stop_sequence: null,
          stop_details: step.stop_details ?? null,
          container: null,
          context_management: null,
          usage: {
            input_tokens: step.usage?.input_tokens ?? 1000,
            output_tokens: step.usage?.output_tokens ?? 50,
            cache_creation_input_tokens: step.usage?.cache_creation_input_tokens ?? 0,
            cache_read_input_tokens: step.usage?.cache_read_input_tokens ?? 0,
            cache_creation: null,
            server_tool_use: null,
            service_tier: "standard",
          },
        },
      };
    },
    empty() {
      return { status: 500, body: errorBody("api_error", "the stand-in has no scripted reply", "req_standin_empty") };
    },
  });
}

/** Script helpers. */
export const anthropicReplies = {
  calls: (
    calls: ComputerCall[],
    text?: string,
    usage?: Extract<AnthropicReply, { kind: "message" }>["usage"],
  ): AnthropicReply => ({
    kind: "message",
    calls,
    ...(text ? { text } : {}),
    ...(usage ? { usage } : {}),
  }),
  endTurn: (text: string): AnthropicReply => ({ kind: "message", text }),
  refusal: (explanation: string, category = "general_harms"): AnthropicReply => ({
    kind: "message",
    text: "",
    stop_reason: "refusal",
    stop_details: { category, explanation },
  }),
  error: (status: number, type: string, message: string, headers?: Record<string, string>): AnthropicReply => ({
    kind: "error",
    status,
    type,
    message,
    ...(headers ? { headers } : {}),
  }),
  overloaded: (): AnthropicReply => ({ kind: "error", status: 529, type: "overloaded_error", message: "Overloaded" }),
  rateLimited: (retryAfter = "7"): AnthropicReply => ({
    kind: "error",
    status: 429,
    type: "rate_limit_error",
    message: "Number of request tokens has exceeded your per-minute rate limit",
    headers: { "retry-after": retryAfter },
  }),
  serverError: (): AnthropicReply => ({
    kind: "error",
    status: 500,
    type: "api_error",
    message: "Internal server error",
  }),
  delay: (ms: number, then: ScriptStep<AnthropicReply>): ScriptStep<AnthropicReply> => ({ kind: "delay", ms, then }),
  hangup: (): ScriptStep<AnthropicReply> => ({ kind: "hangup" }),
};
