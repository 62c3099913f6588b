import { generateKeyPairSync, randomBytes, sign } from "node:crypto";

/** One DER element: tag, definite length, contents. */
function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const length = body.length;
  const head =
    length < 0x80
      ? [tag, length]
      : length < 0x100
        ? [tag, 0x81, length]
        : [tag, 0x82, length >> 8, length & 0xff];
  return Buffer.concat([Buffer.from(head), body]);
}

const sequence = (...parts: Buffer[]) => der(0x30, ...parts);
const ECDSA_WITH_SHA256 = sequence(der(0x06, Buffer.from([0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02])));
const COMMON_NAME = Buffer.from([0x55, 0x04, 0x03]);

function name(commonName: string): Buffer {
  return sequence(der(0x31, sequence(der(0x06, COMMON_NAME), der(0x0c, Buffer.from(commonName, "utf8")))));
}

/** UTCTime (YYMMDDHHMMSSZ): valid for dates before 2050, which ten years from now are. */
function utcTime(date: Date): Buffer {
  const text = date.toISOString().replace(/[-:T]/g, "").slice(2, 14);
  return der(0x17, Buffer.from(`${text}Z`, "ascii"));
}

/**
 * A throwaway self-signed ECDSA P-256 certificate (PEM key and certificate) for a TLS listener whose
 * peers do not trust certificates at all: the tunnel's work connections authenticate both ends by proofs
 * bound to the TLS session (shared/tunnel-work.ts), so the certificate only has to exist. Built here
 * because neither Bun nor node:crypto can issue one and the server must not depend on an openssl binary.
 */
export function selfSignedCertificate(commonName: string, days = 3650): { key: string; cert: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01; // positive and without a leading zero byte
  const now = Date.now();
  const tbs = sequence(
    der(0xa0, der(0x02, Buffer.from([2]))), // version 3
    der(0x02, serial),
    ECDSA_WITH_SHA256,
    name(commonName),
    sequence(utcTime(new Date(now - 86_400_000)), utcTime(new Date(now + days * 86_400_000))),
    name(commonName),
    publicKey.export({ type: "spki", format: "der" }),
  );
  const signature = sign("sha256", tbs, privateKey);
  const certificate = sequence(tbs, ECDSA_WITH_SHA256, der(0x03, Buffer.from([0]), signature));
  const base64 = certificate.toString("base64").replace(/.{64}/g, "$&\n");
  return {
    key: privateKey.export({ type: "pkcs8", format: "pem" }) as string,
    cert: `-----BEGIN CERTIFICATE-----\n${base64.trimEnd()}\n-----END CERTIFICATE-----\n`,
  };
}
