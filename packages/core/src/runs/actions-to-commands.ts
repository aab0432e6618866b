// SPEC Actions -> the machine command allowlist (DECISIONS "Machines": command parameters).
import type { Action } from "@cua/base/actions/action";

export interface MachineCommand {
  command: string;
  parameters: Record<string, unknown>;
}

const MACHINE_MAX_CLICKS = 3;

export function toMachineCommands(a: Action): MachineCommand[] {
  switch (a.action_type) {
    case "click": {
      const p = a.params;
      const out: MachineCommand[] = [];
      let left = p.clicks ?? 1;
      while (left > 0) {
        const n = Math.min(MACHINE_MAX_CLICKS, left);
        left -= n;
        out.push({
          command: "click",
          parameters: {
            x: p.x,
            y: p.y,
            button: p.button ?? "left",
            clicks: n,
            ...(p.hold_keys?.length ? { hold_keys: p.hold_keys } : {}),
          },
        });
      }
      return out;
    }
    case "move":
      return [{ command: "move", parameters: { x: a.params.x, y: a.params.y } }];
    case "type_text":
      return [{ command: "type", parameters: { text: a.params.text } }];
    case "key_press":
      return [{ command: "key_press", parameters: { keys: a.params.keys } }];
    case "key_combo":
      return [{ command: "key_combo", parameters: { keys: a.params.keys } }];
    case "scroll": {
      const p = a.params;
      return [
        {
          command: "scroll",
          parameters: {
            clicks: p.clicks,
            direction: p.direction ?? "vertical",
            ...(p.x !== undefined && p.y !== undefined ? { x: p.x, y: p.y } : {}),
          },
        },
      ];
    }
    case "drag": {
      const p = a.params;
      return [
        {
          command: "drag",
          parameters: {
            x1: p.x1,
            y1: p.y1,
            x2: p.x2,
            y2: p.y2,
            button: p.button ?? "left",
            ...(p.hold_keys?.length ? { hold_keys: p.hold_keys } : {}),
          },
        },
      ];
    }
    case "wait":
      return [{ command: "wait", parameters: { seconds: a.params.seconds } }];
    default:
      return []; // done, fail: nothing to execute
  }
}
