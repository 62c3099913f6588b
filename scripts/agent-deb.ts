/**
 * The agent's Debian package, built with plain `dpkg-deb` from a compiled binary: the binary in
 * /usr/bin, the systemd unit (deploy/outpost-agent.service), /etc/outpost/agent.yaml (a conffile: an
 * upgrade keeps the operator's edits), the support user's sshd drop-in, and the maintainer scripts
 * in deploy/debian/ (they keep the device's identity and scripts on upgrade; purge removes them).
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(import.meta.dir, "..");
const DEBIAN = path.join(ROOT, "deploy", "debian");
const DEB_ARCH = { x64: "amd64", arm64: "arm64" } as const;

export interface DebInput {
  binary: string;
  arch: keyof typeof DEB_ARCH;
  /** Debian version, e.g. 0.1.0 (a `+<commit>` is fine). */
  version: string;
  outDir: string;
}

function place(root: string, target: string, source: string | Buffer, mode: number) {
  const file = path.join(root, target);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  if (typeof source === "string") fs.copyFileSync(source, file);
  else fs.writeFileSync(file, source);
  fs.chmodSync(file, mode);
}

/** Builds `outpost-agent_<version>_<debarch>.deb` in `outDir`; returns its path. */
export function buildDeb(input: DebInput): string {
  const arch = DEB_ARCH[input.arch];
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), "outpost-agent-deb-"));
  fs.chmodSync(stage, 0o755); // the package root becomes the system root: never 0700
  try {
    place(stage, "usr/bin/outpost-agent", input.binary, 0o755);
    const unit = fs
      .readFileSync(path.join(ROOT, "deploy", "outpost-agent.service"), "utf8")
      .replaceAll("/usr/local/bin/outpost-agent", "/usr/bin/outpost-agent");
    place(stage, "lib/systemd/system/outpost-agent.service", Buffer.from(unit), 0o644);
    place(stage, "etc/outpost/agent.yaml", path.join(DEBIAN, "agent.yaml"), 0o644);
    place(
      stage,
      "etc/ssh/sshd_config.d/outpost-support.conf",
      path.join(DEBIAN, "sshd-outpost-support.conf"),
      0o644,
    );
    for (const script of ["postinst", "prerm", "postrm"]) {
      place(stage, `DEBIAN/${script}`, path.join(DEBIAN, script), 0o755);
    }
    place(
      stage,
      "DEBIAN/conffiles",
      Buffer.from("/etc/outpost/agent.yaml\n/etc/ssh/sshd_config.d/outpost-support.conf\n"),
      0o644,
    );
    const sizeKb = Math.ceil(fs.statSync(input.binary).size / 1024) + 16;
    const control = [
      "Package: outpost-agent",
      `Version: ${input.version}`,
      `Architecture: ${arch}`,
      "Maintainer: Outpost <outpost@localhost>",
      `Installed-Size: ${sizeKb}`,
      "Depends: passwd",
      "Recommends: openssh-server",
      "Section: admin",
      "Priority: optional",
      "Description: Outpost device agent",
      " Registers the device with an Outpost server, reports telemetry from sandboxed plugin",
      " scripts, runs the commands operators queue and opens the remote-access tunnel on request.",
      "",
    ].join("\n");
    place(stage, "DEBIAN/control", Buffer.from(control), 0o644);
    fs.mkdirSync(input.outDir, { recursive: true });
    const deb = path.join(input.outDir, `outpost-agent_${input.version}_${arch}.deb`);
    const result = spawnSync("dpkg-deb", ["--root-owner-group", "-Zgzip", "--build", stage, deb], {
      encoding: "utf8",
    });
    if (result.status !== 0) throw new Error(`dpkg-deb failed: ${result.stderr}`);
    return deb;
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}
