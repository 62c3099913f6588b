import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import ssh2 from "ssh2";

export interface HostKey {
  /** OpenSSH private key (PEM-ish text ssh2 parses). */
  privateKey: string;
  /** `SHA256:<base64>` of the public key blob, as `ssh-keygen -l` prints it; agents pin this. */
  fingerprint: string;
}

/** `SHA256:<base64 without padding>` of an SSH public key blob. */
export function fingerprintOf(publicKeyBlob: Buffer): string {
  return `SHA256:${createHash("sha256").update(publicKeyBlob).digest("base64").replace(/=+$/, "")}`;
}

/**
 * An ed25519 key pair that ssh2 reads back. Under Bun, about 1 in 200 private keys ssh2 generates are
 * refused by its own parser ("Malformed OpenSSH private key"; 15 of 3,000 in a loop here): draw again.
 */
export function generateEd25519(comment?: string): { private: string; public: string } {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync("ed25519", comment ? { comment } : undefined);
    if (!(ssh2.utils.parseKey(pair.private) instanceof Error)) return pair;
  }
  throw new Error("could not generate an ed25519 key that ssh2 can read");
}

/**
 * The tunnel server's host key: `TUNNEL_HOST_KEY` (the key text) when given, else generated once into
 * `DATA_DIR/tunnel_host_key` (0600, created exclusively so two processes starting together agree).
 * Web processes call this too, to tell agents which fingerprint to pin.
 */
export function loadHostKey(
  dataDir: string,
  given: string | undefined = process.env.TUNNEL_HOST_KEY,
): HostKey {
  let privateKey = given;
  if (!privateKey) {
    const file = path.join(dataDir, "tunnel_host_key");
    if (!existsSync(file)) {
      mkdirSync(dataDir, { recursive: true });
      const pair = generateEd25519("outpost-tunnel");
      try {
        writeFileSync(file, pair.private, { mode: 0o600, flag: "wx" });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
    }
    privateKey = readFileSync(file, "utf8");
  }
  const parsed = ssh2.utils.parseKey(privateKey);
  if (parsed instanceof Error)
    throw new Error(`tunnel host key is not a valid SSH private key: ${parsed.message}`);
  const key = Array.isArray(parsed) ? parsed[0]! : parsed;
  return { privateKey, fingerprint: fingerprintOf(key.getPublicSSH()) };
}

const fingerprints = new Map<string, string>();

/** The tunnel host key's fingerprint (same DATA_DIR or TUNNEL_HOST_KEY as the tunnel role), cached. */
export function tunnelFingerprint(dataDir: string): string {
  let fingerprint = fingerprints.get(dataDir);
  if (!fingerprint) {
    fingerprint = loadHostKey(dataDir).fingerprint;
    fingerprints.set(dataDir, fingerprint);
  }
  return fingerprint;
}
