// Pointer bookkeeping shared by the provider mappings: actions without a coordinate act at the pointer.
import type { Action } from "@cua/base/actions/action";

export interface Point {
  x: number;
  y: number;
}

/** Pointer position after an action, for the next action's defaults. */
export function pointerAfter(action: Action, before?: Point): Point | undefined {
  switch (action.action_type) {
    case "click":
    case "move":
      return { x: action.params.x, y: action.params.y };
    case "drag":
      return { x: action.params.x2, y: action.params.y2 };
    case "scroll":
      return action.params.x !== undefined && action.params.y !== undefined
        ? { x: action.params.x, y: action.params.y }
        : before;
    default:
      return before;
  }
}
