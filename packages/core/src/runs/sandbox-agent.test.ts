import { describe, expect, it } from "vitest";
import { parseRunDirectives, sandboxInstruction, stripDirectives, taskCommands } from "./sandbox-agent.ts";

describe("parseRunDirectives (DECISIONS Engines: #steps=N, #fail, #human, #slow=MS, #timeout)", () => {
  it.each([
    ["plain task", { steps: 3, fail: false, human: false, slowMs: 0, timeout: false, stall: false, error: false }],
    ["#steps=5", { steps: 5 }],
    ["#steps=0", { steps: 1 }],
    ["#steps=5000", { steps: 1000 }],
    ["#steps=abc", { steps: 3 }],
    ["do it #fail #human", { fail: true, human: true }],
    ["#slow=250", { slowMs: 250 }],
    ["#slow=999999", { slowMs: 30_000 }],
    ["#TIMEOUT", { timeout: true }],
    ["#stall #error", { stall: true, error: true }],
    ["email me at a#b.c", { steps: 3, fail: false }],
  ])("%s", (task, want) => {
    expect(parseRunDirectives(task)).toMatchObject(want);
  });
});

describe("the sandbox run's instructions", () => {
  it("splits the task into commands, outside quotes", () => {
    expect(taskCommands("type 'a; then b' then press enter; scroll down #steps=4")).toEqual([
      "type 'a; then b'",
      "press enter",
      "scroll down",
    ]);
    expect(stripDirectives("open it #steps=2  #fail now")).toBe("open it now");
  });

  it("step i sends command i, then a per-step filler, and the last step done or fail", () => {
    const task = "type 'x' then press enter #steps=4";
    const d = parseRunDirectives(task);
    expect([1, 2, 3, 4].map((i) => sandboxInstruction(task, d, i))).toEqual([
      "type 'x'",
      "press enter",
      "continue step 3",
      "done",
    ]);
    const f = parseRunDirectives("go #fail #steps=2 #slow=50");
    expect(sandboxInstruction("go #fail #steps=2 #slow=50", f, 2)).toBe("fail #slow=50");
    const st = parseRunDirectives("#stall #steps=9");
    expect(sandboxInstruction("#stall", st, 1)).toBe(sandboxInstruction("#stall", st, 5));
  });
});
