// What the local desktop provider needs on the host, and what is missing (issue 10: a machine that cannot
// start must say which piece is missing instead of crashing the service). Each program maps to the
// Debian package scripts/install-desktop-deps.sh installs.

import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";
import { DESKTOP_APPS } from "./desktop-apps.ts";

/** Directories searched for the provider's programs (root's PATH; the machines' own PATH is a subset). */
export const DEFAULT_SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export type RequirementRole = "machine" | "desktop" | "screenshot" | "connection" | "extra";

export interface Requirement {
  /** program name as spawned */
  binary: string;
  /** Debian package that provides it */
  package: string;
  /**
   * machine: every machine; desktop: desktop_enabled machines; screenshot: one of them suffices; connection:
   * VNC; extra: the desktop's own programs (terminal, file manager, text editor: desktop-apps.ts), reported
   * by GET /v1/machines/health when missing but never keeping a desktop from starting
   */
  role: RequirementRole;
}

export const REQUIREMENTS: readonly Requirement[] = [
  { binary: "useradd", package: "passwd", role: "machine" },
  { binary: "userdel", package: "passwd", role: "machine" },
  { binary: "bash", package: "bash", role: "machine" },
  { binary: "tar", package: "tar", role: "machine" },
  { binary: "curl", package: "curl", role: "machine" },
  { binary: "Xvfb", package: "xvfb", role: "desktop" },
  { binary: "openbox", package: "openbox", role: "desktop" },
  { binary: "xdotool", package: "xdotool", role: "desktop" },
  { binary: "chromium", package: "chromium", role: "desktop" },
  { binary: "scrot", package: "scrot", role: "screenshot" },
  { binary: "import", package: "imagemagick", role: "screenshot" },
  { binary: "x11vnc", package: "x11vnc", role: "connection" },
  { binary: "websockify", package: "websockify", role: "connection" },
  ...DESKTOP_APPS.filter((a) => a.command !== null).map((a) => ({
    binary: a.program,
    package: a.package,
    role: "extra" as const,
  })),
];

/** Absolute path of an executable: `name` itself when it contains a slash, else the first hit on searchPath. */
export function resolveBinary(name: string, searchPath: string = DEFAULT_SEARCH_PATH): string | null {
  const candidates = name.includes("/")
    ? [name]
    : searchPath
        .split(":")
        .filter(Boolean)
        .map((d) => path.join(d, name));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      if (statSync(c).isFile()) return c;
    } catch {}
  }
  return null;
}

export interface MissingRequirement {
  binary: string;
  package: string;
  role: RequirementRole;
  /** where it was looked for: an absolute path, or "PATH <dirs>" */
  looked_in: string;
}

export interface RequirementsReport {
  /** resolved absolute paths, by program name (only those found) */
  paths: Record<string, string>;
  missing: MissingRequirement[];
}

/**
 * Looks every program up. `overrides` maps a program name to the path to use instead (e.g. chromium ->
 * /usr/lib/chromium/chromium); screenshot programs count as missing only when neither is found.
 */
export function checkRequirements(
  searchPath: string = DEFAULT_SEARCH_PATH,
  overrides: Record<string, string> = {},
): RequirementsReport {
  const paths: Record<string, string> = {};
  const missing: MissingRequirement[] = [];
  for (const r of REQUIREMENTS) {
    const name = overrides[r.binary] ?? r.binary;
    const found = resolveBinary(name, searchPath);
    if (found) paths[r.binary] = found;
    else missing.push({ ...r, looked_in: name.includes("/") ? name : `PATH ${searchPath}` });
  }
  const shots = REQUIREMENTS.filter((r) => r.role === "screenshot").map((r) => r.binary);
  const anyShot = shots.some((b) => paths[b]);
  return { paths, missing: missing.filter((m) => m.role !== "screenshot" || !anyShot) };
}

/** "Xvfb (Debian package xvfb), chromium (Debian package chromium)" */
export function describeMissing(missing: MissingRequirement[]): string {
  return missing
    .map((m) => `${m.binary} (Debian package ${m.package})${m.looked_in.startsWith("/") ? ` at ${m.looked_in}` : ""}`)
    .join(", ");
}

/** The sentence a machine's status_message carries when programs are missing. */
export function missingMessage(missing: MissingRequirement[]): string {
  const pkgs = [...new Set(missing.map((m) => m.package))].join(" ");
  return `The desktop cannot start on this host: missing ${describeMissing(missing)}. Install the desktop packages (scripts/install-desktop-deps.sh, or apt-get install ${pkgs}) and try again.`;
}
