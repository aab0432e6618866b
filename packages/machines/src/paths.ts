// Lexical confinement of file-op paths to a machine's home directory. Shared by every provider.
// Symlink checks (realpath of the parent and of the target) are the provider's job on top of this.

import path from "node:path";
import { validationError } from "@cua/base/errors";

export interface HomePath {
  /** absolute path on the machine */
  abs: string;
  /** path relative to the home directory ("." for the home itself) */
  rel: string;
}

export const MAX_PATH_LENGTH = 4096;

/**
 * Resolves `input` against `home`. Relative paths, `~` and `~/x` are home-relative; an absolute path is
 * accepted only when it lies inside the home. Anything that leaves the home (`..`, other absolute
 * paths) is a 422 VALIDATION_ERROR at `field`.
 */
export function resolveInHome(home: string, input: string, field = "parameters.path"): HomePath {
  if (typeof input !== "string" || input.length === 0) throw validationError(field, "path must be a non-empty string");
  if (input.length > MAX_PATH_LENGTH) throw validationError(field, `path is longer than ${MAX_PATH_LENGTH} characters`);
  if (input.includes("\0")) throw validationError(field, "path contains a NUL byte");
  const root = path.posix.resolve(home);
  let candidate = input;
  if (candidate === "~") candidate = ".";
  else if (candidate.startsWith("~/")) candidate = candidate.slice(2) || ".";
  else if (candidate.startsWith("~")) throw validationError(field, "only ~ (this machine's home) is supported");
  const abs = path.posix.resolve(root, candidate);
  if (!isInside(root, abs)) {
    throw validationError(field, "path is outside the machine's home directory");
  }
  const rel = path.posix.relative(root, abs) || ".";
  return { abs, rel };
}

/**
 * A file-op path on the machine (DECISIONS.md "Compatibility amendments (2026-11-25)"): an absolute path is
 * taken as it is (normalised) and confined by what the machine's user may touch, not by its home; relative
 * paths, `~` and `~/x` are home-relative and may not leave the home. `rel` is the home-relative form for paths
 * inside the home, else the absolute path.
 */
export function resolveMachinePath(
  home: string,
  input: string,
  field = "parameters.path",
): HomePath & { inHome: boolean } {
  if (typeof input === "string" && input.startsWith("/") && input.length <= MAX_PATH_LENGTH && !input.includes("\0")) {
    const root = path.posix.resolve(home);
    const abs = path.posix.resolve(input);
    const inHome = isInside(root, abs);
    return { abs, rel: inHome ? path.posix.relative(root, abs) || "." : abs, inHome };
  }
  return { ...resolveInHome(home, input, field), inHome: true };
}

/** true when `target` is `root` or below it (both absolute, normalised) */
export function isInside(root: string, target: string): boolean {
  return target === root || target.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/** a file name safe to create in Downloads from a URL or a caller-supplied name */
export function safeFileName(name: string, fallback = "download"): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  let cleaned = base
    .replace(/[^A-Za-z0-9._ -]/g, "_")
    .replace(/^[.\s]+/, "")
    .trim();
  if (cleaned.length > 200) cleaned = cleaned.slice(0, 200);
  return cleaned.length > 0 ? cleaned : fallback;
}

export function fileNameFromUrl(url: string): string {
  try {
    const u = new URL(url);
    const last = decodeURIComponent(u.pathname.split("/").filter(Boolean).pop() ?? "");
    return safeFileName(last, u.hostname ? `${safeFileName(u.hostname)}.html` : "download");
  } catch {
    return "download";
  }
}
