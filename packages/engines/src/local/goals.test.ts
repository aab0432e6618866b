// Goal phrasings as users write them (issue 15) -> the interpreter's steps. Pure tables.
import { describe, expect, it } from "vitest";
import { parseGoal, parsePairList, shellCommand } from "./goals.ts";
import { parseInstruction, type Step, splitSteps } from "./interpreter.ts";

/** The steps in a compact form: "type Ada -> name", "click Sign up|Register|...", ... */
function brief(steps: Step[]): string[] {
  return steps.map((s) => {
    switch (s.kind) {
      case "type":
        return `${s.replace ? "set" : "type"} ${s.text} -> ${s.target ?? "(focus)"}`;
      case "click":
        return `click ${[s.target, ...(s.alts ?? [])].map((t) => t.replace(/ button$/, "")).join("|")}${s.submit ? " (submit)" : ""}`;
      case "choose":
        return `choose ${s.option} as ${s.group}`;
      case "scroll":
        return `scroll ${s.direction} ${s.amount}`;
      case "scroll-until":
        return `scroll ${s.direction} until ${s.text}`;
      case "wait-finish":
        return `wait for ${s.subject} to finish`;
      case "open-app":
        return `open ${s.app}`;
      case "keys":
        return `press ${s.keys.join("+")}`;
      default:
        return s.kind;
    }
  });
}

describe("goal phrasings into steps (issue 15)", () => {
  it.each<[string, string[]]>([
    [
      "Sign up with the name Ada Lovelace and email ada@example.com",
      [
        "type Ada Lovelace -> name",
        "type ada@example.com -> email",
        "click Sign up|Register|Create account|Submit (submit)",
      ],
    ],
    [
      "Log in with username ada and password hunter2",
      ["type ada -> username", "type hunter2 -> password", "click Log in|Sign in|Login|Submit (submit)"],
    ],
    [
      "Ada in Name, ada@example.com in Email and Hello there in Message",
      ["type Ada -> Name", "type ada@example.com -> Email", "type Hello there -> Message"],
    ],
    ["A in Name, B in Email and C in Message", ["type A -> Name", "type B -> Email", "type C -> Message"]],
    [
      "Fill the form with name Bob, email bob@x.org and message Salt and pepper, and submit",
      [
        "type Bob -> name",
        "type bob@x.org -> email",
        "type Salt and pepper -> message",
        "click Submit|Send|Save|Register|Sign up|Continue|Apply|Update|OK (submit)",
      ],
    ],
    ["Name: Grace Hopper, Email: grace@navy.mil", ["type Grace Hopper -> Name", "type grace@navy.mil -> Email"]],
    ["type 'Ada, Countess' in Name and 'a@b.co' in Email", ["type Ada, Countess -> Name", "type a@b.co -> Email"]],
    ["Change the quantity to 3", ["set 3 -> quantity"]],
    ["set the City field to Paris", ["set Paris -> City"]],
    ["Choose Team as the plan", ["choose Team as plan"]],
    ["pick CSV as the format", ["choose CSV as format"]],
    ["select the Pro plan", ["choose Pro as plan"]],
    ["Scroll down to the bottom of the page", ["scroll down 25"]],
    ["scroll all the way up to the top", ["scroll up 25"]],
    ["scroll down until Pricing is visible", ["scroll down until Pricing"]],
    ["Scroll until you see 'Contact us'", ["scroll down until Contact us"]],
    ["Wait for the report to finish generating", ["wait for report to finish"]],
    ["wait until the upload completes", ["wait for upload to finish"]],
    [
      "Use the terminal to create notes.txt containing hello",
      ["open terminal", "type printf '%s\\n' 'hello' > 'notes.txt' -> (focus)", "press enter"],
    ],
    ["Open a terminal", ["open terminal"]],
    ["Search the docs for webhooks", ["type webhooks -> Search", "press enter"]],
    ["search for 'red shoes'", ["type red shoes -> Search", "press enter"]],
    ["open the file manager", ["open file manager"]],
  ])("%s", (text, want) => {
    expect(brief(parseGoal(text) ?? [])).toEqual(want);
  });

  it.each([
    "click Save",
    "type 'abc' into Search",
    "go to https://example.com",
    "select Canada from the Country dropdown",
    "scroll down 3",
    "wait until 'Loading' disappears",
    "press ctrl+s",
    "Submit",
  ])("leaves script steps to the interpreter: %s", (text) => {
    expect(parseGoal(text)).toBeNull();
  });

  it("never splits a value at an 'and' that does not start a pair", () => {
    expect(parsePairList("message Salt and pepper and email a@b.co", { fieldFirst: true })).toEqual([
      { field: "message", labels: ["message", "comment", "comments"], value: "Salt and pepper" },
      { field: "email", labels: ["email", "e-mail"], value: "a@b.co" },
    ]);
  });

  it("marks password fields secret (their text cannot be read back)", () => {
    const steps = parseGoal("Log in with email a@b.co and password s3cret") ?? [];
    expect(steps.map((s) => (s.kind === "type" ? Boolean(s.secret) : null))).toEqual([false, true, null]);
  });

  it.each<[string, string | null]>([
    ["create notes.txt containing hello", "printf '%s\\n' 'hello' > 'notes.txt'"],
    ["create a file called a.txt with the text it's here", "printf '%s\\n' 'it'\\''s here' > 'a.txt'"],
    ["make a directory called reports", "mkdir -p 'reports'"],
    ["run ls -la", "ls -la"],
    ["dance", null],
  ])("terminal task %s", (task, cmd) => {
    expect(shellCommand(task)).toBe(cmd);
  });
});

describe("whole instructions with goals and qualifiers", () => {
  it.each<[string, string[]]>([
    // a leading place qualifies the step after it
    ["In the invoices table, open the row for ACME", ["open the row for ACME In the invoices table"]],
    [
      "Sign up with the name Ada and email a@b.co, then wait 2 seconds",
      ["Sign up with the name Ada and email a@b.co", "wait 2 seconds"],
    ],
  ])("splits %s", (text, want) => {
    expect(splitSteps(text)).toEqual(want);
  });

  it("reads a goal list followed by a script step", () => {
    expect(brief(parseInstruction("A in Name and B in Email, then click Save"))).toEqual([
      "type A -> Name",
      "type B -> Email",
      "click Save",
    ]);
  });
});
