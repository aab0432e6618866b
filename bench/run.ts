// npm run bench [-- <name> ...]   (names: api, predict, machines, runs, fuzz, wallet, workflows, agent-tasks,
// grounding, perf, schedules; all but agent-tasks, grounding, perf and schedules when none is named)
// perf: every row of issue 16's table in one command (api, predict, runs, machines, grounding), then the table.
// The grounding benchmark also runs on its own with options: npx tsx bench/grounding/run.ts --help
import { benchAgentTasks } from "./agent-tasks.ts";
import { benchApi } from "./api.ts";
import { benchFuzz } from "./fuzz.ts";
import { benchGrounding } from "./grounding/run.ts";
import { printTargets } from "./lib.ts";
import { benchMachines } from "./machines-api.ts";
import { benchPredict } from "./predict.ts";
import { benchRuns } from "./runs.ts";
import { benchSchedules } from "./schedules.ts";
import { benchWallet } from "./wallet.ts";
import { benchWorkflows } from "./workflows.ts";

const suites: Record<string, () => Promise<void>> = {
  api: benchApi,
  predict: benchPredict,
  machines: benchMachines,
  runs: benchRuns,
  fuzz: benchFuzz,
  wallet: benchWallet,
  workflows: benchWorkflows,
  "agent-tasks": benchAgentTasks,
  schedules: benchSchedules,
  grounding: () => benchGrounding(),
  perf: async () => {
    for (const s of [benchApi, benchPredict, benchRuns, benchMachines, () => benchGrounding()]) await s();
  },
};
const onlyWhenNamed = ["agent-tasks", "grounding", "perf", "schedules"];
const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
// agent-tasks (several minutes of real runs on a desktop), grounding (a few minutes of OCR), perf and schedules
// (it waits for a minute boundary) run only when named
for (const name of wanted.length ? wanted : Object.keys(suites).filter((n) => !onlyWhenNamed.includes(n))) {
  const s = suites[name];
  if (!s) {
    console.error(`unknown benchmark "${name}"; have: ${Object.keys(suites).join(", ")}`);
    process.exit(2);
  }
  await s();
}
printTargets("issue 16 targets (ratios and baselines from this run)");
process.exit(process.exitCode ?? 0);
