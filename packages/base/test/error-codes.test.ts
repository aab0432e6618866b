// Issue 11 "one error table": every code the service can answer is in the base package's table. HTTP codes (the
// envelope's error.code) are ERROR_CODES; codes inside a success body (a run's error.code, a command
// result's error.code, a fail action's params.code) are OUTCOME_CODES. This test reads the sources the way
// a reviewer would and fails on a code literal that is in neither table.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { ERROR_CODES, OUTCOME_CODES } from "@cua/base/errors";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../..");
const DIRS = [
  "packages/base/src",
  "packages/engines/src",
  "packages/machines/src",
  "packages/core/src",
  "apps/api/src",
  "apps/driver/src",
  "inngest/src",
  "packages/executor/src",
];

function* sources(dir: string): Generator<string> {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) {
      if (e !== "node_modules" && e !== "generated") yield* sources(p);
    } else if (p.endsWith(".ts") && !p.endsWith(".test.ts")) yield p;
  }
}

// calls and fields that produce an answer's code
const PRODUCERS =
  /(?:opFail|new OpFailure|new FsOpError|runError|new MachineOpError|new CoreError|validationError)\(\s*"([A-Z][A-Z0-9_]+)"|\bcode: "([A-Z][A-Z0-9_]+)"/g;
// Node errno-style codes on thrown Errors (never answered as such)
const NOT_ANSWERS = new Set(["EFORBIDDEN"]);

describe("the one error table (packages/base/src/errors.ts)", () => {
  it("holds every code literal the sources answer with", () => {
    const known = new Set([...Object.keys(ERROR_CODES), ...Object.keys(OUTCOME_CODES)]);
    const missing: string[] = [];
    let seen = 0;
    for (const dir of DIRS) {
      for (const file of sources(path.join(ROOT, dir))) {
        const text = readFileSync(file, "utf8");
        for (const m of text.matchAll(PRODUCERS)) {
          const code = m[1] ?? m[2]!;
          seen++;
          if (!known.has(code) && !NOT_ANSWERS.has(code)) missing.push(`${path.relative(ROOT, file)}: ${code}`);
        }
      }
    }
    expect(seen).toBeGreaterThan(100);
    expect(missing).toEqual([]);
  });

  it("keeps HTTP codes and body codes apart (a code is in one table only)", () => {
    const both = Object.keys(OUTCOME_CODES).filter((c) => c in ERROR_CODES);
    expect(both).toEqual([]);
  });
});
