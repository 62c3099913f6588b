import { createHash, randomBytes } from "node:crypto";
import ssh2 from "ssh2";
import { openSecret, sealSecret } from "../platform/crypto";
import { fingerprintOf, generateEd25519 } from "../platform/host-key";

/** The comment of every ephemeral terminal key (shows in the device's authorized_keys). */
export const KEY_COMMENT = "outpost-terminal";

const PURPOSE = "outpost-terminal-private-key:v1";

/** `iv(12) | tag(16) | ciphertext`, with a key derived from SECRET_KEY for this purpose only. */
export function encryptPrivateKey(secretKey: string, privateKey: string): Buffer {
  return sealSecret(secretKey, PURPOSE, privateKey);
}

export function decryptPrivateKey(secretKey: string, stored: Buffer): string {
  return openSecret(secretKey, PURPOSE, stored);
}

export interface EphemeralKey {
  privateKey: string;
  /** `ssh-ed25519 AAAA… outpost-terminal` */
  publicKey: string;
  fingerprint: string;
}

/** A fresh ed25519 pair, generated in this process (no ssh-keygen, nothing on disk). */
export function ephemeralKey(): EphemeralKey {
  const pair = generateEd25519(KEY_COMMENT);
  const [type, blob] = pair.public.trim().split(/\s+/);
  return {
    privateKey: pair.private,
    publicKey: `${type} ${blob} ${KEY_COMMENT}`,
    fingerprint: fingerprintOf(Buffer.from(blob!, "base64")),
  };
}

/** The opaque session ref the browser holds, and what is stored of it. */
export function newSessionRef(): { ref: string; hash: string } {
  const ref = randomBytes(24).toString("base64url");
  return { ref, hash: refHash(ref) };
}

export function refHash(ref: string): string {
  return createHash("sha256").update(`outpost-terminal-ref:${ref}`).digest("hex");
}

/**
 * The canonical `type blob` of a reported key line, by its shape only (no parsing: a heartbeat's check
 * against the stored key needs no more), or undefined when it cannot be a key.
 */
export function hostKeyText(line: unknown): string | undefined {
  if (typeof line !== "string" || line.length > 2048) return undefined;
  const [type, blob] = line.trim().split(/\s+/);
  if (!type || !blob || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) return undefined;
  return `${type} ${blob}`;
}

/**
 * An OpenSSH public key line as a device reports it (`ssh-ed25519 AAAA… [comment]`): the canonical
 * `type blob` and its fingerprint, or undefined when it is not a key ssh2 can read.
 */
export function parseHostKey(line: unknown): { publicKey: string; fingerprint: string } | undefined {
  const text = hostKeyText(line);
  if (!text) return undefined;
  const parsed = ssh2.utils.parseKey(text);
  if (parsed instanceof Error) return undefined;
  const key = Array.isArray(parsed) ? parsed[0]! : parsed;
  if (key.type !== text.slice(0, text.indexOf(" "))) return undefined;
  return { publicKey: text, fingerprint: fingerprintOf(key.getPublicSSH()) };
}
