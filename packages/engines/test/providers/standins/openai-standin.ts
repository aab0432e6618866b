// A stand-in for OpenAI's API: POST /v1/responses (computer tool) and POST /v1/chat/completions (what
// OpenAI-compatible servers such as vLLM or Ollama expose). Authorization: Bearer, x-request-id headers,
// error bodies {error: {message, type, param, code}}, response objects with ids, status, output items and usage.
//
// It rejects what the real endpoint would (400 invalid_request_error): unknown fields on the GA `computer`
// tool, a computer_use_preview tool without display size or environment or without truncation "auto",
// a computer_call without its computer_call_output (or the reverse), malformed screenshots and image parts.
//
// Tests script computer calls neutrally ({actions: [...], pending_safety_checks}); the stand-in renders them
// for the tool the request offered: one computer_call with an `actions` batch (GA), or one computer_call per
// action with `action` (preview).
import {
  type HttpReply,
  type RecordedRequest,
  type ScriptStep,
  type StandinCore,
  sniffImage,
  startStandin,
} from "./http-standin.ts";

export interface ScriptedComputerCall {
  actions: Record<string, unknown>[];
  pending_safety_checks?: { id: string; code?: string; message?: string }[];
}

export type OpenAIReply =
  | {
      kind: "response";
      text?: string;
      refusal?: string;
      summary?: string;
      calls?: ScriptedComputerCall[];
      /** raw output items appended at the end */
      items?: unknown[];
      status?: "completed" | "incomplete" | "failed";
      incomplete_reason?: string;
      usage?: { input_tokens: number; output_tokens: number };
    }
  | {
      kind: "chat";
      content?: string | null;
      tool_calls?: { name: string; arguments: string }[];
      finish_reason?: string;
      usage?: { prompt_tokens: number; completion_tokens: number };
    }
  | {
      kind: "error";
      status: number;
      type: string;
      code: string | null;
      message: string;
      headers?: Record<string, string>;
    }
  | { kind: "raw"; status: number; body: string; headers?: Record<string, string> };

export type OpenAIStandin = StandinCore<OpenAIReply>;

const GA_ACTIONS = ["click", "double_click", "drag", "keypress", "move", "screenshot", "scroll", "type", "wait"];
const ENVIRONMENTS = ["windows", "mac", "linux", "ubuntu", "browser"];
const DETAILS = ["low", "high", "auto", "original"];

function errorBody(message: string, type: string, code: string | null, param: string | null = null) {
  return { error: { message, type, param, code } };
}

function invalid(message: string, param: string | null = null): HttpReply {
  return {
    status: 400,
    body: errorBody(message, "invalid_request_error", null, param),
    headers: { "x-request-id": "req_standin_invalid" },
  };
}

function checkDataUri(uri: unknown, where: string): string | null {
  if (typeof uri !== "string") return `${where}: image_url must be a string`;
  const m = /^data:(image\/(?:png|jpeg));base64,(.+)$/.exec(uri);
  if (!m) return `${where}: image_url must be a base64 data URL here`;
  const sniffed = sniffImage(m[2] as string);
  if (sniffed !== m[1]) return `${where}: the data URL does not hold a valid ${m[1]}`;
  return null;
}

function contentParts(content: unknown): any[] {
  return Array.isArray(content) ? content : [];
}

/** What a real /v1/responses rejects; null when acceptable. */
export function validateResponsesRequest(body: any): string | null {
  if (!body || typeof body !== "object") return "We could not parse the JSON body of your request.";
  if (typeof body.model !== "string" || !body.model) return "Missing required parameter: 'model'.";
  const tools: any[] = Array.isArray(body.tools) ? body.tools : [];
  let kind: "computer" | "computer_use_preview" | null = null;
  for (const [i, t] of tools.entries()) {
    if (t?.type === "computer") {
      kind = "computer";
      const extra = Object.keys(t).filter((k) => k !== "type");
      if (extra.length > 0) return `Unknown parameter: 'tools[${i}].${extra[0]}'.`;
    } else if (t?.type === "computer_use_preview") {
      kind = "computer_use_preview";
      if (!Number.isInteger(t.display_width) || t.display_width < 1)
        return `Missing required parameter: 'tools[${i}].display_width'.`;
      if (!Number.isInteger(t.display_height) || t.display_height < 1)
        return `Missing required parameter: 'tools[${i}].display_height'.`;
      if (!ENVIRONMENTS.includes(t.environment)) return `Invalid value: 'tools[${i}].environment'.`;
      if (body.truncation !== "auto") return "The computer_use_preview tool requires truncation to be 'auto'.";
    } else {
      return `Unsupported tool type: 'tools[${i}].type'.`;
    }
  }
  const input = typeof body.input === "string" ? [] : body.input;
  if (!Array.isArray(input)) return "Invalid type for 'input'.";
  const calls = new Map<string, number>();
  const answered = new Set<string>();
  for (const [i, item] of input.entries()) {
    const type = item?.type ?? (item?.role ? "message" : undefined);
    if (type === "message") {
      if (!["user", "assistant", "system", "developer"].includes(item.role))
        return `Invalid value: 'input[${i}].role'.`;
      for (const [j, part] of contentParts(item.content).entries()) {
        if (part?.type === "input_image") {
          const bad = checkDataUri(part.image_url, `input[${i}].content[${j}]`);
          if (bad) return bad;
          if (part.detail !== undefined && !DETAILS.includes(part.detail))
            return `Invalid value: 'input[${i}].content[${j}].detail'.`;
        } else if (part?.type !== "input_text" && part?.type !== "output_text") {
          return `Invalid value: 'input[${i}].content[${j}].type'.`;
        }
      }
    } else if (type === "computer_call") {
      if (!kind) return `input[${i}]: a computer_call needs a computer tool in 'tools'.`;
      if (typeof item.id !== "string" || !item.id.startsWith("cu_"))
        return `Invalid 'input[${i}].id': expected an ID that begins with 'cu'.`;
      if (typeof item.call_id !== "string" || !item.call_id)
        return `Missing required parameter: 'input[${i}].call_id'.`;
      if (!Array.isArray(item.pending_safety_checks))
        return `Missing required parameter: 'input[${i}].pending_safety_checks'.`;
      const acts: any[] = kind === "computer" ? item.actions : item.action ? [item.action] : [];
      if (!Array.isArray(acts) || acts.length === 0) {
        return `Missing required parameter: 'input[${i}].${kind === "computer" ? "actions" : "action"}'.`;
      }
      for (const a of acts)
        if (!GA_ACTIONS.includes(a?.type)) return `Invalid value: 'input[${i}]' action type ${a?.type}.`;
      calls.set(item.call_id, i);
    } else if (type === "computer_call_output") {
      if (!calls.has(item.call_id)) return `No tool call found for computer call output with call_id ${item.call_id}.`;
      if (item.output?.type !== "computer_screenshot") return `Invalid value: 'input[${i}].output.type'.`;
      const bad = checkDataUri(item.output.image_url, `input[${i}].output`);
      if (bad) return bad;
      answered.add(item.call_id);
    } else {
      return `Invalid value: 'input[${i}].type'.`;
    }
  }
  for (const id of calls.keys()) if (!answered.has(id)) return `No computer call output found for call_id ${id}.`;
  return null;
}

/** What a real /v1/chat/completions rejects; null when acceptable. */
export function validateChatRequest(body: any): string | null {
  if (!body || typeof body !== "object") return "We could not parse the JSON body of your request.";
  if (typeof body.model !== "string" || !body.model) return "Missing required parameter: 'model'.";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "Missing required parameter: 'messages'.";
  for (const [i, m] of body.messages.entries()) {
    if (!["system", "developer", "user", "assistant", "tool"].includes(m?.role))
      return `Invalid value: 'messages[${i}].role'.`;
    for (const [j, part] of contentParts(m.content).entries()) {
      if (part?.type === "image_url") {
        const bad = checkDataUri(part.image_url?.url, `messages[${i}].content[${j}]`);
        if (bad) return bad;
      } else if (part?.type !== "text") return `Invalid value: 'messages[${i}].content[${j}].type'.`;
    }
  }
  const rf = body.response_format;
  if (rf !== undefined) {
    if (rf.type === "json_schema") {
      if (typeof rf.json_schema?.name !== "string" || typeof rf.json_schema?.schema !== "object") {
        return "Missing required parameter: 'response_format.json_schema'.";
      }
    } else if (rf.type !== "json_object" && rf.type !== "text") return "Invalid value: 'response_format.type'.";
  }
  for (const [i, t] of (body.tools ?? []).entries()) {
    if (t?.type !== "function" || typeof t.function?.name !== "string") return `Invalid value: 'tools[${i}]'.`;
  }
  return null;
}

export function bearerOf(req: RecordedRequest): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
}

function masked(key: string): string {
  return key.length > 12 ? `${key.slice(0, 8)}${"*".repeat(20)}${key.slice(-4)}` : "****";
}

function renderResponse(step: Extract<OpenAIReply, { kind: "response" }>, req: RecordedRequest, seq: number) {
  const preview = (req.body.tools ?? []).some((t: any) => t?.type === "computer_use_preview");
  const output: unknown[] = [];
  if (step.summary)
    output.push({
      type: "reasoning",
      id: `rs_standin_${seq}`,
      summary: [{ type: "summary_text", text: step.summary }],
    });
  if (step.text || step.refusal) {
    output.push({
      type: "message",
      id: `msg_standin_${seq}`,
      role: "assistant",
      status: "completed",
      content: [
        ...(step.text ? [{ type: "output_text", text: step.text, annotations: [] }] : []),
        ...(step.refusal ? [{ type: "refusal", refusal: step.refusal }] : []),
      ],
    });
  }
  (step.calls ?? []).forEach((call, i) => {
    if (preview) {
      call.actions.forEach((action, j) => {
        output.push({
          type: "computer_call",
          id: `cu_standin_${seq}_${i}_${j}`,
          call_id: `call_standin_${seq}_${i}_${j}`,
          action,
          pending_safety_checks: j === 0 ? (call.pending_safety_checks ?? []) : [],
          status: "completed",
        });
      });
    } else {
      output.push({
        type: "computer_call",
        id: `cu_standin_${seq}_${i}`,
        call_id: `call_standin_${seq}_${i}`,
        actions: call.actions,
        pending_safety_checks: call.pending_safety_checks ?? [],
        status: "completed",
      });
    }
  });
  output.push(...(step.items ?? []));
  const usage = step.usage ?? { input_tokens: 2000, output_tokens: 60 };
  return {
    id: `resp_standin_${seq}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status: step.status ?? "completed",
    error: step.status === "failed" ? { code: "server_error", message: "The model failed to respond." } : null,
    incomplete_details: step.status === "incomplete" ? { reason: step.incomplete_reason ?? "max_output_tokens" } : null,
    instructions: req.body.instructions ?? null,
    model: req.body.model,
    output,
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: req.body.tools ?? [],
    usage: {
      input_tokens: usage.input_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.output_tokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input_tokens + usage.output_tokens,
    },
  };
}

function renderChat(step: Extract<OpenAIReply, { kind: "chat" }>, req: RecordedRequest, seq: number) {
  const usage = step.usage ?? { prompt_tokens: 900, completion_tokens: 40 };
  const toolCalls = (step.tool_calls ?? []).map((t, i) => ({
    id: `call_standin_${seq}_${i}`,
    type: "function",
    function: { name: t.name, arguments: t.arguments },
  }));
  return {
    id: `chatcmpl-standin-${seq}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: req.body.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: step.content === undefined ? null : step.content,
          refusal: null,
          ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
        },
        finish_reason: step.finish_reason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
        logprobs: null,
      },
    ],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

export async function startOpenAIStandin(opts: { apiKey: string | null }): Promise<OpenAIStandin> {
  return startStandin<OpenAIReply>({
    check(req) {
      const isResponses = req.path === "/v1/responses";
      const isChat = req.path === "/v1/chat/completions";
      if (req.method !== "POST" || (!isResponses && !isChat)) {
        return {
          status: 404,
          body: errorBody(`Invalid URL (${req.method} ${req.path})`, "invalid_request_error", null),
        };
      }
      if (opts.apiKey !== null) {
        const key = bearerOf(req);
        if (key !== opts.apiKey) {
          return {
            status: 401,
            headers: { "x-request-id": "req_standin_401" },
            body: errorBody(
              key
                ? `Incorrect API key provided: ${masked(key)}. You can find your API key at https://platform.openai.com/account/api-keys.`
                : "You didn't provide an API key.",
              "invalid_request_error",
              "invalid_api_key",
            ),
          };
        }
      }
      const bad = isResponses ? validateResponsesRequest(req.body) : validateChatRequest(req.body);
      return bad ? invalid(bad) : null;
    },
    render(step, req, seq) {
      const requestId = `req_standin_${seq}`;
      if (step.kind === "error") {
        return {
          status: step.status,
          body: errorBody(step.message, step.type, step.code),
          headers: { "x-request-id": requestId, ...(step.headers ?? {}) },
        };
      }
      if (step.kind === "raw")
        return {
          status: step.status,
          body: step.body,
          headers: { "x-request-id": requestId, ...(step.headers ?? {}) },
        };
      if (step.kind === "chat") {
        if (req.path !== "/v1/chat/completions")
          return invalid("the stand-in was scripted with a chat reply for /v1/responses");
        return { status: 200, body: renderChat(step, req, seq), headers: { "x-request-id": requestId } };
      }
      if (req.path !== "/v1/responses") return invalid("the stand-in was scripted with a responses reply for chat");
      return { status: 200, body: renderResponse(step, req, seq), headers: { "x-request-id": requestId } };
    },
    empty() {
      return { status: 500, body: errorBody("the stand-in has no scripted reply", "server_error", null) };
    },
  });
}

/** Script helpers. */
export const openaiReplies = {
  calls: (
    actions: Record<string, unknown>[],
    extra: Partial<Extract<OpenAIReply, { kind: "response" }>> = {},
  ): OpenAIReply => ({
    kind: "response",
    calls: [{ actions }],
    ...extra,
  }),
  safety: (
    actions: Record<string, unknown>[],
    checks: { id: string; code?: string; message?: string }[],
  ): OpenAIReply => ({
    kind: "response",
    calls: [{ actions, pending_safety_checks: checks }],
  }),
  text: (text: string): OpenAIReply => ({ kind: "response", text }),
  refusal: (refusal: string): OpenAIReply => ({ kind: "response", refusal }),
  chat: (content: string | null, extra: Partial<Extract<OpenAIReply, { kind: "chat" }>> = {}): OpenAIReply => ({
    kind: "chat",
    content,
    ...extra,
  }),
  error: (
    status: number,
    type: string,
    code: string | null,
    message: string,
    headers?: Record<string, string>,
  ): OpenAIReply => ({
    kind: "error",
    status,
    type,
    code,
    message,
    ...(headers ? { headers } : {}),
  }),
  rateLimited: (retryAfter = "3"): OpenAIReply => ({
    kind: "error",
    status: 429,
    type: "requests",
    code: "rate_limit_exceeded",
    message: "Rate limit reached for requests",
    headers: { "retry-after": retryAfter },
  }),
  quota: (): OpenAIReply => ({
    kind: "error",
    status: 429,
    type: "insufficient_quota",
    code: "insufficient_quota",
    message: "You exceeded your current quota, please check your plan and billing details.",
  }),
  serverError: (status = 500): OpenAIReply => ({
    kind: "error",
    status,
    type: "server_error",
    code: null,
    message: "The server had an error while processing your request.",
  }),
  delay: (ms: number, then: ScriptStep<OpenAIReply>): ScriptStep<OpenAIReply> => ({ kind: "delay", ms, then }),
  hangup: (): ScriptStep<OpenAIReply> => ({ kind: "hangup" }),
};
