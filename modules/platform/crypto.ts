import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from "node:crypto";

/** A random secret of `bytes` bytes, base64url encoded. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

export function hmacHex(secret: string, value: string): string {
  return createHmac("sha256", secret).update(value).digest("hex");
}

/** Compares two strings in time independent of where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash("sha256").update(a).digest();
  const right = createHash("sha256").update(b).digest();
  return timingSafeEqual(left, right) && a.length === b.length;
}

/** AES-256-GCM key derived from SECRET_KEY for one purpose: a key for one thing never opens another's. */
function sealingKey(secretKey: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secretKey, "outpost", purpose, 32));
}

/** Encrypts `plaintext` for storage: `iv(12) | tag(16) | ciphertext`. */
export function sealSecret(secretKey: string, purpose: string, plaintext: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", sealingKey(secretKey, purpose), iv);
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The plaintext `sealSecret` stored; throws when the data or the key is not the one sealed with. */
export function openSecret(secretKey: string, purpose: string, stored: Buffer): string {
  const decipher = createDecipheriv("aes-256-gcm", sealingKey(secretKey, purpose), stored.subarray(0, 12));
  decipher.setAuthTag(stored.subarray(12, 28));
  return Buffer.concat([decipher.update(stored.subarray(28)), decipher.final()]).toString("utf8");
}
