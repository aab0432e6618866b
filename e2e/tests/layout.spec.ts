// Keyboard and narrow windows: the skip link, the Menu disclosure on a phone-sized window, forms by keyboard.
import { expect, test } from "@playwright/test";
import { PASSWORD, shot, uniqueEmail } from "./helpers.ts";

test("sign up and navigate by keyboard alone on a narrow window", async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("/sign-up");
  await page.waitForLoadState("networkidle"); // hydrated
  await page.keyboard.press("Tab");
  await expect(page.getByLabel("Email")).toBeFocused();
  await page.keyboard.type(uniqueEmail("kbd"));
  await page.keyboard.press("Tab");
  await expect(page.getByLabel("Password")).toBeFocused();
  await page.keyboard.type(PASSWORD);
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();

  // the navigation hides behind the Menu button on a narrow window
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav).toBeHidden();
  await page.keyboard.press("Tab"); // skip link first
  await expect(page.getByRole("link", { name: "Skip to content" })).toBeFocused();
  await page.keyboard.press("Tab");
  const menu = page.getByRole("button", { name: "Menu" });
  await expect(menu).toBeFocused();
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  await page.keyboard.press("Enter");
  await expect(menu).toHaveAttribute("aria-expanded", "true");
  await expect(nav).toBeVisible();
  await nav.getByRole("link", { name: "Wallet" }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("heading", { name: "Wallet", level: 1 })).toBeVisible();
  await expect(nav).toBeHidden();
  await page.getByLabel("Credits to add").focus();
  await page.keyboard.type("42");
  await page.keyboard.press("Enter");
  await expect(page.getByTestId("balance")).toHaveText("42 credits");
  await expect(page.getByRole("table", { name: "Wallet ledger, newest first" })).toBeVisible();
  // nothing overflows the window sideways (wide tables scroll inside their own box)
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  await shot(page, "wallet-narrow");
});
