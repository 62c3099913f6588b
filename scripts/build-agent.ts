#!/usr/bin/env bun
/**
 * `npm run build:agent [-- --arch x64,arm64]`: one self-contained agent binary per Linux architecture,
 * `dist/outpost-agent-linux-<arch>`, each with a `.sha256` file (sha256sum format), a Debian package
 * `dist/outpost-agent_<version>_<amd64|arm64>.deb` (scripts/agent-deb.ts) and a version stamp
 * (`outpost-agent --version` prints `<version>+<commit> (<arch>, built <date>)`). `dist/outpost-agent`
 * links to this machine's build. A build for another architecture uses Bun's runtime for it as
 * published on npm (`@oven/bun-linux-<cpu>`, same version as ours), fetched once with `npm pack`
 * into `.cache/` — no other download.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AGENT_VERSION } from "../agent/version";
import { buildDeb } from "./agent-deb";

const ROOT = path.resolve(import.meta.dir, "..");
const DIST = path.join(ROOT, "dist");
const CACHE = path.join(ROOT, ".cache", "bun-runtimes");
const ARCHES = { x64: "x64", arm64: "aarch64" } as const;
type Arch = keyof typeof ARCHES;

function usage(problem?: string): never {
  if (problem) console.error(`build:agent: ${problem}`);
  console.error("usage: npm run build:agent [-- --arch x64,arm64]   (default: both)");
  process.exit(problem ? 2 : 0);
}

function parseArches(argv: string[]): Arch[] {
  const index = argv.indexOf("--arch");
  if (argv.includes("--help") || argv.includes("-h")) usage();
  if (index < 0) return ["x64", "arm64"];
  const list = (argv[index + 1] ?? "").split(",").filter(Boolean);
  if (list.length === 0) usage("--arch needs a list such as x64,arm64");
  for (const arch of list) if (!(arch in ARCHES)) usage(`unknown architecture "${arch}" (x64 or arm64)`);
  return list as Arch[];
}

const hostArch: Arch | undefined = os.arch() === "x64" ? "x64" : os.arch() === "arm64" ? "arm64" : undefined;

function run(command: string, args: string[], cwd = ROOT) {
  const result = spawnSync(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (result.status !== 0) {
    console.error(result.stdout, result.stderr);
    throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status})`);
  }
  return result.stdout.trim();
}

/** Bun's runtime for `arch`, from npm (cached); undefined for this machine's own architecture. */
function runtimeFor(arch: Arch): string | undefined {
  if (arch === hostArch) return undefined;
  const dir = path.join(CACHE, `${Bun.version}-linux-${arch}`);
  const binary = path.join(dir, "package", "bin", "bun");
  if (fs.existsSync(binary)) return binary;
  fs.mkdirSync(dir, { recursive: true });
  const spec = `@oven/bun-linux-${ARCHES[arch]}@${Bun.version}`;
  console.log(`build:agent: fetching Bun ${Bun.version} for linux-${arch} (npm pack ${spec})`);
  const tarball = run("npm", ["pack", spec, "--silent", "--pack-destination", dir]).split("\n").pop()!;
  run("tar", ["-xzf", path.join(dir, tarball), "-C", dir]);
  fs.rmSync(path.join(dir, tarball));
  if (!fs.existsSync(binary)) throw new Error(`${spec} has no bin/bun`);
  fs.chmodSync(binary, 0o755);
  return binary;
}

function commit(): string {
  try {
    return run("git", ["rev-parse", "--short=10", "HEAD"]);
  } catch {
    return "unknown";
  }
}

function build(arch: Arch, stamp: string): string {
  const outfile = path.join(DIST, `outpost-agent-linux-${arch}`);
  const runtime = runtimeFor(arch);
  const args = [
    "build",
    "--compile",
    `--target=bun-linux-${arch}`,
    "--minify",
    "--external",
    "cpu-features",
    `--define`,
    `OUTPOST_AGENT_BUILD=${JSON.stringify(`${stamp} (linux-${arch})`)}`,
    ...(runtime ? [`--compile-executable-path=${runtime}`] : []),
    path.join(ROOT, "agent/main.ts"),
    "--outfile",
    outfile,
  ];
  const started = performance.now();
  run(process.execPath, args);
  const bytes = fs.readFileSync(outfile);
  const sha = createHash("sha256").update(bytes).digest("hex");
  fs.writeFileSync(`${outfile}.sha256`, `${sha}  ${path.basename(outfile)}\n`);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `build:agent: ${path.relative(ROOT, outfile)}  ${(bytes.length / 2 ** 20).toFixed(1)} MiB  sha256 ${sha.slice(0, 16)}…  (${seconds} s)`,
  );
  return outfile;
}

const arches = parseArches(process.argv.slice(2));
fs.mkdirSync(DIST, { recursive: true });
const stamp = `${AGENT_VERSION}+${commit()}, built ${new Date().toISOString().slice(0, 10)}`;
const canPackage = spawnSync("dpkg-deb", ["--version"]).status === 0;
if (!canPackage) console.log("build:agent: no dpkg-deb here: skipping the Debian packages");
for (const arch of arches) {
  const outfile = build(arch, stamp);
  if (canPackage) {
    const deb = buildDeb({ binary: outfile, arch, version: AGENT_VERSION, outDir: DIST });
    console.log(
      `build:agent: ${path.relative(ROOT, deb)}  ${(fs.statSync(deb).size / 2 ** 20).toFixed(1)} MiB`,
    );
  }
  if (arch === hostArch) {
    const link = path.join(DIST, "outpost-agent");
    fs.rmSync(link, { force: true });
    fs.symlinkSync(path.basename(outfile), link);
  }
}
