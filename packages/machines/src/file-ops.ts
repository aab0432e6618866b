// The eleven file ops of SPEC.md on top of a small per-machine filesystem port (HomeFs).
// Providers implement HomeFs (the local desktop provider runs every primitive as the machine's own
// user; the mock keeps an in-memory tree); the semantics and result shapes live here, once.

import { validationError } from "@cua/base/errors";
import type { ParsedFileOp } from "./commands.ts";
import { MAX_FILE_BYTES } from "./commands.ts";
import { fileNameFromUrl, resolveMachinePath, safeFileName } from "./paths.ts";
import type { OpResult } from "./provider.ts";
import { opFail, opOk } from "./provider.ts";

export type EntryType = "file" | "directory" | "symlink" | "other";

export interface FsStat {
  type: EntryType;
  size: number;
  mtime_ms: number;
}

export interface FsEntry {
  /** path relative to the home directory */
  path: string;
  name: string;
  type: EntryType;
  size: number;
  modified_at: string;
}

/** An operation-level failure (becomes success: false with this code). */
export class FsOpError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface HomeFs {
  /** absolute home directory */
  readonly home: string;
  /**
   * true: absolute paths outside the home are refused too (422). The external driver sets it: its `--home`
   * is the only directory the owner let it touch. Managed and mock machines leave it unset: an absolute path
   * reaches what the machine's user may touch (DECISIONS.md "Compatibility amendments").
   */
  readonly homeOnly?: boolean;
  /**
   * Rejects (422) a path whose symlinks lead outside the home. mode "target" checks the path itself
   * with every symlink followed; "parent" checks only its directory (for deleting a link itself).
   */
  confine(abs: string, mode: "target" | "parent", field: string): Promise<void>;
  /** lstat when follow is false; null when the path does not exist */
  stat(abs: string, follow: boolean): Promise<FsStat | null>;
  readFile(abs: string, maxBytes: number): Promise<Buffer>;
  /** creates missing parent directories */
  writeFile(abs: string, data: Buffer, append: boolean): Promise<void>;
  /** entries below a directory (paths relative to home), at most `max` */
  list(abs: string, recursive: boolean, max: number): Promise<{ entries: FsEntry[]; truncated: boolean }>;
  removeFile(abs: string): Promise<void>;
  removeDir(abs: string, recursive: boolean): Promise<void>;
  mkdirp(abs: string): Promise<void>;
  /** fetches an http(s) URL into abs */
  download(url: string, abs: string, timeoutMs: number): Promise<{ size: number; content_type: string | null }>;
}

export const DOWNLOADS_DIR = "Downloads";
export const MAX_LIST_ENTRIES = 10_000;
const DOWNLOAD_TIMEOUT_MS = 120_000;

function decodeContent(content: string, encoding: "utf8" | "base64"): Buffer {
  if (encoding === "utf8") return Buffer.from(content, "utf8");
  const compact = content.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) {
    throw validationError("parameters.content", "content is not valid base64");
  }
  return Buffer.from(compact, "base64");
}

function countOccurrences(haystack: string, needle: string): number {
  let n = 0;
  let i = haystack.indexOf(needle);
  while (i !== -1) {
    n++;
    i = haystack.indexOf(needle, i + needle.length);
  }
  return n;
}

async function uniqueName(fs: HomeFs, dirAbs: string, name: string): Promise<string> {
  if (!(await fs.stat(`${dirAbs}/${name}`, false))) return name;
  const dot = name.lastIndexOf(".");
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : "";
  for (let i = 1; i < 1000; i++) {
    const candidate = `${stem} (${i})${ext}`;
    if (!(await fs.stat(`${dirAbs}/${candidate}`, false))) return candidate;
  }
  throw new FsOpError("DOWNLOAD_FAILED", "Too many files with this name in Downloads.");
}

/** Runs one parsed file op. Path escapes are 422 VALIDATION_ERROR; file-level problems are success: false. */
export async function runFileOp(fs: HomeFs, op: ParsedFileOp): Promise<OpResult> {
  try {
    return await fileOp(fs, op);
  } catch (e) {
    if (e instanceof FsOpError) return opFail(e.code, e.message);
    throw e;
  }
}

async function target(fs: HomeFs, input: string, mode: "target" | "parent" = "target", field = "parameters.path") {
  const p = resolveMachinePath(fs.home, input, field);
  if (!p.inHome && fs.homeOnly) throw validationError(field, "path is outside the machine's home directory");
  // home-relative paths stay in the home (symlinks included); an absolute path is the machine user's own
  // business: every op runs as that user, so it reaches what the user may touch and nothing more
  if (p.inHome) await fs.confine(p.abs, mode, field);
  return p;
}

async function fileOp(fs: HomeFs, op: ParsedFileOp): Promise<OpResult> {
  switch (op.op) {
    case "read": {
      const p = await target(fs, op.params.path);
      const st = await fs.stat(p.abs, true);
      if (!st) throw new FsOpError("FILE_NOT_FOUND", `${p.rel} does not exist.`);
      if (st.type === "directory") throw new FsOpError("IS_A_DIRECTORY", `${p.rel} is a directory.`);
      if (st.size > MAX_FILE_BYTES)
        throw new FsOpError("FILE_TOO_LARGE", `${p.rel} is larger than ${MAX_FILE_BYTES} bytes.`);
      const data = await fs.readFile(p.abs, MAX_FILE_BYTES);
      return opOk({
        path: p.rel,
        content: data.toString(op.params.encoding === "base64" ? "base64" : "utf8"),
        encoding: op.params.encoding,
        size: data.length,
      });
    }
    case "exists": {
      const p = await target(fs, op.params.path);
      const st = await fs.stat(p.abs, false);
      return opOk({ path: p.rel, exists: st !== null, type: st?.type ?? null });
    }
    case "list":
    case "list-directory": {
      const p = await target(fs, op.params.path);
      const st = await fs.stat(p.abs, true);
      if (!st) throw new FsOpError("FILE_NOT_FOUND", `${p.rel} does not exist.`);
      if (st.type !== "directory") {
        if (op.op === "list-directory") throw new FsOpError("NOT_A_DIRECTORY", `${p.rel} is not a directory.`);
        const name = p.rel.split("/").pop() ?? p.rel;
        return opOk({
          path: p.rel,
          entries: [
            { path: p.rel, name, type: st.type, size: st.size, modified_at: new Date(st.mtime_ms).toISOString() },
          ],
          truncated: false,
        });
      }
      const { entries, truncated } = await fs.list(p.abs, op.params.recursive, MAX_LIST_ENTRIES);
      return opOk({ path: p.rel, entries, truncated });
    }
    case "download": {
      const dir = await target(fs, DOWNLOADS_DIR);
      await fs.mkdirp(dir.abs);
      const wanted = op.params.filename ? safeFileName(op.params.filename) : fileNameFromUrl(op.params.url);
      const name = await uniqueName(fs, dir.abs, wanted);
      const p = await target(fs, `${DOWNLOADS_DIR}/${name}`);
      const r = await fs.download(op.params.url, p.abs, DOWNLOAD_TIMEOUT_MS);
      return opOk({ path: p.rel, url: op.params.url, size: r.size, content_type: r.content_type });
    }
    case "list-downloads": {
      const dir = await target(fs, DOWNLOADS_DIR);
      const st = await fs.stat(dir.abs, true);
      if (!st) return opOk({ path: dir.rel, entries: [], truncated: false });
      const { entries, truncated } = await fs.list(dir.abs, false, MAX_LIST_ENTRIES);
      return opOk({ path: dir.rel, entries, truncated });
    }
    case "write":
    case "append": {
      const p = await target(fs, op.params.path);
      if (p.rel === ".") throw validationError("parameters.path", "path is the home directory itself");
      const data = decodeContent(op.params.content, op.params.encoding);
      if (data.length > MAX_FILE_BYTES)
        throw validationError("parameters.content", `content is larger than ${MAX_FILE_BYTES} bytes`);
      const before = await fs.stat(p.abs, true);
      if (before?.type === "directory") throw new FsOpError("IS_A_DIRECTORY", `${p.rel} is a directory.`);
      if (op.op === "append" && before && before.size + data.length > MAX_FILE_BYTES) {
        throw new FsOpError("FILE_TOO_LARGE", `${p.rel} would grow beyond ${MAX_FILE_BYTES} bytes.`);
      }
      await fs.writeFile(p.abs, data, op.op === "append");
      if (op.op === "write") return opOk({ path: p.rel, size: data.length, created: before === null });
      return opOk({
        path: p.rel,
        size: (before?.size ?? 0) + data.length,
        appended_bytes: data.length,
        created: before === null,
      });
    }
    case "edit": {
      const p = await target(fs, op.params.path);
      const st = await fs.stat(p.abs, true);
      if (!st) throw new FsOpError("FILE_NOT_FOUND", `${p.rel} does not exist.`);
      if (st.type === "directory") throw new FsOpError("IS_A_DIRECTORY", `${p.rel} is a directory.`);
      if (st.size > MAX_FILE_BYTES)
        throw new FsOpError("FILE_TOO_LARGE", `${p.rel} is larger than ${MAX_FILE_BYTES} bytes.`);
      const text = (await fs.readFile(p.abs, MAX_FILE_BYTES)).toString("utf8");
      const n = countOccurrences(text, op.params.old_text);
      if (n === 0) throw new FsOpError("EDIT_TEXT_NOT_FOUND", "old_text does not occur in the file.");
      if (n > 1 && !op.params.replace_all) {
        throw new FsOpError("EDIT_TEXT_AMBIGUOUS", `old_text occurs ${n} times; make it unique or set replace_all.`);
      }
      const updated = op.params.replace_all
        ? text.split(op.params.old_text).join(op.params.new_text)
        : text.replace(op.params.old_text, () => op.params.new_text);
      const data = Buffer.from(updated, "utf8");
      if (data.length > MAX_FILE_BYTES) throw new FsOpError("FILE_TOO_LARGE", "the edited file would be too large.");
      await fs.writeFile(p.abs, data, false);
      return opOk({ path: p.rel, replacements: op.params.replace_all ? n : 1, size: data.length });
    }
    case "delete": {
      const p = await target(fs, op.params.path, "parent");
      if (p.rel === ".") throw validationError("parameters.path", "path is the home directory itself");
      const st = await fs.stat(p.abs, false);
      if (!st) throw new FsOpError("FILE_NOT_FOUND", `${p.rel} does not exist.`);
      if (st.type === "directory")
        throw new FsOpError("IS_A_DIRECTORY", `${p.rel} is a directory; use delete-directory.`);
      await fs.removeFile(p.abs);
      return opOk({ path: p.rel, deleted: true });
    }
    case "delete-directory": {
      const p = await target(fs, op.params.path, "parent");
      if (p.rel === ".") throw validationError("parameters.path", "the home directory itself cannot be deleted");
      const st = await fs.stat(p.abs, false);
      if (!st) throw new FsOpError("FILE_NOT_FOUND", `${p.rel} does not exist.`);
      if (st.type !== "directory") throw new FsOpError("NOT_A_DIRECTORY", `${p.rel} is not a directory.`);
      await fs.removeDir(p.abs, op.params.recursive);
      return opOk({ path: p.rel, deleted: true, recursive: op.params.recursive });
    }
  }
}
