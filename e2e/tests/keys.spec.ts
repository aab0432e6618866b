// API keys: create with a chosen mode and scopes, the raw key shown once with a copy button, use it against
// /v1 from the test, list by prefix, revoke with confirmation (Escape cancels), and the key stops working.
import { expect, test } from "@playwright/test";
import { shot, signUp } from "./helpers.ts";

test("create a key, use it against /v1, revoke it", async ({ page, request, context, baseURL }) => {
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: baseURL });
  await signUp(page);
  await page.getByRole("link", { name: "API keys" }).click();
  await expect(page.getByRole("heading", { name: "API keys", level: 1 })).toBeVisible();
  await expect(page.getByText("No API keys yet")).toBeVisible();

  const form = page.getByRole("form", { name: "Create an API key" });
  await form.getByLabel("Name").fill("e2e runner");
  await form.getByRole("radio", { name: /Live/ }).check();
  await form.getByRole("button", { name: "None" }).click();
  await form.getByRole("checkbox", { name: "usage", exact: true }).check();
  await form.getByRole("checkbox", { name: "keys", exact: true }).check();
  await expect(form.getByText("Scopes (2 selected)")).toBeVisible();
  await form.getByRole("button", { name: "Create key" }).click();

  const dialog = page.getByRole("dialog", { name: "Your new API key" });
  await expect(dialog).toBeVisible();
  const raw = (await dialog.getByTestId("raw-key").textContent())!.trim();
  expect(raw).toMatch(/^sk-svc-live-[0-9a-f]{48}$/);
  await dialog.getByRole("button", { name: "Copy key" }).click();
  await expect(dialog.getByText("Copied", { exact: true })).toBeVisible();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(raw);
  await shot(page, "keys-created", { fullPage: false });

  // the raw key works against /v1 (through the console's origin, as a browser client would call it)
  const usage = await request.get("/v1/usage", { headers: { "X-API-Key": raw } });
  expect(usage.status()).toBe(200);
  const denied = await request.get("/v1/llm/keys", { headers: { "X-API-Key": raw } });
  expect(denied.status()).toBe(403);

  await dialog.getByRole("button", { name: "I have copied it" }).click();
  await expect(dialog).toBeHidden();
  const table = page.getByRole("table", { name: "Active API keys" });
  const row = table.getByRole("row", { name: /e2e runner/ });
  await expect(row).toContainText(raw.slice(0, 16));
  await expect(row).toContainText("live");
  await expect(row).toContainText("usage");
  await expect(page.getByText(raw)).toHaveCount(0); // shown once: never again
  await shot(page, "keys");

  // revoke: Escape cancels and returns focus, then confirm
  const revoke = row.getByRole("button", { name: /Revoke e2e runner/ });
  await revoke.click();
  const confirm = page.getByRole("dialog", { name: "Revoke this key?" });
  await expect(confirm).toBeVisible();
  await expect(confirm.getByRole("button", { name: "Cancel" })).toBeFocused();
  await page.keyboard.press("Escape");
  await expect(confirm).toBeHidden();
  await expect(revoke).toBeFocused();
  expect((await request.get("/v1/usage", { headers: { "X-API-Key": raw } })).status()).toBe(200);
  await revoke.click();
  await confirm.getByRole("button", { name: "Revoke key" }).click();
  await expect(confirm).toBeHidden();
  await expect(page.getByText("No API keys yet")).toBeVisible();
  const after = await request.get("/v1/usage", { headers: { "X-API-Key": raw } });
  expect(after.status()).toBe(401);
  expect((await after.json()).error.code).toBe("INVALID_API_KEY");
});

test("a test-mode key with every scope", async ({ page, request }) => {
  await signUp(page);
  await page.goto("/keys");
  const form = page.getByRole("form", { name: "Create an API key" });
  await form.getByRole("radio", { name: /Test/ }).check();
  await form.getByRole("button", { name: "All" }).click();
  await form.getByRole("button", { name: "Create key" }).click();
  const raw = (await page.getByTestId("raw-key").textContent())!.trim();
  expect(raw).toMatch(/^sk-svc-test-[0-9a-f]{48}$/);
  const r = await request.get("/v1/keys", { headers: { "X-API-Key": raw } });
  expect(r.status()).toBe(200);
  expect(r.headers()["x-service-test-mode"]).toBe("true");
  await page.getByRole("button", { name: "I have copied it" }).click();
  await expect(page.getByRole("table", { name: "Active API keys" }).getByRole("row")).toHaveCount(2);
});
