// Shared steps of the console's end-to-end tests. Every test works on its own new account (unique email).
import path from "node:path";
import zlib from "node:zlib";
import { expect, type Page } from "@playwright/test";

export const PASSWORD = "e2e correct horse battery";
const SHOTS = path.resolve(import.meta.dirname, "../../docs/screenshots");

let n = 0;
export const uniqueEmail = (tag = "op") => `${tag}-${Date.now().toString(36)}-${process.pid}-${n++}@e2e.example`;

export async function signUp(page: Page, email = uniqueEmail()): Promise<{ email: string; password: string }> {
  await page.goto("/sign-up");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Create an account" }).click();
  await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
  return { email, password: PASSWORD };
}

export async function signIn(page: Page, email: string, password = PASSWORD) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/**
 * A documentation screenshot, written to docs/screenshots/<name>.png by the e2e run. Callers first wait
 * for what the picture must show; this waits until it is drawn: the fonts loaded and every image decoded.
 * Never for "networkidle": pages that poll (a machine's live screen, runs, schedules) never fall idle.
 */
export async function shot(page: Page, name: string, opts: { fullPage?: boolean } = {}) {
  await page.evaluate(async () => {
    await document.fonts.ready;
  });
  await page.waitForFunction(() => [...document.images].every((img) => img.complete && img.naturalWidth > 0));
  await page.screenshot({
    path: path.join(SHOTS, `${name}.png`),
    fullPage: opts.fullPage ?? true,
    animations: "disabled",
  });
}

/** The API's base URL (direct, not through the console). */
export const apiUrl = () => process.env.E2E_API_URL ?? "";

/** A plain white PNG as base64 (a screenshot the predict endpoint accepts). */
export function whitePng(width = 320, height = 200): string {
  const crcTable = (buf: Buffer) => zlib.crc32(buf);
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crcTable(td) >>> 0);
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 255)]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  const png = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", zlib.deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
  return png.toString("base64");
}
