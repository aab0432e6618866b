// Schedules (issue 14; SPEC.md "Schedules and triggers", docs/schedules.md): create a schedule in the console
// with the preview of its next five fires in the schedule's zone and the viewer's, fire it with Run now and see
// the history entry; a webhook trigger shows its URL, its secret once and a curl that signs a body, and a
// body signed as that curl does fires the schedule through the console's origin.
import { createHmac } from "node:crypto";
import { expect, type Page, test } from "@playwright/test";
import { shot, signUp } from "./helpers.ts";

// the viewer is in New York, the schedule in Berlin: the preview shows both
test.use({ timezoneId: "America/New_York" });

async function testMachine(page: Page, name: string) {
  await page.goto("/machines");
  const form = page.getByRole("form", { name: "Provision a machine" });
  await form.getByLabel("Name").fill(name);
  await form.getByRole("radio", { name: /Test/ }).check();
  await form.getByRole("button", { name: "Provision" }).click();
  await expect(page.getByTestId("machine-status").first()).toContainText("running");
}

const wall = (d: Date, timeZone: string) =>
  new Intl.DateTimeFormat("en-US", { timeZone, weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" })
    .format(d)
    .replace(",", "");

/** The next Monday 07:30 in Berlin after now, found independently of croner (30-minute steps, Intl). */
function nextBerlinMonday0730(now = new Date()): Date {
  let t = Math.ceil(now.getTime() / 1_800_000) * 1_800_000;
  while (wall(new Date(t), "Europe/Berlin") !== "Mon 07:30") t += 1_800_000;
  return new Date(t);
}

const sign = (secret: string, body: string, t = Math.floor(Date.now() / 1000)) =>
  `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;

test("create a schedule with its preview, run it now, see the history; a webhook trigger's secret is shown once", async ({
  page,
  baseURL,
}) => {
  await signUp(page);
  await testMachine(page, "sandbox");

  await page.getByRole("link", { name: "Schedules" }).click();
  await expect(page.getByRole("heading", { name: "Schedules", level: 1 })).toBeVisible();
  await expect(page.getByText("No schedules yet")).toBeVisible();
  const form = page.getByRole("form", { name: "Create a schedule" });
  await form.getByLabel("Name").fill("Monday invoices");
  await form.getByLabel("Task prompt").fill("Download the invoices #steps=2");
  await form.getByLabel("Frequency").selectOption("weekly");
  await form.getByLabel("Time zone").fill("Europe/Berlin");
  await form.getByLabel("Time", { exact: true }).fill("07:30");
  await form.getByLabel("Day of week").selectOption("Monday");

  // the preview: core's rules in the browser (docs/schedules.md "When a schedule fires")
  await expect(form.getByTestId("preview-cron")).toHaveText("30 7 * * 1");
  const preview = form.getByRole("table", { name: "Next fire times" });
  await expect(preview.getByRole("row")).toHaveCount(6); // header + five fires
  const first = nextBerlinMonday0730();
  const cells = preview.getByRole("row").nth(1).getByRole("cell");
  await expect(cells.nth(1)).toContainText("07:30");
  await expect(cells.nth(1)).toContainText("Mon");
  const ny = wall(first, "America/New_York").split(" ")[1]!; // 01:30 (EST) or 02:30 in the weeks DST differs
  await expect(cells.nth(2)).toContainText(ny);
  await expect(preview.getByRole("columnheader", { name: "Your time (America/New_York)" })).toBeVisible();

  // a one-shot: a local date and time in the schedule's zone, one fire
  await form.getByLabel("Frequency").selectOption("one_shot");
  await form.getByLabel("Run at").fill("2027-01-15T07:30");
  await expect(preview.getByRole("row")).toHaveCount(2);
  await expect(preview.getByRole("row").nth(1).getByRole("cell").nth(1)).toContainText("Jan 15, 2027, 07:30 AM GMT+1");
  await expect(preview.getByRole("row").nth(1).getByRole("cell").nth(2)).toContainText("Jan 15, 2027, 01:30 AM EST");

  // a malformed custom cron is refused in place, before any request
  await form.getByLabel("Frequency").selectOption("custom");
  await form.getByLabel("Cron").fill("61 * * * *");
  await expect(form.getByTestId("preview-problem")).toContainText("cron");
  await form.getByLabel("Frequency").selectOption("weekly");
  await form.getByLabel("Time", { exact: true }).fill("07:30");
  await form.getByLabel("Day of week").selectOption("Monday");
  await expect(form.getByTestId("preview-cron")).toHaveText("30 7 * * 1");
  await shot(page, "schedules-create");
  await form.getByRole("button", { name: "Create schedule" }).click();

  // the schedule's page: the next run is the preview's first fire
  await expect(page.getByRole("heading", { name: "Monday invoices", level: 1 })).toBeVisible();
  await expect(page).toHaveURL(/\/schedules\/sch_test_[0-9a-f]{24}$/);
  await expect(page.getByTestId("schedule-status")).toContainText("active");
  await expect(page.getByTestId("next-run")).toContainText(`${wall(first, "Europe/Berlin").split(" ")[1]}`);
  await expect(page.getByTestId("next-run")).toContainText(ny);
  await expect(page.getByText("No runs yet")).toBeVisible();

  // Run now: a history entry (trigger manual) whose task run completes; test mode costs 0 credits
  await page.getByRole("button", { name: "Run now" }).click();
  const history = page.getByRole("table", { name: "History" });
  const manual = history.getByRole("row").filter({ hasText: "manual" });
  await expect(manual).toHaveCount(1);
  await expect(manual.getByTestId("history-status")).toContainText("completed", { timeout: 30_000 });
  await expect(manual.getByRole("cell").nth(2)).toHaveText("0");
  await expect(manual.getByRole("link", { name: /^run_test_/ })).toBeVisible();

  // pause and resume
  await page.getByRole("button", { name: "Pause" }).click();
  await expect(page.getByTestId("schedule-status")).toContainText("paused");
  await expect(page.getByTestId("next-run")).toContainText("none");
  await page.getByRole("button", { name: "Resume" }).click();
  await expect(page.getByTestId("schedule-status")).toContainText("active");

  // a webhook trigger: URL on the console's origin, the secret once, a curl that signs a body
  await page.getByRole("button", { name: "Create webhook trigger" }).click();
  const fresh = page.getByRole("region", { name: "New webhook trigger" });
  const url = (await fresh.getByTestId("webhook-url").textContent()) ?? "";
  const secret = (await fresh.getByTestId("webhook-secret").textContent()) ?? "";
  expect(url).toMatch(new RegExp(`^${baseURL}/v1/triggers/webhook/whk_[0-9a-f]{32}$`));
  expect(secret).toMatch(/^whsec_[0-9a-f]{64}$/);
  const curl = fresh.getByTestId("webhook-curl");
  await expect(curl).toContainText(`SECRET='${secret}'`);
  await expect(curl).toContainText(`URL='${url}'`);
  await expect(curl).toContainText("openssl dgst -sha256 -hmac");
  await expect(curl).toContainText("Service-Signature: t=$t,v1=$sig");
  await shot(page, "schedule-webhook-created");

  // a body signed as the curl signs it fires the schedule (docs/schedules.md "Webhook")
  const body = '{"invoice":"INV-7"}';
  const fired = await page.request.post(url, {
    data: body,
    headers: { "Content-Type": "application/json", "Service-Signature": sign(secret, body) },
  });
  expect(fired.status()).toBe(200);
  expect((await fired.json()).received).toBe(true);
  await expect(history.getByRole("row").filter({ hasText: "webhook" }).getByTestId("history-status")).toContainText(
    "completed",
    { timeout: 30_000 },
  );

  // once: gone after "copied" and after a reload; the list shows the URL only
  await fresh.getByRole("button", { name: "I have copied the secret" }).click();
  await expect(page.getByText(secret)).toHaveCount(0);
  await page.reload();
  const triggers = page.getByRole("table", { name: "Triggers" });
  await expect(triggers).toContainText(url);
  await expect(page.getByText(secret)).toHaveCount(0);

  // disabled: the webhook answers 410 WEBHOOK_DISABLED
  await triggers.getByRole("button", { name: "Disable" }).click();
  await expect(triggers).toContainText("no (answers 410)");
  const gone = await page.request.post(url, {
    data: '{"again":1}',
    headers: { "Content-Type": "application/json", "Service-Signature": sign(secret, '{"again":1}') },
  });
  expect(gone.status()).toBe(410);
  expect((await gone.json()).error.code).toBe("WEBHOOK_DISABLED");
  await shot(page, "schedule");

  // deleting asks first; then the old URL answers 404 TRIGGER_NOT_FOUND
  await triggers.getByRole("button", { name: "Delete" }).click();
  const confirm = page.getByRole("dialog", { name: "Delete this trigger?" });
  await confirm.getByRole("button", { name: "Delete trigger" }).click();
  await expect(confirm).toBeHidden();
  await expect(page.getByText("No triggers")).toBeVisible();
  const deleted = await page.request.post(url, {
    data: body,
    headers: { "Content-Type": "application/json", "Service-Signature": sign(secret, body) },
  });
  expect(deleted.status()).toBe(404);
  expect((await deleted.json()).error.code).toBe("TRIGGER_NOT_FOUND");

  // the list: status and next run in both zones
  await page.getByRole("link", { name: "All schedules" }).click();
  const row = page.getByRole("table", { name: "Schedules" }).getByRole("row", { name: /Monday invoices/ });
  await expect(row.getByTestId("schedule-status")).toContainText("active");
  await expect(row).toContainText("30 7 * * 1");
  await expect(row).toContainText(ny);
  await shot(page, "schedules");
});

async function createSchedule(page: Page, name: string, task: string) {
  await page.goto("/schedules");
  const form = page.getByRole("form", { name: "Create a schedule" });
  await form.getByLabel("Name").fill(name);
  await form.getByLabel("Task prompt").fill(task);
  await form.getByLabel("Frequency").selectOption("hourly");
  await expect(form.getByTestId("preview-cron")).toHaveText("0 * * * *");
  await form.getByRole("button", { name: "Create schedule" }).click();
  await expect(page.getByRole("heading", { name, level: 1 })).toBeVisible();
  return page.url().split("/").pop()!;
}

test("edit a schedule (refused cron in plain words, then saved and kept after a reload); chain triggers", async ({
  page,
}) => {
  await signUp(page);
  await testMachine(page, "sandbox");
  await createSchedule(page, "Export report", "Export the report #steps=1");
  const targetId = await createSchedule(page, "File report", "File the report #steps=1");

  // edit: a cron the server refuses is shown in the operator's words, and nothing changes
  await page.getByRole("button", { name: "Edit" }).click();
  const form = page.getByRole("form", { name: "Edit the schedule" });
  await expect(form.getByLabel("Name")).toHaveValue("File report");
  await expect(form.getByLabel("Frequency")).toHaveValue("hourly");
  await form.getByLabel("Name").fill("File the weekly report");
  await form.getByLabel("Task prompt").fill("File the weekly report in the archive #steps=1");
  await form.getByLabel("Frequency").selectOption("custom");
  await form.getByLabel("Cron").fill("61 8 * * 1-5");
  await expect(form.getByTestId("preview-problem")).toContainText("cron");
  await form.getByRole("button", { name: "Save changes" }).click();
  const refused = form.getByRole("alert").filter({ hasText: "The schedule was not saved" });
  await expect(refused).toContainText("cron: not a valid cron expression");
  await expect(refused).toContainText("VALIDATION_ERROR");
  await page.reload();
  await expect(page.getByRole("heading", { name: "File report", level: 1 })).toBeVisible();
  await expect(page.getByTestId("schedule-when")).toContainText("0 * * * *");

  // a valid edit: name, task, cron, time zone and enabled (unchecked pauses it)
  await page.getByRole("button", { name: "Edit" }).click();
  await form.getByLabel("Name").fill("File the weekly report");
  await form.getByLabel("Task prompt").fill("File the weekly report in the archive #steps=1");
  await form.getByLabel("Frequency").selectOption("custom");
  await form.getByLabel("Cron").fill("15 8 * * 1-5");
  await form.getByLabel("Time zone").fill("Asia/Tokyo");
  await expect(form.getByTestId("preview-cron")).toHaveText("15 8 * * 1-5");
  await expect(form.getByRole("table", { name: "Next fire times" })).toContainText("08:15 AM GMT+9");
  await form.getByLabel(/Enabled/).uncheck();
  await form.getByRole("button", { name: "Save changes" }).click();
  await expect(form).toBeHidden();
  await page.reload();
  await expect(page.getByRole("heading", { name: "File the weekly report", level: 1 })).toBeVisible();
  await expect(page.getByTestId("schedule-when")).toContainText("15 8 * * 1-5");
  await expect(page.getByTestId("schedule-when")).toContainText("Asia/Tokyo");
  await expect(page.getByTestId("task-prompt")).toHaveText("File the weekly report in the archive #steps=1");
  await expect(page.getByTestId("schedule-status")).toContainText("paused");
  // enabled again: resumed, with a next run on a Tokyo weekday at 08:15
  await page.getByRole("button", { name: "Edit" }).click();
  await expect(form.getByLabel("Cron")).toHaveValue("15 8 * * 1-5");
  await form.getByLabel(/Enabled/).check();
  await form.getByRole("button", { name: "Save changes" }).click();
  await expect(page.getByTestId("schedule-status")).toContainText("active");
  await expect(page.getByTestId("next-run")).toContainText("08:15 AM GMT+9");

  // a chain trigger: "File the weekly report" fires when "Export report" fails; listed, also after a reload
  const create = page.getByRole("form", { name: "Create a trigger" });
  await create.getByLabel("Kind").selectOption("chain");
  await create.getByLabel("Source schedule").selectOption({ label: "Export report" });
  await create.getByLabel("Fires when the source run").selectOption("on_failure");
  await create.getByRole("button", { name: "Create chain trigger" }).click();
  const triggers = page.getByRole("table", { name: "Triggers" });
  await expect(triggers.getByTestId("chain-source")).toHaveText(
    "when Export report fails (failed or timed out), with its result",
  );
  await page.reload();
  await expect(triggers.getByRole("row").filter({ hasText: "chain" })).toHaveCount(1);
  await expect(triggers.getByTestId("chain-source")).toContainText("Export report");
  await shot(page, "schedule-edit-chain");

  // the other way round would close a cycle: refused, in plain words
  await triggers.getByRole("link", { name: "Export report" }).click();
  await expect(page.getByRole("heading", { name: "Export report", level: 1 })).toBeVisible();
  await create.getByLabel("Kind").selectOption("chain");
  await create.getByLabel("Source schedule").selectOption({ label: "File the weekly report" });
  await create.getByRole("button", { name: "Create chain trigger" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "The trigger was not changed" })).toContainText(
    "this chain would form a cycle",
  );
  await expect(page.getByText("No triggers")).toBeVisible();

  // deleting the chain trigger from the target's page
  await page.goto(`/schedules/${targetId}`);
  await triggers.getByRole("button", { name: "Delete" }).click();
  await page
    .getByRole("dialog", { name: "Delete this trigger?" })
    .getByRole("button", { name: "Delete trigger" })
    .click();
  await expect(page.getByText("No triggers")).toBeVisible();
});
