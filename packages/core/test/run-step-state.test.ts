// An agent step reads its run, its latest step rows and its machine in one statement (loadStepState,
// issue 16); the objects must be the ones the Prisma reads of the three give, field for field, or the
// step would act on a different run than the one stored. Also: the machine read stays scoped to the
// run's account and mode.
import { randomUUID } from "node:crypto";
import type { TestDatabase } from "@cua/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../src/accounts/create-account.ts";
import type { CoreDeps } from "../src/deps.ts";
import { loadStepState } from "../src/runs/agent-step.ts";
import { coreDepsOnTestDatabase } from "./db-deps.ts";

let tdb: TestDatabase;
let deps: CoreDeps;
let accountId: string;
let otherAccountId: string;

beforeAll(async () => {
  ({ tdb, deps } = await coreDepsOnTestDatabase());
  accountId = (await createAccount(deps, { name: "a", tier: "enterprise", credits: 0 })).account_id;
  otherAccountId = (await createAccount(deps, { name: "b", tier: "enterprise", credits: 0 })).account_id;
});
afterAll(async () => {
  await tdb?.drop();
});

const t = (s: number) => new Date(Date.UTC(2026, 10, 25, 12, 0, s, 123));

async function machine(id: string, owner: string, mode: "test" | "live") {
  return deps.db.machine.create({
    data: {
      id,
      accountId: owner,
      mode,
      kind: "managed",
      isTest: mode === "test",
      displayName: "m",
      status: "running",
      provider: "mock",
      handle: { provider: "mock", machine_id: id, nested: { a: [1, 2] } },
      capabilities: ["screenshot", "mouse"],
      metadata: { k: "v" },
      // every timestamp set: each must come back as the same Date
      expiresAt: t(1),
      deviceTokenRevokedAt: t(2),
      lastHeartbeatAt: t(3),
      billedThrough: t(4),
      opLockedUntil: t(5),
      terminatedAt: t(6),
      statusMessage: "ok",
      driverStatus: { up: true },
    },
  });
}

async function run(id: string, machineId: string, owner: string, mode: "test" | "live", stepCount: number) {
  return deps.db.run.create({
    data: {
      id,
      accountId: owner,
      mode,
      apiKeyId: "key_1",
      machineId,
      task: "a task",
      instructions: "be brief",
      systemPrompt: null,
      metadata: { a: "1" },
      awaitingHumanTimeoutSeconds: 60,
      awaitingHumanSince: t(7),
      cuaVersion: "v5",
      maxSteps: 50,
      maxIterations: 100,
      onAwaitingHuman: "pause",
      budgetCents: 40,
      actionPolicy: { allow: ["click"] },
      webhookUrl: "https://example.com/hook",
      webhookSecretSealed: Buffer.from([9, 8, 7]),
      status: "running",
      stepCount,
      iterationCount: stepCount + 2,
      llmKeySealed: Buffer.from([1, 2, 3, 0, 255]),
      lastStepError: { code: "X", message: "y" },
      eventSeq: 7,
      deadlineAt: t(30),
      startedAt: t(8),
    },
  });
}

describe("loadStepState", () => {
  it("gives the run, the latest step rows and the machine exactly as the Prisma reads do", async () => {
    const mid = `mch_test_${randomUUID().replaceAll("-", "").slice(0, 24)}`;
    await machine(mid, accountId, "test");
    const r = await run("run_test_state1", mid, accountId, "test", 30);
    // 31 rows: steps 1..30 committed, step 31 in flight, step 32 (never read: past step_count + 1)
    for (let step = 1; step <= 32; step++) {
      await deps.db.runStep.create({
        data: {
          runId: r.id,
          step,
          phase: step <= 30 ? "committed" : "started",
          screenshotDigest: `d${step}`,
          actionsDigest: `a${step}`,
          actions: [{ action_type: "click", params: { x: step, y: 1 } }],
          reasoning: `r${step}`,
          engineStatus: "continue",
          usage: { timings: { engine_ms: 1.5 } },
          ...(step <= 30 ? { results: [{ success: true }] } : {}),
          execAttempts: 1,
          creditsCharged: 5,
          createdAt: t(step),
          committedAt: step <= 30 ? t(step + 1) : null,
        },
      });
    }
    const got = await loadStepState(deps, r.id);
    expect(got).not.toBeNull();
    expect(got!.run).toStrictEqual(await deps.db.run.findUniqueOrThrow({ where: { id: r.id } }));
    expect(got!.latest).toStrictEqual(
      await deps.db.runStep.findMany({
        where: { runId: r.id, step: { lte: 31 } },
        orderBy: { step: "desc" },
        take: 22,
      }),
    );
    expect(got!.latest[0]!.step).toBe(31);
    expect(got!.machine).toStrictEqual(await deps.db.machine.findUniqueOrThrow({ where: { id: mid } }));
  });

  it("finds no machine of another account or of the other mode, and no run that does not exist", async () => {
    const foreign = `mch_test_${randomUUID().replaceAll("-", "").slice(0, 24)}`;
    await machine(foreign, otherAccountId, "test");
    const r1 = await run("run_test_state2", foreign, accountId, "test", 0);
    expect((await loadStepState(deps, r1.id))!.machine).toBeNull();

    const live = randomUUID();
    await machine(live, accountId, "live");
    const r2 = await run("run_test_state3", live, accountId, "test", 0);
    const s2 = await loadStepState(deps, r2.id);
    expect(s2!.machine).toBeNull();
    expect(s2!.latest).toEqual([]);

    expect(await loadStepState(deps, "run_test_missing")).toBeNull();
  });
});

// issue 16: the common step begins in the read (loadStepState `begin`), as beginIteration would, and only
// when nothing else has to be decided first; otherwise nothing is written.
describe("loadStepState with begin", () => {
  const before = t(10); // before every run's deadline (t(30))
  const iterations = async (id: string) => (await deps.db.run.findUniqueOrThrow({ where: { id } })).iterationCount;
  let k = 0;
  const fresh = async (stepCount = 3, over: Record<string, unknown> = {}) => {
    const mid = `mch_test_${randomUUID().replaceAll("-", "").slice(0, 24)}`;
    await machine(mid, accountId, "test");
    const r = await run(`run_test_begin${++k}`, mid, accountId, "test", stepCount);
    return Object.keys(over).length ? deps.db.run.update({ where: { id: r.id }, data: over }) : r;
  };

  it("begins step n: counts the iteration and creates the started row it returns", async () => {
    const r = await fresh(3);
    const got = await loadStepState(deps, r.id, { now: before });
    expect(got!.begun).not.toBeNull();
    expect(got!.begun).toStrictEqual(
      await deps.db.runStep.findUniqueOrThrow({ where: { runId_step: { runId: r.id, step: 4 } } }),
    );
    expect(got!.begun!.phase).toBe("started");
    expect(got!.run.iterationCount).toBe(r.iterationCount + 1);
    expect(await iterations(r.id)).toBe(r.iterationCount + 1);
  });

  it("resets a paused row of step n (its prediction is dropped) and keeps its execution attempts", async () => {
    const r = await fresh(0);
    await deps.db.runStep.create({
      data: {
        runId: r.id,
        step: 1,
        phase: "paused",
        actions: [{ action_type: "wait" }],
        reasoning: "x",
        execAttempts: 2,
      },
    });
    const got = await loadStepState(deps, r.id, { now: before });
    expect(got!.begun).toMatchObject({ step: 1, phase: "started", actions: null, reasoning: null, execAttempts: 2 });
    expect(got!.latest.some((s) => s.step === 1)).toBe(false);
    expect((await deps.db.runStep.findUniqueOrThrow({ where: { runId_step: { runId: r.id, step: 1 } } })).phase).toBe(
      "started",
    );
  });

  const cases: Array<[string, () => Promise<{ id: string; iterationCount: number }>, Date]> = [
    ["past its deadline", () => fresh(3), t(31)],
    ["at max_steps", () => fresh(50), before],
    ["out of iterations", () => fresh(3, { iterationCount: 100 }), before],
    ["not running", () => fresh(3, { status: "awaiting_human" }), before],
    ["a sandbox task with #human (the step asks for the human itself)", () => fresh(3, { task: "go #HUMAN" }), before],
    [
      "step n already executing (a crash recovery decides)",
      async () => {
        const r = await fresh(3);
        await deps.db.runStep.create({ data: { runId: r.id, step: 4, phase: "executing", execAttempts: 1 } });
        return r;
      },
      before,
    ],
  ];
  for (const [what, make, now] of cases) {
    it(`writes nothing when the run is ${what}`, async () => {
      const r = await make();
      const stepsBefore = await deps.db.runStep.findMany({ where: { runId: r.id } });
      const got = await loadStepState(deps, r.id, { now });
      expect(got!.begun).toBeNull();
      expect(await iterations(r.id)).toBe(r.iterationCount);
      expect(await deps.db.runStep.findMany({ where: { runId: r.id } })).toStrictEqual(stepsBefore);
    });
  }
});
