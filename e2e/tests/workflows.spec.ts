// Workflows (issue 13 "Done when"): create a workflow in the console, start it on a test machine, approve
// its human step and see the run succeed, its step tree drawn with each step's status and the task run
// linked; a definition the validator refuses shows each problem at its step.
import { expect, type Page, test } from "@playwright/test";
import { shot, signUp } from "./helpers.ts";

async function testMachine(page: Page, name: string) {
  await page.goto("/machines");
  const form = page.getByRole("form", { name: "Provision a machine" });
  await form.getByLabel("Name").fill(name);
  await form.getByRole("radio", { name: /Test/ }).check();
  await form.getByRole("button", { name: "Provision" }).click();
  await expect(page.getByTestId("machine-status").first()).toContainText("running");
}

test("create a workflow, start it, approve the human step, see the run succeed", async ({ page }) => {
  await signUp(page);
  await testMachine(page, "sandbox");
  await page.getByRole("link", { name: "Workflows" }).click();
  const form = page.getByRole("form", { name: "Create a workflow" });
  await form.getByLabel("Name").fill("Monthly report");
  // the form starts with an example: a task, an assert, a human approval, succeed
  await form.getByRole("button", { name: "Create workflow" }).click();
  await expect(page.getByRole("heading", { name: "Monthly report", level: 1 })).toBeVisible();
  await expect(page.getByTestId("workflow-version")).toHaveText("1");

  const start = page.getByRole("form", { name: "Start a workflow run" });
  await start.getByRole("button", { name: "Start run" }).click();
  await expect(page.getByRole("heading", { name: "Workflow run", level: 1 })).toBeVisible();
  const approval = page.getByRole("region", { name: /Approval needed/ });
  await expect(approval).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId("approval-reason")).toHaveText("File the 2026-10 report?");
  await expect(page.getByTestId("step-export")).toHaveAttribute("data-status", "succeeded");
  await expect(page.getByTestId("step-approve")).toHaveAttribute("data-status", "awaiting_human");
  await expect(page.getByTestId("step-export").getByRole("link", { name: "task run" })).toBeVisible();
  await shot(page, "workflow-run-awaiting-approval");

  await approval.getByRole("button", { name: "Approve" }).click();
  await expect(approval).toBeHidden();
  await expect(page.getByTestId("run-status")).toContainText("succeeded", { timeout: 30_000 });
  await expect(page.getByTestId("workflow-outcome")).toContainText("The workflow run succeeded");
  await expect(page.getByTestId("step-done")).toHaveAttribute("data-status", "succeeded");
  await shot(page, "workflow-run");
});

test("validation problems are shown at their step; saving a definition makes a new version", async ({ page }) => {
  await signUp(page);
  await page.goto("/workflows");
  const form = page.getByRole("form", { name: "Create a workflow" });
  await form.getByLabel("Name").fill("Broken");
  await form.getByLabel("Definition (JSON)").fill(
    JSON.stringify({
      steps: [
        { id: "a", type: "task", task: "x" },
        { id: "p", type: "parallel", branches: [[{ id: "h", type: "human_approval" }]] },
      ],
    }),
  );
  await form.getByRole("button", { name: "Create workflow" }).click();
  const errors = page.getByTestId("definition-errors");
  await expect(errors).toContainText("step h:");
  await expect(errors).toContainText("definition.steps.1.branches.0.0.type");
  await shot(page, "workflow-validation");

  await form.getByLabel("Definition (JSON)").fill(JSON.stringify({ steps: [{ id: "ok", type: "succeed" }] }));
  await form.getByRole("button", { name: "Create workflow" }).click();
  await expect(page.getByRole("heading", { name: "Broken", level: 1 })).toBeVisible();
  const edit = page.getByRole("form", { name: "Edit the definition" });
  await edit.getByLabel("Definition (JSON)").fill(JSON.stringify({ steps: [{ id: "two", type: "succeed" }] }));
  await edit.getByRole("button", { name: "Save as version 2" }).click();
  await expect(page.getByTestId("workflow-version")).toHaveText("2");
  await expect(page.getByTestId("versions")).toContainText("version 2");
  await expect(page.getByTestId("versions")).toContainText("version 1");
});

test("a task step whose task run waits for a human: the workflow run shows it and the answer resumes the task run", async ({
  page,
}) => {
  await signUp(page);
  await testMachine(page, "sandbox");
  await page.goto("/workflows");
  const form = page.getByRole("form", { name: "Create a workflow" });
  await form.getByLabel("Name").fill("Needs a hand");
  await form
    .getByLabel("Definition (JSON)")
    .fill(JSON.stringify({ steps: [{ id: "file", type: "task", task: "File the report #steps=2 #human" }] }));
  await form.getByRole("button", { name: "Create workflow" }).click();
  await expect(page.getByRole("heading", { name: "Needs a hand", level: 1 })).toBeVisible();
  await page.getByRole("form", { name: "Start a workflow run" }).getByRole("button", { name: "Start run" }).click();

  const waiting = page.getByRole("region", { name: "The task run of step file is waiting for a human" });
  await expect(waiting).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId("run-status")).toContainText("awaiting human");
  await expect(page.getByTestId("approval-reason")).toHaveText("Reason: human_requested");
  await expect(page.getByTestId("step-file")).toHaveAttribute("data-status", "awaiting_human");
  await expect(waiting.getByTestId("awaiting-task-run")).toHaveAttribute("href", /^\/runs\/run_test_[0-9a-f]+$/);
  // the task run's page waits too and links back to its workflow run
  await waiting.getByTestId("awaiting-task-run").click();
  await expect(page.getByRole("heading", { name: "Run", level: 1 })).toBeVisible();
  await expect(page.getByTestId("awaiting-reason")).toContainText("human_requested");
  await page.getByTestId("workflow-run-link").click();
  await expect(waiting).toBeVisible();

  await waiting.getByLabel("Note (optional)").fill("the printer is back");
  await waiting.getByRole("button", { name: "Approve" }).click();
  await expect(waiting).toBeHidden();
  await expect(page.getByTestId("run-status")).toContainText("succeeded", { timeout: 30_000 });
  await expect(page.getByTestId("step-file")).toHaveAttribute("data-status", "succeeded");
});
