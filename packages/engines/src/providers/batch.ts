// Turns the steps a provider proposed (already translated to our action shapes) into the batch an engine
// returns. Rules, in order, for each proposed step:
// - an observation (screenshot, zoom, cursor position) ends the batch: the model wants to look again;
// - an unsupported or malformed step ends the batch;
// - an action whose type the `tools` filter excludes ends the batch;
// - an action the Action schema rejects (actions/action.ts) ends the batch;
// - a coordinate off the image by more than COORD_TOLERANCE pixels ends the batch; within it, it is clamped;
// - the batch holds at most maxActions actions.
// Later steps are dropped because they were planned on top of the step that was refused. When the very first
// step is refused, nothing is usable and the engine reports PREDICTION_FAILED with the reason.
import { type Action, ActionSchema, outOfScreen, validateEngineActions } from "@cua/base/actions/action";

/** An action as a mapping function builds it, before validation. */
export interface ProposedAction {
  action_type: string;
  params: Record<string, unknown>;
}

export type MappedStep =
  | { kind: "actions"; actions: ProposedAction[]; source: string }
  | { kind: "observe"; source: string }
  | { kind: "unsupported"; source: string; reason: string };

export interface BatchLimits {
  width: number;
  height: number;
  maxActions: number;
  /** allowed action types; undefined = all. done and fail are always allowed. */
  tools?: string[];
}

export interface Batch {
  actions: Action[];
  /** why the batch ended before the model's last step, if it did */
  stoppedBy?: { kind: "observe" | "refused" | "max_actions"; source: string; reason: string };
}

export const COORD_TOLERANCE = 2;

const COORD_KEYS: Record<string, [string, string][]> = {
  click: [["x", "y"]],
  move: [["x", "y"]],
  drag: [
    ["x1", "y1"],
    ["x2", "y2"],
  ],
  scroll: [["x", "y"]],
};

/** Rounds coordinates and pulls ones just off the edge back in; a string says why it is unusable. */
export function clampCoordinates(action: ProposedAction, width: number, height: number): ProposedAction | string {
  const pairs = COORD_KEYS[action.action_type];
  if (!pairs) return action;
  const params = { ...action.params };
  for (const [kx, ky] of pairs) {
    const x = params[kx];
    const y = params[ky];
    if (x === undefined && y === undefined && action.action_type === "scroll") continue;
    if (typeof x !== "number" || typeof y !== "number" || !Number.isFinite(x) || !Number.isFinite(y)) {
      return `${action.action_type} has no valid ${kx}/${ky}`;
    }
    const rx = Math.round(x);
    const ry = Math.round(y);
    if (
      rx < -COORD_TOLERANCE ||
      ry < -COORD_TOLERANCE ||
      rx > width - 1 + COORD_TOLERANCE ||
      ry > height - 1 + COORD_TOLERANCE
    ) {
      return `${action.action_type} at (${rx}, ${ry}) is outside the ${width}x${height} screenshot`;
    }
    params[kx] = Math.min(width - 1, Math.max(0, rx));
    params[ky] = Math.min(height - 1, Math.max(0, ry));
  }
  return { action_type: action.action_type, params };
}

/** Schema-checks one proposed action; a string says why it is invalid. */
export function checkAction(proposed: ProposedAction, width: number, height: number): Action | string {
  const clamped = clampCoordinates(proposed, width, height);
  if (typeof clamped === "string") return clamped;
  const parsed = ActionSchema.safeParse(clamped);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join(".") : "action";
    return `invalid ${proposed.action_type}: ${where}: ${issue?.message ?? "rejected"}`;
  }
  const off = outOfScreen(parsed.data, { width, height });
  if (off.length > 0) return off[0]?.message ?? "outside the screenshot";
  return parsed.data;
}

export function finalizeBatch(steps: MappedStep[], limits: BatchLimits): Batch {
  const actions: Action[] = [];
  const allowed = limits.tools ? new Set([...limits.tools, "done", "fail"]) : null;
  // Every action passed the schema already; validateEngineActions is the shared gate every engine answer
  // goes through before it reaches a caller.
  const result = (stoppedBy?: Batch["stoppedBy"]): Batch => {
    const checked = validateEngineActions(actions, { width: limits.width, height: limits.height });
    return stoppedBy ? { actions: checked, stoppedBy } : { actions: checked };
  };
  for (const step of steps) {
    if (step.kind === "observe") {
      return result({ kind: "observe", source: step.source, reason: "the model asked for a new screenshot" });
    }
    if (step.kind === "unsupported") return result({ kind: "refused", source: step.source, reason: step.reason });
    for (const proposed of step.actions) {
      if (allowed && !allowed.has(proposed.action_type)) {
        const list = limits.tools?.join(", ") || "none";
        return result({
          kind: "refused",
          source: step.source,
          reason: `${proposed.action_type} is not among the allowed tools (${list})`,
        });
      }
      const checked = checkAction(proposed, limits.width, limits.height);
      if (typeof checked === "string") return result({ kind: "refused", source: step.source, reason: checked });
      if (actions.length >= limits.maxActions) {
        return result({ kind: "max_actions", source: step.source, reason: `max_actions is ${limits.maxActions}` });
      }
      actions.push(checked);
    }
  }
  return result();
}

/** One line for the reasoning text when a batch was cut short, so the caller can see why. */
export function stopNote(batch: Batch): string | undefined {
  const s = batch.stoppedBy;
  if (!s || s.kind === "observe") return undefined;
  if (s.kind === "max_actions") return `[engine] further proposed actions were dropped: ${s.reason}.`;
  return `[engine] stopped at the model's "${s.source}" step: ${s.reason}.`;
}
