// In-memory HomeFs for mock machines: deterministic (a logical clock stamps mtimes), no symlinks. Like an
// unprivileged user, the mock may write in its home and in /tmp and /var/tmp; elsewhere a write is
// PERMISSION_DENIED and a read finds nothing.

import path from "node:path";
import type { FsEntry, FsStat, HomeFs } from "./file-ops.ts";
import { FsOpError } from "./file-ops.ts";

type Node = { type: "file"; data: Buffer; mtime: number } | { type: "directory"; mtime: number };

const EPOCH = Date.parse("2026-01-01T00:00:00.000Z");
const WRITABLE_ROOTS = ["/tmp", "/var/tmp"];

export class MockFs implements HomeFs {
  private readonly nodes = new Map<string, Node>();
  private tick = 0;

  constructor(readonly home: string) {
    this.nodes.set(home, { type: "directory", mtime: EPOCH });
    for (const d of ["Desktop", "Documents", "Downloads"])
      this.nodes.set(`${home}/${d}`, { type: "directory", mtime: EPOCH });
    for (const d of WRITABLE_ROOTS) this.nodes.set(d, { type: "directory", mtime: EPOCH });
  }

  /** the writable root holding `abs` (home, /tmp, /var/tmp), or null */
  private rootOf(abs: string): string | null {
    for (const r of [this.home, ...WRITABLE_ROOTS]) if (abs === r || abs.startsWith(`${r}/`)) return r;
    return null;
  }

  private display(abs: string): string {
    return abs === this.home || abs.startsWith(`${this.home}/`) ? path.posix.relative(this.home, abs) || "." : abs;
  }

  private now(): number {
    this.tick += 1;
    return EPOCH + this.tick * 1000;
  }

  async confine(): Promise<void> {
    // the mock has no symlinks: lexical confinement (resolveInHome) is all there is
  }

  async stat(abs: string): Promise<FsStat | null> {
    const n = this.nodes.get(abs);
    if (!n) return null;
    return { type: n.type, size: n.type === "file" ? n.data.length : 4096, mtime_ms: n.mtime };
  }

  async readFile(abs: string): Promise<Buffer> {
    const n = this.nodes.get(abs);
    if (!n) throw new FsOpError("FILE_NOT_FOUND", "no such file");
    if (n.type !== "file") throw new FsOpError("IS_A_DIRECTORY", "is a directory");
    return Buffer.from(n.data);
  }

  async writeFile(abs: string, data: Buffer, append: boolean): Promise<void> {
    if (!this.rootOf(abs) || this.rootOf(abs) === abs)
      throw new FsOpError("PERMISSION_DENIED", `${abs}: permission denied`);
    await this.mkdirp(path.posix.dirname(abs));
    const existing = this.nodes.get(abs);
    if (existing?.type === "directory") throw new FsOpError("IS_A_DIRECTORY", "is a directory");
    const body = append && existing?.type === "file" ? Buffer.concat([existing.data, data]) : Buffer.from(data);
    this.nodes.set(abs, { type: "file", data: body, mtime: this.now() });
  }

  async list(abs: string, recursive: boolean, max: number): Promise<{ entries: FsEntry[]; truncated: boolean }> {
    const prefix = `${abs}/`;
    const entries: FsEntry[] = [];
    const keys = [...this.nodes.keys()].filter((k) => k.startsWith(prefix)).sort();
    for (const k of keys) {
      const rest = k.slice(prefix.length);
      if (!recursive && rest.includes("/")) continue;
      const n = this.nodes.get(k)!;
      entries.push({
        path: this.display(k),
        name: path.posix.basename(k),
        type: n.type,
        size: n.type === "file" ? n.data.length : 4096,
        modified_at: new Date(n.mtime).toISOString(),
      });
    }
    return { entries: entries.slice(0, max), truncated: entries.length > max };
  }

  async removeFile(abs: string): Promise<void> {
    if (!this.rootOf(abs)) throw new FsOpError("PERMISSION_DENIED", `${abs}: permission denied`);
    this.nodes.delete(abs);
  }

  async removeDir(abs: string, recursive: boolean): Promise<void> {
    const root = this.rootOf(abs);
    if (!root || root === abs) throw new FsOpError("PERMISSION_DENIED", `${abs}: permission denied`);
    const children = [...this.nodes.keys()].filter((k) => k.startsWith(`${abs}/`));
    if (children.length > 0 && !recursive)
      throw new FsOpError("DIRECTORY_NOT_EMPTY", "the directory is not empty; set recursive");
    for (const k of children) this.nodes.delete(k);
    this.nodes.delete(abs);
  }

  async mkdirp(abs: string): Promise<void> {
    const root = this.rootOf(abs);
    if (!root) throw new FsOpError("PERMISSION_DENIED", `${abs}: permission denied`);
    const parts: string[] = [];
    let cur = abs;
    while (cur.startsWith(root) && cur !== root) {
      parts.unshift(cur);
      cur = path.posix.dirname(cur);
    }
    for (const p of parts) {
      const n = this.nodes.get(p);
      if (n?.type === "file") throw new FsOpError("NOT_A_DIRECTORY", `${this.display(p)} is a file`);
      if (!n) this.nodes.set(p, { type: "directory", mtime: this.now() });
    }
  }

  async download(url: string, abs: string): Promise<{ size: number; content_type: string | null }> {
    // no network in the sandbox: a deterministic body that names the URL
    const body = Buffer.from(`mock download of ${url}\n`, "utf8");
    await this.writeFile(abs, body, false);
    return { size: body.length, content_type: "text/plain" };
  }

  /** deep copy (snapshots) */
  clone(): MockFs {
    const c = new MockFs(this.home);
    c.nodes.clear();
    for (const [k, n] of this.nodes) c.nodes.set(k, n.type === "file" ? { ...n, data: Buffer.from(n.data) } : { ...n });
    c.tick = this.tick;
    return c;
  }

  isDirectory(abs: string): boolean {
    return this.nodes.get(abs)?.type === "directory";
  }

  bytes(): number {
    let n = 0;
    for (const v of this.nodes.values()) if (v.type === "file") n += v.data.length;
    return n;
  }
}
