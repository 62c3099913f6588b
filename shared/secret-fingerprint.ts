// The short fingerprint of a device secret. The console shows it for an identity claim and
// `outpost-agent status` prints it, so an operator can tell which device made a claim before accepting it.
import { createHash } from "node:crypto";

/** `ab12:cd34:ef56:7890`: the first 64 bits of the secret's SHA-256 (hex), as the server stores it. */
export function fingerprintOfSecretHash(sha256Hex: string): string {
  return sha256Hex.slice(0, 16).match(/.{4}/g)!.join(":");
}

export function secretFingerprint(secret: string): string {
  return fingerprintOfSecretHash(createHash("sha256").update(secret).digest("hex"));
}
