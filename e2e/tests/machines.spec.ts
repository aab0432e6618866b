// Machines: a managed (live) desktop provisioned from the console, its live screenshot changing after an
// action, a terminal command, terminate with confirmation; a mock (test) machine; and provisioning refused
// with INSUFFICIENT_CREDITS on an empty wallet.
import { expect, type Page, test } from "@playwright/test";
import { shot, signUp } from "./helpers.ts";

async function topUp(page: Page, credits: number) {
  await page.goto("/wallet");
  await page.getByLabel("Credits to add").fill(String(credits));
  await page.getByRole("button", { name: "Top up", exact: true }).click();
  await expect(page.getByTestId("balance")).toHaveText(`${credits.toLocaleString("en-US")} credits`);
}

test("provisioning a live machine on an empty wallet shows INSUFFICIENT_CREDITS", async ({ page }) => {
  await signUp(page);
  await page.getByRole("link", { name: "Machines" }).click();
  const form = page.getByRole("form", { name: "Provision a machine" });
  await form.getByRole("radio", { name: /Live/ }).check();
  await form.getByRole("button", { name: "Provision" }).click();
  const alert = form.getByRole("alert");
  await expect(alert).toContainText("INSUFFICIENT_CREDITS");
  await expect(alert).toContainText("Top up the wallet");
  await shot(page, "machines-insufficient-credits");
});

test("a test machine runs at once and shows its screen", async ({ page }) => {
  await signUp(page);
  await page.goto("/machines");
  const form = page.getByRole("form", { name: "Provision a machine" });
  await form.getByLabel("Name").fill("mock box");
  await form.getByRole("radio", { name: /Test/ }).check();
  await form.getByRole("button", { name: "Provision" }).click();
  await expect(page.getByRole("heading", { name: "mock box", level: 1 })).toBeVisible();
  await expect(page.getByTestId("machine-status").first()).toContainText("running");
  await expect(page.getByTestId("live-screen")).toBeVisible();
  await page.goto("/machines");
  await expect(page.getByRole("table", { name: "Machines" }).getByRole("row", { name: /mock box/ })).toContainText(
    "running",
  );
});

test("a live desktop: provision with progress, live screen changes after an action, terminal, terminate", async ({
  page,
}) => {
  test.setTimeout(240_000);
  await signUp(page);
  await topUp(page, 500);
  await page.getByRole("link", { name: "Machines" }).click();
  const form = page.getByRole("form", { name: "Provision a machine" });
  await form.getByLabel("Name").fill("e2e desktop");
  await form.getByLabel(/Time to live/).fill("30");
  await form.getByRole("radio", { name: /Live/ }).check();
  await form.getByRole("button", { name: "Provision" }).click();
  await expect(page.getByRole("heading", { name: "e2e desktop", level: 1 })).toBeVisible();
  // progress is shown while the desktop starts; then it runs (or the test fails fast on an error status)
  const status = page.getByTestId("machine-status").first();
  await expect.poll(async () => (await status.textContent()) ?? "", { timeout: 120_000 }).not.toMatch(/^provisioning/);
  await expect(status).toContainText("running");

  const screen = page.getByTestId("live-screen");
  await expect(screen).toBeVisible({ timeout: 30_000 });
  // the view refreshes at least once a second
  const t0 = await screen.getAttribute("data-captured-at");
  await expect.poll(() => screen.getAttribute("data-captured-at"), { timeout: 5_000 }).not.toBe(t0);
  const before = await screen.getAttribute("src");

  const actions = page.getByRole("form", { name: "Send an action" });
  await actions.getByLabel("Command").selectOption("browser_execute");
  const script =
    "document.documentElement.innerHTML = \"<body style='margin:0;background:#e11d48'><h1 style='font:bold 140px sans-serif;color:#fff'>E2E</h1></body>\"; 'painted'";
  await actions.getByLabel("Parameters (JSON)").fill(JSON.stringify({ script }));
  await actions.getByRole("button", { name: "Send action" }).click();
  await expect(actions.getByRole("status")).toContainText("Succeeded", { timeout: 60_000 });
  await expect.poll(async () => (await screen.getAttribute("src")) !== before, { timeout: 15_000 }).toBe(true);
  // the page now shows a red screen: most sampled pixels are red
  const red = await screen.evaluate(async (img: HTMLImageElement) => {
    await img.decode();
    const c = document.createElement("canvas");
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext("2d")!;
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    let hits = 0;
    for (let i = 0; i < d.length; i += 4 * 997) {
      n++;
      if (d[i]! > 180 && d[i + 1]! < 80 && d[i + 2]! < 120) hits++;
    }
    return hits / n;
  });
  expect(red).toBeGreaterThan(0.3);
  await shot(page, "machine");

  const terminal = page.getByRole("form", { name: "Run a terminal command" });
  await terminal.getByLabel("Command").fill("echo hello-from-$USER && cd /tmp && pwd");
  await terminal.getByRole("button", { name: "Run" }).click();
  await expect(page.getByTestId("terminal-output")).toContainText("hello-from-", { timeout: 30_000 });
  await terminal.getByLabel("Command").fill("pwd");
  await terminal.getByRole("button", { name: "Run" }).click();
  await expect(page.getByTestId("terminal-output").locator("pre").last()).toHaveText("/tmp", { timeout: 30_000 });

  // the embedded noVNC view connects to the same desktop
  await page.getByRole("button", { name: "Interactive view (noVNC)" }).click();
  const vnc = page.frameLocator('iframe[title="Interactive view (noVNC)"]');
  await expect(vnc.locator("canvas").first()).toBeVisible({ timeout: 30_000 });
  await shot(page, "machine-novnc", { fullPage: false });
  await page.getByRole("button", { name: "Show the live screenshots" }).click();
  await expect(screen).toBeVisible();

  await page.getByRole("button", { name: "Snapshot", exact: true }).click();
  await expect(page.getByRole("status").filter({ hasText: /Snapshot .* created/ })).toBeVisible({ timeout: 60_000 });

  await page.getByRole("button", { name: "Terminate", exact: true }).click();
  const confirm = page.getByRole("dialog", { name: "Terminate this machine?" });
  await confirm.getByRole("button", { name: "Terminate machine" }).click();
  await expect(confirm).toBeHidden({ timeout: 60_000 });
  await expect(page.getByTestId("machine-status").first()).toContainText("terminated");
});
