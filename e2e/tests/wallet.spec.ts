// Wallet: top up and see the balance and the ledger entry; the empty-wallet state and a metered call refused
// with 402 INSUFFICIENT_CREDITS until the top-up; the usage chart by endpoint.
import { expect, test } from "@playwright/test";
import { shot, signUp, whitePng } from "./helpers.ts";

test("top up and see the balance and the ledger", async ({ page }) => {
  const { email } = await signUp(page);
  await expect(page.getByTestId("balance")).toHaveText("0 credits");
  await expect(page.getByText("The wallet is empty")).toBeVisible();
  await page.getByRole("link", { name: "Wallet" }).first().click();
  await expect(page.getByRole("heading", { name: "Wallet", level: 1 })).toBeVisible();
  await expect(page.getByText("The ledger is empty")).toBeVisible();
  await page.getByLabel("Credits to add").fill("1500");
  await page.getByLabel("Note (optional)").fill("e2e invoice");
  await page.getByRole("button", { name: "Top up", exact: true }).click();
  await expect(page.getByRole("status").filter({ hasText: "Added 1,500 credits" })).toBeVisible();
  await expect(page.getByTestId("balance")).toHaveText("1,500 credits");
  const ledger = page.getByRole("table", { name: "Wallet ledger, newest first" });
  await expect(ledger.getByRole("row", { name: /Top-up/ })).toContainText(`console top-up by ${email}: e2e invoice`);
  await page.getByLabel("Credits to add").fill("250");
  await page.getByRole("button", { name: "Top up", exact: true }).click();
  await expect(page.getByTestId("balance")).toHaveText("1,750 credits");
  await expect(ledger.getByRole("row")).toHaveCount(3); // header + 2 entries
  // the kind filter
  await page.getByLabel("Kind").selectOption("refund");
  await expect(page.getByText("No refund entries")).toBeVisible();
  await page.getByLabel("Kind").selectOption("topup");
  await expect(ledger.getByRole("row")).toHaveCount(3);
  await shot(page, "wallet");
  // the overview shows the same balance
  await page.getByRole("link", { name: "Overview" }).click();
  await expect(page.getByTestId("balance")).toHaveText("1,750 credits");
});

test("insufficient credits: a metered call is refused until the operator tops up", async ({ page, request }) => {
  await signUp(page);
  await page.goto("/keys");
  const form = page.getByRole("form", { name: "Create an API key" });
  await form.getByRole("button", { name: "None" }).click();
  await form.getByRole("checkbox", { name: "predict", exact: true }).check();
  await form.getByRole("checkbox", { name: "usage", exact: true }).check();
  await form.getByRole("button", { name: "Create key" }).click();
  const raw = (await page.getByTestId("raw-key").textContent())!.trim();
  await page.getByRole("button", { name: "I have copied it" }).click();

  const body = { screenshot: whitePng(), instruction: "click the OK button" };
  const refused = await request.post("/v1/predict", { headers: { "X-API-Key": raw }, data: body });
  expect(refused.status()).toBe(402);
  const err = (await refused.json()).error;
  expect(err.code).toBe("INSUFFICIENT_CREDITS");
  expect(err.balance).toBe(0);
  expect(err.required).toBeGreaterThan(0);

  await page.getByRole("link", { name: "Overview" }).click();
  await expect(page.getByText("The wallet is empty")).toBeVisible();
  await expect(page.getByText("402 INSUFFICIENT_CREDITS")).toBeVisible();
  // the refused call is in this month's usage chart
  const chart = page.getByRole("figure");
  await expect(chart).toContainText("POST /v1/predict");
  await page.getByRole("link", { name: "Top up" }).first().click();
  await page.getByLabel("Credits to add").fill(String(err.required));
  await page.getByRole("button", { name: "Top up", exact: true }).click();
  await expect(page.getByTestId("balance")).toHaveText(`${err.required} credits`);
  const retry = await request.post("/v1/predict", { headers: { "X-API-Key": raw }, data: body });
  expect(retry.status()).not.toBe(402);
});

test("the usage chart shows requests by endpoint for the month", async ({ page, request }) => {
  await signUp(page);
  await page.goto("/keys");
  const form = page.getByRole("form", { name: "Create an API key" });
  await form.getByRole("button", { name: "None" }).click();
  await form.getByRole("checkbox", { name: "usage", exact: true }).check();
  await form.getByRole("checkbox", { name: "keys", exact: true }).check();
  await form.getByRole("button", { name: "Create key" }).click();
  const raw = (await page.getByTestId("raw-key").textContent())!.trim();
  await page.getByRole("button", { name: "I have copied it" }).click();
  for (let i = 0; i < 3; i++) await request.get("/v1/usage", { headers: { "X-API-Key": raw } });
  await request.get("/v1/keys", { headers: { "X-API-Key": raw } });
  await page.getByRole("link", { name: "Overview" }).click();
  const chart = page.getByRole("figure");
  await expect(chart.getByRole("listitem")).toHaveCount(2);
  await expect(chart.getByRole("listitem").first()).toContainText("GET /v1/usage");
  await expect(chart.getByRole("listitem").first()).toContainText("3 requests");
  await expect(page.getByTestId("usage-totals")).toContainText("4 requests");
  await page.getByLabel("Mode", { exact: true }).selectOption("test");
  await expect(page.getByText(/No test requests in/)).toBeVisible();
  await page.getByLabel("Mode", { exact: true }).selectOption("live");
  await expect(chart.getByRole("listitem")).toHaveCount(2);
  await shot(page, "overview");
});
