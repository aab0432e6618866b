// The managed-engine environment contract and the provider engine factory.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProviderEngine, ManagedEngineEnv, managedEngineConfig } from "../../src/providers/provider-engine.ts";
import { predictInput } from "./fixtures.ts";
import { type AnthropicStandin, anthropicReplies, startAnthropicStandin } from "./standins/anthropic-standin.ts";
import { type OpenAIStandin, openaiReplies, startOpenAIStandin } from "./standins/openai-standin.ts";

describe("ManagedEngineEnv", () => {
  it("defaults to the local engine (no upstream)", () => {
    const env = ManagedEngineEnv.parse({});
    expect(env.MANAGED_ENGINE).toBe("local");
    expect(managedEngineConfig(env)).toBeNull();
    expect(managedEngineConfig(ManagedEngineEnv.parse({ MANAGED_ENGINE: "" }))).toBeNull();
  });

  it.each([
    [{ MANAGED_ENGINE: "anthropic" }, "MANAGED_ENGINE_API_KEY"],
    [{ MANAGED_ENGINE: "openai", MANAGED_ENGINE_API_KEY: "" }, "MANAGED_ENGINE_API_KEY"],
    [{ MANAGED_ENGINE: "openai-compatible", MANAGED_ENGINE_MODEL: "m" }, "MANAGED_ENGINE_BASE_URL"],
    [{ MANAGED_ENGINE: "openai-compatible", MANAGED_ENGINE_BASE_URL: "http://vllm:8000/v1" }, "MANAGED_ENGINE_MODEL"],
    [{ MANAGED_ENGINE: "gemini" }, "MANAGED_ENGINE"],
    [
      { MANAGED_ENGINE: "openai", MANAGED_ENGINE_API_KEY: "k", MANAGED_ENGINE_BASE_URL: "not a url" },
      "MANAGED_ENGINE_BASE_URL",
    ],
  ])("rejects %j (%s)", (raw, path) => {
    const r = ManagedEngineEnv.safeParse(raw);
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join("."))).toContain(path);
  });

  it("builds a managed config", () => {
    const env = ManagedEngineEnv.parse({
      MANAGED_ENGINE: "openai-compatible",
      MANAGED_ENGINE_BASE_URL: "http://ollama:11434/v1",
      MANAGED_ENGINE_MODEL: "qwen2.5vl:7b",
    });
    expect(managedEngineConfig(env)).toEqual({
      provider: "openai-compatible",
      keySource: "managed",
      baseURL: "http://ollama:11434/v1",
      model: "qwen2.5vl:7b",
    });
  });
});

describe("createProviderEngine", () => {
  let anthropic: AnthropicStandin;
  let openai: OpenAIStandin;
  beforeAll(async () => {
    anthropic = await startAnthropicStandin({ apiKey: "sk-ant-factory" });
    openai = await startOpenAIStandin({ apiKey: "sk-openai-factory" });
  });
  afterAll(async () => {
    await anthropic.close();
    await openai.close();
  });

  it("builds each provider's engine with the given key, model and URL", async () => {
    anthropic.enqueue(anthropicReplies.endTurn("done"));
    openai.enqueue(
      openaiReplies.text("done"),
      openaiReplies.chat(JSON.stringify({ reasoning: "", status: "done", actions: [] })),
    );
    const a = createProviderEngine({
      provider: "anthropic",
      apiKey: "sk-ant-factory",
      baseURL: anthropic.url,
      keySource: "byok",
      maxRetries: 0,
    });
    const o = createProviderEngine({
      provider: "openai",
      apiKey: "sk-openai-factory",
      baseURL: `${openai.url}/v1`,
      keySource: "byok",
      maxRetries: 0,
      model: "gpt-5.5",
    });
    const c = createProviderEngine({
      provider: "openai-compatible",
      apiKey: "sk-openai-factory",
      baseURL: `${openai.url}/v1`,
      model: "m",
      keySource: "managed",
      maxRetries: 0,
    });
    expect([a.id, o.id, c.id]).toEqual(["anthropic", "openai", "openai-compatible"]);
    for (const e of [a, o, c]) expect((await e.predict(predictInput())).status).toBe("done");
    expect(anthropic.requests[0]!.body.model).toBe("claude-sonnet-5");
    expect(openai.requests[0]!.body.model).toBe("gpt-5.5");
    expect(openai.requests[1]!.path).toBe("/v1/chat/completions");
  });

  it("openai-compatible without a URL or model is a configuration error", () => {
    expect(() => createProviderEngine({ provider: "openai-compatible", keySource: "managed" })).toThrow(
      /base URL and a model/,
    );
  });
});
