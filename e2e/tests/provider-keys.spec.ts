// Provider keys (BYOK): store, replace and delete; only fingerprints are ever shown.
import { createHash } from "node:crypto";
import { expect, test } from "@playwright/test";
import { shot, signUp } from "./helpers.ts";

const fp = (k: string) => createHash("sha256").update(k).digest("hex").slice(0, 16);

test("store, replace and delete a provider key; only its fingerprint is shown", async ({ page }) => {
  await signUp(page);
  await page.getByRole("link", { name: "Provider keys" }).click();
  await expect(page.getByRole("heading", { name: "Provider keys", level: 1 })).toBeVisible();
  const first = `sk-ant-e2e-${"1".repeat(32)}`;
  const second = `sk-ant-e2e-${"2".repeat(32)}`;
  const anthropic = page.getByRole("form", { name: "Store the Anthropic key" });
  await anthropic.getByLabel("Anthropic API key").fill(first);
  await anthropic.getByRole("button", { name: "Store key" }).click();
  await expect(page.getByTestId("fingerprint-anthropic")).toHaveText(fp(first));
  await expect(page.locator("body")).not.toContainText(first);
  expect(await page.content()).not.toContain(first);

  const replace = page.getByRole("form", { name: "Replace the Anthropic key" });
  await replace.getByLabel("New Anthropic key").fill(second);
  await replace.getByRole("button", { name: "Replace key" }).click();
  await expect(page.getByTestId("fingerprint-anthropic")).toHaveText(fp(second));

  // a malformed key is refused with the field named
  const openai = page.getByRole("form", { name: "Store the OpenAI key" });
  await openai.getByLabel("OpenAI API key").fill("not-a-key");
  await openai.getByRole("button", { name: "Store key" }).click();
  await expect(openai.getByText("must be 20 to 512 characters without whitespace")).toBeVisible();
  await shot(page, "provider-keys");

  await replace.getByRole("button", { name: "Delete" }).click();
  const confirm = page.getByRole("dialog", { name: "Delete the Anthropic key?" });
  await confirm.getByRole("button", { name: "Delete key" }).click();
  await expect(confirm).toBeHidden();
  await expect(page.getByTestId("fingerprint-anthropic")).toHaveCount(0);
  await expect(page.getByRole("form", { name: "Store the Anthropic key" })).toBeVisible();
});
