// Runs: start a run on a (test) machine that pauses for a human, follow its event stream live with the
// machine's screen, Approve with a note, see it finish; Cancel acts at once; the list filters by status.
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

async function startRun(page: Page, task: string) {
  await page.getByRole("link", { name: "Runs" }).click();
  const form = page.getByRole("form", { name: "Create a run" });
  await form.getByLabel("Task").fill(task);
  await form.getByRole("button", { name: "Start run" }).click();
  await expect(page.getByRole("heading", { name: "Run", level: 1 })).toBeVisible();
}

test("a run pauses for a human, is approved with a note, and finishes", async ({ page }) => {
  await signUp(page);
  await testMachine(page, "sandbox");
  await startRun(page, "Fill in the signup form #steps=3 #human #slow=300");
  const events = page.getByTestId("run-events");
  // the stream is followed live: status frames arrive without a reload
  await expect(events).toContainText("status → running");
  const human = page.getByRole("region", { name: "The agent is waiting for a human" });
  await expect(human).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId("run-status")).toContainText("awaiting human");
  await expect(page.getByTestId("awaiting-reason")).toContainText("human_requested");
  await expect(events).toContainText("waiting for a human");
  await expect(page.getByTestId("live-screen")).toBeVisible();
  await shot(page, "run-awaiting-human");

  await human.getByLabel("Note for the agent (optional)").fill("Looks right, go on.");
  await human.getByRole("button", { name: "Approve and resume" }).click();
  await expect(human).toBeHidden();
  await expect(events).toContainText("note: Looks right, go on.");
  await expect(page.getByTestId("run-status")).toContainText("succeeded", { timeout: 30_000 });
  await expect(events).toContainText("finished: succeeded");
  await expect(page.getByRole("status").filter({ hasText: "The run succeeded after 3 steps" })).toBeVisible();
  await shot(page, "run");

  await page.getByRole("link", { name: "Runs" }).click();
  await page.getByLabel("Status", { exact: true }).selectOption("succeeded");
  await expect(
    page.getByRole("table", { name: "Runs" }).getByRole("row", { name: /Fill in the signup form/ }),
  ).toContainText("succeeded");
  await page.getByLabel("Status", { exact: true }).selectOption("failed");
  await expect(page.getByText("No failed runs")).toBeVisible();
  await shot(page, "runs");
});

test("Cancel on a paused run acts at once", async ({ page }) => {
  await signUp(page);
  await testMachine(page, "sandbox");
  await startRun(page, "Delete the old records #steps=2 #human");
  const human = page.getByRole("region", { name: "The agent is waiting for a human" });
  await expect(human).toBeVisible({ timeout: 30_000 });
  await human.getByRole("button", { name: "Cancel run" }).click();
  await expect(page.getByTestId("run-status")).toContainText("cancelled");
  await expect(human).toBeHidden();
  await expect(page.getByTestId("run-events")).toContainText("finished: cancelled");
});
