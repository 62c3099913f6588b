import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const UNIT = path.resolve(import.meta.dir, "../../deploy/outpost-agent.service");

/** What /downloads serves: the builds of `npm run build:agent` (binaries, packages) and the unit. */
const BINARY = /^outpost-agent-linux-(x64|arm64)$/;
const PACKAGE = /^outpost-agent_(amd64|arm64)\.deb$/;
export const AGENT_ARCHES = ["x64", "arm64"] as const;
export type AgentArch = (typeof AGENT_ARCHES)[number];

/** The file behind a download name, or undefined (unknown name, or not built on this server). */
export function resolveDownload(dist: string, name: string): string | undefined {
  if (name === "outpost-agent.service") return UNIT;
  if (BINARY.test(name)) return existsSync(path.join(dist, name)) ? path.join(dist, name) : undefined;
  const debarch = PACKAGE.exec(name)?.[1];
  if (!debarch || !existsSync(dist)) return undefined;
  // The newest package of that architecture (packages carry their version in their file name).
  const candidates = readdirSync(dist)
    .filter((f) => f.startsWith("outpost-agent_") && f.endsWith(`_${debarch}.deb`))
    .map((f) => path.join(dist, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return candidates[0];
}

/**
 * The architectures whose agent binary this server cannot serve (`npm run build:agent` not run, or run
 * for one architecture only): the install line fails on such a device, so the console says so.
 */
export function missingAgentBuilds(dist: string): AgentArch[] {
  return AGENT_ARCHES.filter((arch) => !resolveDownload(dist, `outpost-agent-linux-${arch}`));
}

const digests = new Map<string, { mtimeMs: number; hex: string }>();

/** SHA-256 of a file, remembered until the file changes. */
export function sha256Of(file: string): string {
  const { mtimeMs } = statSync(file);
  const known = digests.get(file);
  if (known?.mtimeMs === mtimeMs) return known.hex;
  const hex = createHash("sha256").update(readFileSync(file)).digest("hex");
  digests.set(file, { mtimeMs, hex });
  return hex;
}

/**
 * The copy-paste line that installs and enrols the agent on a device. Plain `sh`: the script runs its
 * privileged steps itself, directly as root and through sudo otherwise (a root shell without sudo works).
 */
export function installLine(baseUrl: string, token: string): string {
  return `curl -fsSL ${baseUrl}/install.sh | sh -s -- --token ${token}`;
}

/** What the console shows beside an install line: why it would fail here, and the way round it. */
export interface InstallAdvice {
  /** This server has no agent build for some architecture: the download answers 404 until it is built. */
  missingBuilds?: string;
  /** An https address: a device that does not trust its certificate (a private CA) fails at the first curl. */
  privateCa?: string;
}

export function installAdvice(config: {
  agentDistDir: string;
  baseUrl: string;
  port: number;
}): InstallAdvice {
  const missing = missingAgentBuilds(config.agentDistDir);
  const which =
    missing.length === AGENT_ARCHES.length ? "no agent builds" : `no ${missing.join(" or ")} agent build`;
  return {
    missingBuilds:
      missing.length > 0
        ? `This server has ${which} yet, so the line fails on such a device ("not available on this server"). On the server, in Outpost's directory, run npm run build:agent (a minute or two; no restart needed).`
        : undefined,
    privateCa: config.baseUrl.startsWith("https://")
      ? `A device that does not trust this address's certificate (Caddy's internal CA in a local trial) fails at the first curl. Use Outpost's own address instead, in both places: curl -fsSL http://<outpost host>:${config.port}/install.sh | sh -s -- --server http://<outpost host>:${config.port} --token …, or trust the CA on the device (docs/agent.md).`
      : undefined,
  };
}
