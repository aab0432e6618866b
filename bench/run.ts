// npm run bench [-- <name> ...]   (names: api, predict, machines, runs, fuzz, wallet, workflows, agent-tasks;
// all but agent-tasks when none is named)
// The grounding benchmark runs on its own: npx tsx bench/grounding/run.ts
import { benchAgentTasks } from "./agent-tasks.ts";
import { benchApi } from "./api.ts";
import { benchFuzz } from "./fuzz.ts";
import { benchMachines } from "./machines-api.ts";
import { benchPredict } from "./predict.ts";
import { benchRuns } from "./runs.ts";
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
};
const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
// agent-tasks (several minutes of real runs on a desktop) runs only when named
for (const name of wanted.length ? wanted : Object.keys(suites).filter((n) => n !== "agent-tasks")) {
  const s = suites[name];
  if (!s) {
    console.error(`unknown benchmark "${name}"; have: ${Object.keys(suites).join(", ")}`);
    process.exit(2);
  }
  await s();
}
process.exit(process.exitCode ?? 0);
