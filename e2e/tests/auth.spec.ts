// Sign up, sign out, sign in; the wrong-password error; the redirect of signed-out visitors.
import { expect, test } from "@playwright/test";
import { PASSWORD, shot, signIn, signUp } from "./helpers.ts";

test("sign up, sign out and sign in again", async ({ page }) => {
  const { email } = await signUp(page);
  await expect(page.getByText(email)).toBeVisible();
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === "svc_session");
  expect(session?.httpOnly).toBe(true);
  expect(session?.sameSite).toBe("Lax");
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/sign-in$/);
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  // signed out: console pages send the visitor to the sign-in page
  await page.goto("/keys");
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fkeys$/);
  await signIn(page, email);
  await expect(page).toHaveURL(/\/keys$/);
  await expect(page.getByRole("heading", { name: "API keys", level: 1 })).toBeVisible();
});

test("a wrong password shows the error and keeps the visitor signed out", async ({ page }) => {
  const { email } = await signUp(page);
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/sign-in$/);
  await signIn(page, email, "definitely not it");
  const alert = page.getByRole("main").getByRole("alert");
  await expect(alert).toContainText("Email or password is wrong.");
  await expect(alert).toContainText("INVALID_CREDENTIALS");
  await expect(page).toHaveURL(/\/sign-in$/);
  expect((await page.context().cookies()).find((c) => c.name === "svc_session")).toBeUndefined();
  await shot(page, "sign-in-error");
  // the right password still works
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
});

test("signing up with a taken email says so", async ({ page }) => {
  const { email } = await signUp(page);
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.goto("/sign-up");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Create an account" }).click();
  await expect(page.getByRole("main").getByRole("alert")).toContainText("already exists");
});

test("a stale session cookie sends the visitor to sign in", async ({ page, context, baseURL }) => {
  await context.addCookies([{ name: "svc_session", value: "a".repeat(32), url: baseURL! }]);
  await page.goto("/wallet");
  await expect(page).toHaveURL(/\/sign-in\?next=%2Fwallet$/);
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await shot(page, "sign-in");
});
