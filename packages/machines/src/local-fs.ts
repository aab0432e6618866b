// HomeFs for local machines. Two layers keep file ops inside the home directory:
//  1. policy: the lexical check (paths.ts) plus the realpath of the target and of its parent, with
//     every symlink followed, must stay inside the home; otherwise 422 VALIDATION_ERROR;
//  2. privilege: every read and write runs as the machine's own unprivileged user (coreutils spawned
//     with its uid/gid), so a symlink swapped in after the check can reach nothing that user could not.

import { lstat, readlink, realpath } from "node:fs/promises";
import path from "node:path";
import { validationError } from "@cua/base/errors";
import type { EntryType, FsEntry, FsStat, HomeFs } from "./file-ops.ts";
import { FsOpError } from "./file-ops.ts";
import { isInside } from "./paths.ts";
import type { RunResult, UserIdentity } from "./process-utils.ts";
import { run } from "./process-utils.ts";

const OP_TIMEOUT_MS = 60_000;

function errorFrom(r: RunResult, what: string): FsOpError {
  const msg = r.stderr.trim().split("\n").pop() ?? "";
  if (r.timedOut) return new FsOpError("TIMEOUT", `${what}: timed out`);
  if (/No such file or directory/.test(msg))
    return new FsOpError("FILE_NOT_FOUND", `${what}: no such file or directory`);
  if (/Permission denied/.test(msg)) return new FsOpError("PERMISSION_DENIED", `${what}: permission denied`);
  if (/Not a directory/.test(msg)) return new FsOpError("NOT_A_DIRECTORY", `${what}: not a directory`);
  if (/Is a directory/.test(msg)) return new FsOpError("IS_A_DIRECTORY", `${what}: is a directory`);
  if (/Directory not empty/.test(msg))
    return new FsOpError("DIRECTORY_NOT_EMPTY", `${what}: the directory is not empty; set recursive`);
  if (/No space left/.test(msg)) return new FsOpError("NO_SPACE", `${what}: no space left on the device`);
  return new FsOpError("IO_ERROR", `${what}: ${msg || `exit ${r.code}`}`);
}

function typeOf(c: string): EntryType {
  if (c === "f" || c.startsWith("regular")) return "file";
  if (c === "d" || c === "directory") return "directory";
  if (c === "l" || c === "symbolic link") return "symlink";
  return "other";
}

/** The path with every symlink resolved, also when its last components do not exist yet. */
async function finalPath(p: string, depth = 0): Promise<string> {
  if (depth > 40) throw new FsOpError("SYMLINK_LOOP", "too many levels of symbolic links");
  let cur = p;
  for (let hops = 0; hops < 40; hops++) {
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(cur);
    } catch {
      const parent = path.posix.dirname(cur);
      if (parent === cur) return cur;
      return path.posix.join(await finalPath(parent, depth + 1), path.posix.basename(cur));
    }
    if (st.isSymbolicLink()) {
      cur = path.posix.resolve(path.posix.dirname(cur), await readlink(cur));
      continue;
    }
    try {
      return await realpath(cur);
    } catch {
      return cur;
    }
  }
  throw new FsOpError("SYMLINK_LOOP", "too many levels of symbolic links");
}

export class LocalHomeFs implements HomeFs {
  private realHome: string | null = null;

  /** homeOnly: refuse absolute paths outside the home too (the external driver's `--home` promise) */
  constructor(
    private readonly user: UserIdentity,
    readonly homeOnly = false,
  ) {}

  get home(): string {
    return this.user.home;
  }

  private sh(script: string, args: string[], input?: Buffer, maxStdout?: number): Promise<RunResult> {
    return run("/bin/sh", ["-c", `umask 022; ${script}`, "sh", ...args], {
      user: this.user,
      input,
      timeoutMs: OP_TIMEOUT_MS,
      ...(maxStdout !== undefined ? { maxStdout } : {}),
    });
  }

  async confine(abs: string, mode: "target" | "parent", field: string): Promise<void> {
    this.realHome ??= await realpath(this.user.home);
    const checked = mode === "parent" ? path.posix.dirname(abs) : abs;
    if (mode === "parent" && abs === this.user.home) return;
    const fp = await finalPath(checked);
    if (!isInside(this.realHome, fp)) {
      throw validationError(field, "path leads outside the machine's home directory (through a symbolic link)");
    }
  }

  async stat(abs: string, follow: boolean): Promise<FsStat | null> {
    const r = await this.sh(`exec stat ${follow ? "-L " : ""}-c '%F|%s|%Y' -- "$1"`, [abs]);
    if (r.code !== 0) {
      const e = errorFrom(r, "stat");
      if (e.code === "FILE_NOT_FOUND" || e.code === "NOT_A_DIRECTORY") return null;
      throw e;
    }
    const [kind = "", size = "0", mtime = "0"] = r.stdout.toString("utf8").trim().split("|");
    return { type: typeOf(kind), size: Number(size), mtime_ms: Number(mtime) * 1000 };
  }

  async readFile(abs: string, maxBytes: number): Promise<Buffer> {
    const r = await this.sh(`exec head -c ${maxBytes + 1} -- "$1"`, [abs], undefined, maxBytes + 1);
    if (r.code !== 0) throw errorFrom(r, "read");
    if (r.stdout.length > maxBytes || r.overflow)
      throw new FsOpError("FILE_TOO_LARGE", `the file is larger than ${maxBytes} bytes`);
    return r.stdout;
  }

  async writeFile(abs: string, data: Buffer, append: boolean): Promise<void> {
    const r = await this.sh(`mkdir -p -- "$(dirname -- "$1")" && exec cat ${append ? ">>" : ">"} "$1"`, [abs], data);
    if (r.code !== 0) throw errorFrom(r, append ? "append" : "write");
  }

  async list(abs: string, recursive: boolean, max: number): Promise<{ entries: FsEntry[]; truncated: boolean }> {
    const depth = recursive ? "" : "-maxdepth 1";
    const r = await this.sh(
      `find -H "$1" -mindepth 1 ${depth} -printf '%y\\t%s\\t%T@\\t%P\\0' | head -z -n ${max + 1}`,
      [abs],
    );
    if (r.code !== 0 && r.stdout.length === 0) throw errorFrom(r, "list");
    const base = path.posix.relative(this.user.home, abs);
    const records = r.stdout
      .toString("utf8")
      .split("\0")
      .filter((s) => s.length > 0);
    const entries = records.slice(0, max).map((rec) => {
      const [t = "", size = "0", mtime = "0", ...rest] = rec.split("\t");
      const rel = rest.join("\t");
      return {
        path: base ? `${base}/${rel}` : rel,
        name: path.posix.basename(rel),
        type: typeOf(t),
        size: Number(size),
        modified_at: new Date(Math.round(Number(mtime) * 1000)).toISOString(),
      };
    });
    entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { entries, truncated: records.length > max };
  }

  async removeFile(abs: string): Promise<void> {
    const r = await this.sh(`exec rm -- "$1"`, [abs]);
    if (r.code !== 0) throw errorFrom(r, "delete");
  }

  async removeDir(abs: string, recursive: boolean): Promise<void> {
    const r = await this.sh(recursive ? `exec rm -rf -- "$1"` : `exec rmdir -- "$1"`, [abs]);
    if (r.code !== 0) throw errorFrom(r, "delete-directory");
  }

  async mkdirp(abs: string): Promise<void> {
    const r = await this.sh(`exec mkdir -p -- "$1"`, [abs]);
    if (r.code !== 0) throw errorFrom(r, "mkdir");
  }

  async download(url: string, abs: string, timeoutMs: number): Promise<{ size: number; content_type: string | null }> {
    // curl runs as the machine user: the fetch has the machine's network identity, not the service's
    const secs = Math.max(1, Math.floor(timeoutMs / 1000));
    const r = await run(
      "/usr/bin/curl",
      [
        "-fsSL",
        "--proto",
        "=http,https",
        "--proto-redir",
        "=http,https",
        "--max-redirs",
        "10",
        "--max-filesize",
        String(1024 * 1024 * 1024),
        "--max-time",
        String(secs),
        "-o",
        abs,
        "-w",
        "%{content_type}",
        url,
      ],
      { user: this.user, timeoutMs: timeoutMs + 5000 },
    );
    if (r.code !== 0) {
      await this.sh(`exec rm -f -- "$1"`, [abs]);
      throw new FsOpError(
        "DOWNLOAD_FAILED",
        `download failed: ${r.stderr.trim().split("\n").pop() || `curl exit ${r.code}`}`,
      );
    }
    const st = await this.stat(abs, false);
    const ct = r.stdout.toString("utf8").trim();
    return { size: st?.size ?? 0, content_type: ct.length > 0 ? ct : null };
  }
}
