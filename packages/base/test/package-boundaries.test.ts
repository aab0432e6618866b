// Issue 11 "packages/core split along its real seams": which package may import which. The rules are the
// design (ARCHITECTURE.md "Packages"); this test reads every source file the way a reviewer would and
// fails on an import that crosses a seam the wrong way, on a subpath a package does not export, and on an
// import cycle between packages.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/** package dir -> the @cua packages its sources (src and test) may import */
const ALLOWED: Record<string, string[]> = {
  "packages/base": [],
  "packages/engines": ["base"],
  "packages/machines": ["base"],
  "packages/db": [],
  "packages/executor": ["db", "executor"],
  "packages/core": ["base", "engines", "machines", "db", "executor"],
  "apps/driver": ["base", "machines"],
};

/** the packages split out of the old core (and the executor): explicit exports maps, checked below */
const EXPLICIT = ["base", "engines", "machines", "core", "executor"];

function* sources(dir: string): Generator<string> {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) {
      if (e !== "node_modules" && e !== "generated" && e !== "fixtures") yield* sources(p);
    } else if (/\.(ts|tsx|mts)$/.test(p)) yield p;
  }
}

const IMPORT = /(?:from\s+|import\s*\(\s*|import\s+)["']@cua\/([a-z-]+)(?:\/([^"']+))?["']/g;

function importsOf(pkgDir: string): { file: string; pkg: string; sub: string | undefined }[] {
  const out: { file: string; pkg: string; sub: string | undefined }[] = [];
  for (const area of ["src", "test"]) {
    for (const file of sources(path.join(ROOT, pkgDir, area))) {
      for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
        out.push({ file: path.relative(ROOT, file), pkg: m[1]!, sub: m[2] });
      }
    }
  }
  return out;
}

function exportsOf(pkg: string): Set<string> {
  for (const base of ["packages", "apps"]) {
    try {
      const j = JSON.parse(readFileSync(path.join(ROOT, base, pkg, "package.json"), "utf8"));
      return new Set(Object.keys(j.exports ?? {}));
    } catch {}
  }
  return new Set();
}

describe("package seams (ARCHITECTURE.md Packages)", () => {
  it("each package imports only the packages below it", () => {
    const wrong: string[] = [];
    let seen = 0;
    for (const [dir, allowed] of Object.entries(ALLOWED)) {
      const own = path.basename(dir);
      for (const imp of importsOf(dir)) {
        seen++;
        if (imp.pkg !== own && !allowed.includes(imp.pkg)) wrong.push(`${imp.file} imports @cua/${imp.pkg}`);
      }
    }
    expect(seen).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  });

  it("the external driver runs on base and the machine toolkit only (no domain, no database)", () => {
    const used = new Set(importsOf("apps/driver").map((i) => i.pkg));
    expect([...used].sort()).toEqual(["base", "machines"]);
    const pj = JSON.parse(readFileSync(path.join(ROOT, "apps/driver/package.json"), "utf8"));
    expect(Object.keys(pj.dependencies).filter((d) => d.startsWith("@cua/"))).toEqual(["@cua/base", "@cua/machines"]);
  });

  it("every import of a domain or toolkit package names a subpath in its exports map", () => {
    const dirs = [...Object.keys(ALLOWED), "apps/api", "apps/web", "inngest", "bench", "e2e"];
    const missing: string[] = [];
    for (const dir of dirs) {
      const own = path.basename(dir);
      const imps =
        dir === "bench" || dir === "e2e" || dir === "inngest" || dir === "apps/web"
          ? [...sources(path.join(ROOT, dir))].flatMap((file) =>
              [...readFileSync(file, "utf8").matchAll(IMPORT)].map((m) => ({
                file: path.relative(ROOT, file),
                pkg: m[1]!,
                sub: m[2],
              })),
            )
          : importsOf(dir);
      for (const imp of imps) {
        if (imp.pkg === own || !EXPLICIT.includes(imp.pkg)) continue;
        const key = imp.sub ? `./${imp.sub}` : ".";
        if (!exportsOf(imp.pkg).has(key)) missing.push(`${imp.file}: @cua/${imp.pkg}${imp.sub ? `/${imp.sub}` : ""}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("the exports maps are explicit (no wildcard subpaths)", () => {
    for (const pkg of EXPLICIT) {
      const keys = [...exportsOf(pkg)];
      expect(keys.length, pkg).toBeGreaterThan(0);
      expect(
        keys.filter((k) => k.includes("*")),
        pkg,
      ).toEqual([]);
    }
  });
});
