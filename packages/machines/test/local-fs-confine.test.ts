// File ops on the real file system as the current user: absolute paths reach what the user may touch
// (DECISIONS.md "Compatibility amendments", machines), relative paths stay in the home; the external
// driver's opt-in `--confine-files` (homeOnly) refuses every path outside the home.
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { isCoreError } from "@cua/base/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseFileOp } from "../src/commands.ts";
import { runFileOp } from "../src/file-ops.ts";
import { LocalHomeFs } from "../src/local-fs.ts";
import type { UserIdentity } from "../src/process-utils.ts";

let root: string;
let user: UserIdentity;
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "cua-fs-confine-"));
  const info = os.userInfo();
  user = { name: info.username, uid: info.uid, gid: info.gid, home: path.join(root, "home") };
  await mkdir(user.home, { recursive: true });
});
afterAll(() => rm(root, { recursive: true, force: true }));

const write = (p: string, content: string) => parseFileOp("write", { path: p, content });

describe("LocalHomeFs", () => {
  it("default: a relative path lands in the home, an absolute one where it names", async () => {
    const fs = new LocalHomeFs(user);
    expect((await runFileOp(fs, write("notes/a.txt", "in home"))).success).toBe(true);
    expect(await readFile(path.join(user.home, "notes/a.txt"), "utf8")).toBe("in home");
    const outside = path.join(root, "outside.txt");
    expect((await runFileOp(fs, write(outside, "anywhere"))).success).toBe(true);
    expect(await readFile(outside, "utf8")).toBe("anywhere");
  });

  it("homeOnly (--confine-files): an absolute path outside the home is 422 at the path's field", async () => {
    const fs = new LocalHomeFs(user, true);
    const outside = path.join(root, "refused.txt");
    const err = await runFileOp(fs, write(outside, "no")).catch((e: unknown) => e);
    expect(isCoreError(err) && err.code).toBe("VALIDATION_ERROR");
    await expect(readFile(outside, "utf8")).rejects.toThrow();
    expect((await runFileOp(fs, write(path.join(user.home, "ok.txt"), "yes"))).success).toBe(true);
  });
});
