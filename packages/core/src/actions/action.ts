// Placeholder type until the action table module lands (owned by the predict-logic work).
export interface Action {
  action_type: "click" | "type_text" | "key_press" | "key_combo" | "scroll" | "drag" | "move" | "wait" | "done" | "fail";
  params: Record<string, unknown>;
}
