// Which computer-use tool version, beta flag and native image size go with which Claude model.
// Source: the SDK typings (@anthropic-ai/sdk 1.12.0) and Anthropic's computer-use and vision documentation.
//
//   computer_toolset_20260801  no beta flag      Claude 5 family (opus-5, opus-5-5, sonnet-5, sonnet-5-5,
//                                                haiku-5-5, fable-5*, mythos-5*) and any model not listed below;
//                                                on Opus 5.5 the older single tools are gone from the Claude API.
//   computer_20251124          computer-use-2025-11-24   Opus 4.5 - 4.8, Sonnet 4.6, Mythos preview
//   computer_20250124          computer-use-2025-01-24   Sonnet 4.5, Haiku 4.5, Opus 4 / 4.1, Sonnet 4, Sonnet 3.7
//
// Native image size: 2576 px long edge / ~3.75 MP from Opus 4.7 on (and the Claude 5 family); 1568 px /
// ~1.15 MP before. Larger screenshots are downscaled by the engine itself (see image-fit.ts).
import type { ImageLimits } from "./image-fit.ts";

export type AnthropicToolVersion = "computer_toolset_20260801" | "computer_20251124" | "computer_20250124";

/** Default model of the Anthropic engine: Claude Sonnet 5, served with the computer toolset. */
export const ANTHROPIC_DEFAULT_MODEL = "claude-sonnet-5";

export const ANTHROPIC_TOOL_BETA: Record<AnthropicToolVersion, string | null> = {
  computer_toolset_20260801: null,
  computer_20251124: "computer-use-2025-11-24",
  computer_20250124: "computer-use-2025-01-24",
};

const TOOL_20250124 = [
  /^claude-3-7-sonnet/,
  /^claude-sonnet-4-5/,
  /^claude-haiku-4-5/,
  /^claude-sonnet-4(?:-0|-2025|$)/,
  /^claude-opus-4(?:-0|-1|-2025|$)/,
];
const TOOL_20251124 = [/^claude-opus-4-[5-9]/, /^claude-sonnet-4-6/, /^claude-mythos-preview/];

export function anthropicToolVersion(model: string): AnthropicToolVersion {
  const m = model.toLowerCase();
  if (TOOL_20250124.some((re) => re.test(m))) return "computer_20250124";
  if (TOOL_20251124.some((re) => re.test(m))) return "computer_20251124";
  return "computer_toolset_20260801";
}

const LOW_RES: ImageLimits = { maxLongEdge: 1568, maxPixels: 1_150_000 };
const HIGH_RES: ImageLimits = { maxLongEdge: 2576, maxPixels: 3_750_000 };

export function anthropicImageLimits(model: string): ImageLimits {
  const m = model.toLowerCase();
  if (TOOL_20250124.some((re) => re.test(m))) return LOW_RES;
  if (/^claude-opus-4-[56]/.test(m) || /^claude-sonnet-4-6/.test(m) || /^claude-mythos-preview/.test(m)) return LOW_RES;
  return HIGH_RES;
}
