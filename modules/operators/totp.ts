/**
 * TOTP (RFC 6238: SHA-1, 6 digits, 30 s) factors. Secrets are sealed with a key derived from SECRET_KEY
 * (docs/security.md says why); a code is accepted one step either side of now, and never twice: the
 * last accepted step is kept per factor and only a later step passes (an atomic update decides).
 */
import { and, eq, isNotNull, isNull, lt, or } from "drizzle-orm";
import * as OTPAuth from "otpauth";
import QRCode from "qrcode";
import { openSecret, sealSecret } from "../platform/crypto";
import type { Db } from "../platform/database";
import { AppError } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { checkFactorName } from "./factors";
import { operatorFactors } from "./schema";

const PERIOD = 30;
const PURPOSE = "outpost-totp-secret:v1";
/** Steps accepted either side of the server's: ±30 s of clock skew. */
/** An operator's authenticator-app factors: the one being set up (`pending`) or those in use (`confirmed`). */
function totpFactorsOf(operatorId: string, state: "pending" | "confirmed") {
  return and(
    eq(operatorFactors.operatorId, operatorId),
    eq(operatorFactors.kind, "totp"),
    state === "pending" ? isNull(operatorFactors.confirmedAt) : isNotNull(operatorFactors.confirmedAt),
  );
}

export const TOTP_WINDOW = 1;

function totpFor(secretBase32: string, label = "Outpost"): OTPAuth.TOTP {
  return new OTPAuth.TOTP({
    issuer: "Outpost",
    label,
    algorithm: "SHA1",
    digits: 6,
    period: PERIOD,
    secret: OTPAuth.Secret.fromBase32(secretBase32),
  });
}

export interface TotpEnrolment {
  factorId: string;
  name: string;
  /** Base32, for typing into an authenticator app by hand. */
  secret: string;
  /** The otpauth:// URI as a QR code, an SVG data URL rendered here (no third party sees the secret). */
  qrDataUrl: string;
}

async function enrolmentView(
  factorId: string,
  name: string,
  secret: string,
  email: string,
): Promise<TotpEnrolment> {
  const uri = totpFor(secret, email).toString();
  const svg = await QRCode.toString(uri, { type: "svg", errorCorrectionLevel: "M", margin: 2 });
  return {
    factorId,
    name,
    secret,
    qrDataUrl: `data:image/svg+xml;base64,${Buffer.from(svg).toString("base64")}`,
  };
}

/** A new TOTP secret waiting for its first code (an earlier unconfirmed one of this operator goes). */
export async function startTotpEnrolment(
  db: Db,
  secretKey: string,
  input: { operatorId: string; email: string; name: string },
): Promise<TotpEnrolment> {
  const name = checkFactorName(input.name, "Authenticator app");
  const secret = new OTPAuth.Secret({ size: 20 }).base32;
  await db.delete(operatorFactors).where(totpFactorsOf(input.operatorId, "pending"));
  const [row] = await db
    .insert(operatorFactors)
    .values({
      operatorId: input.operatorId,
      kind: "totp",
      name,
      totpSecret: sealSecret(secretKey, PURPOSE, secret).toString("base64"),
    })
    .returning({ id: operatorFactors.id });
  return enrolmentView(row!.id, name, secret, input.email);
}

async function unconfirmed(db: Db, operatorId: string, factorId: string) {
  const [row] = !isUuid(factorId)
    ? []
    : await db
        .select()
        .from(operatorFactors)
        .where(and(eq(operatorFactors.id, factorId), totpFactorsOf(operatorId, "pending")));
  if (!row?.totpSecret) {
    throw new AppError(404, "factor_not_found", "This enrolment is over: start again from your account page");
  }
  return row;
}

/** The pending enrolment again (after a wrong first code): until confirmed, its secret may be shown. */
export async function pendingTotpEnrolment(
  db: Db,
  secretKey: string,
  input: { operatorId: string; email: string; factorId: string },
): Promise<TotpEnrolment> {
  const row = await unconfirmed(db, input.operatorId, input.factorId);
  const secret = openSecret(secretKey, PURPOSE, Buffer.from(row.totpSecret!, "base64"));
  return enrolmentView(row.id, row.name, secret, input.email);
}

/** The time step `code` belongs to within the window around `now`, or undefined. */
function matchingStep(secret: string, code: string, now: number): number | undefined {
  const token = code.replace(/\s+/g, "");
  if (!/^\d{6}$/.test(token)) return undefined;
  const delta = totpFor(secret).validate({ token, timestamp: now, window: TOTP_WINDOW });
  return delta === null ? undefined : Math.floor(now / 1000 / PERIOD) + delta;
}

/** Confirms a pending enrolment with its first code; throws 400 `invalid_factor_code` when wrong. */
export async function confirmTotpEnrolment(
  db: Db,
  secretKey: string,
  input: { operatorId: string; factorId: string; code: string; now?: number },
): Promise<{ id: string; name: string }> {
  const row = await unconfirmed(db, input.operatorId, input.factorId);
  const secret = openSecret(secretKey, PURPOSE, Buffer.from(row.totpSecret!, "base64"));
  const step = matchingStep(secret, input.code, input.now ?? Date.now());
  if (step === undefined) {
    throw new AppError(
      400,
      "invalid_factor_code",
      "That code is not right: check the app and try the next one",
    );
  }
  await db
    .update(operatorFactors)
    .set({ confirmedAt: new Date(), totpLastStep: step, lastUsedAt: new Date() })
    .where(eq(operatorFactors.id, row.id));
  return { id: row.id, name: row.name };
}

/**
 * Checks a TOTP code against the operator's confirmed authenticators. Accepting it records its step,
 * in the same statement that checks the step is newer than the last one accepted, so the same code
 * (or an older one) never passes twice, even from two requests at once.
 */
export async function verifyTotpCode(
  db: Db,
  secretKey: string,
  input: { operatorId: string; code: string; now?: number },
): Promise<{ id: string } | undefined> {
  const now = input.now ?? Date.now();
  const rows = await db.select().from(operatorFactors).where(totpFactorsOf(input.operatorId, "confirmed"));
  for (const row of rows) {
    if (!row.totpSecret) continue;
    const secret = openSecret(secretKey, PURPOSE, Buffer.from(row.totpSecret, "base64"));
    const step = matchingStep(secret, input.code, now);
    if (step === undefined) continue;
    const [accepted] = await db
      .update(operatorFactors)
      .set({ totpLastStep: step, lastUsedAt: new Date() })
      .where(
        and(
          eq(operatorFactors.id, row.id),
          or(isNull(operatorFactors.totpLastStep), lt(operatorFactors.totpLastStep, step)),
        ),
      )
      .returning({ id: operatorFactors.id });
    if (accepted) return accepted;
  }
  return undefined;
}
