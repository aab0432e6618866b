// Email and password rules shared by sign-up and sign-in.
import { validationError } from "@cua/base/errors";

export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 256;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Trimmed and lowercased; 422 VALIDATION_ERROR at `path` when it is not an address. */
export function normalizeEmail(raw: string, path = "body.email"): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL_RE.test(email)) throw validationError(path, "must be an email address");
  return email;
}

export function checkNewPassword(password: string, path = "body.password"): void {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw validationError(path, `must be at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw validationError(path, `must be at most ${MAX_PASSWORD_LENGTH} characters`);
  }
}
