/**
 * Adding a second factor, the same from the account page and from a sign-in that must enrol first:
 * the steps take the form, call the factor services and say what the page shows next.
 */
import type { Clock } from "../../shared/clock";
import type { Db } from "../platform/database";
import { AppError } from "../platform/errors";
import type { EnrolProps } from "./factor-pages";
import { generateRecoveryCodes, recoveryCodesLeft } from "./factors";
import type { EnrolForm } from "./model";
import { passkeyRegistrationOptions, type RelyingParty, registerPasskey } from "./passkeys";
import type { OperatorView } from "./service";
import { markFactorVerified } from "./sign-in";
import { confirmTotpEnrolment, pendingTotpEnrolment, startTotpEnrolment } from "./totp";

export interface FactorHolder {
  operator: OperatorView;
  /** The session (pending or signed in) the ceremony's challenge is kept on. */
  idHash: string;
}

export type EnrolStep = "totp" | "totp/confirm" | "passkeys";

export type EnrolOutcome =
  /** Show the enrolment forms again (the TOTP QR code, or an error). */
  | { show: Pick<EnrolProps, "pendingTotp" | "error">; status: number }
  /** A factor was added; `codes` when new recovery codes were made (shown once). */
  | { enrolled: { kind: "totp" | "webauthn"; name: string }; codes?: string[] };

export function enrolmentSteps(deps: {
  db: Db;
  secretKey: string;
  rp: RelyingParty;
  clock: Pick<Clock, "now">;
}) {
  const { db, secretKey, rp, clock } = deps;

  /** The forms' props, with fresh passkey registration options (their challenge kept on the session). */
  async function formProps(
    holder: FactorHolder,
    base: string,
    view: { csrfToken: string; next?: string },
    shown: Pick<EnrolProps, "pendingTotp" | "error"> = {},
  ): Promise<EnrolProps> {
    const passkeyOptions = await passkeyRegistrationOptions(db, rp, {
      operatorId: holder.operator.id,
      email: holder.operator.email,
      sessionIdHash: holder.idHash,
    });
    return { ...view, ...shown, base, passkeyOptions };
  }

  /** The operator's first factor (or one after the codes ran out) comes with a new set of codes. */
  async function added(holder: FactorHolder, factor: { kind: "totp" | "webauthn"; name: string }) {
    await markFactorVerified(db, holder.idHash);
    const codes =
      (await recoveryCodesLeft(db, holder.operator.id)) === 0
        ? await generateRecoveryCodes(db, holder.operator.id)
        : undefined;
    return { enrolled: factor, codes };
  }

  async function step(path: EnrolStep, holder: FactorHolder, body: EnrolForm): Promise<EnrolOutcome> {
    const operatorId = holder.operator.id;
    try {
      if (path === "totp") {
        const pendingTotp = await startTotpEnrolment(db, secretKey, {
          operatorId,
          email: holder.operator.email,
          name: body.name ?? "",
        });
        return { show: { pendingTotp }, status: 200 };
      }
      if (path === "totp/confirm") {
        const factorId = body.factor_id ?? "";
        try {
          const factor = await confirmTotpEnrolment(db, secretKey, {
            operatorId,
            factorId,
            code: body.code ?? "",
            now: clock.now(),
          });
          return added(holder, { kind: "totp", name: factor.name });
        } catch (error) {
          if (!(error instanceof AppError) || error.code !== "invalid_factor_code") throw error;
          const pendingTotp = await pendingTotpEnrolment(db, secretKey, {
            operatorId,
            email: holder.operator.email,
            factorId,
          });
          return { show: { pendingTotp, error: error.message }, status: 400 };
        }
      }
      const factor = await registerPasskey(db, rp, {
        operatorId,
        sessionIdHash: holder.idHash,
        name: body.name ?? "",
        response: body.response ?? "",
      });
      return added(holder, { kind: "webauthn", name: factor.name });
    } catch (error) {
      if (error instanceof AppError && [400, 404, 409].includes(error.status)) {
        return { show: { error: error.message }, status: error.status };
      }
      throw error;
    }
  }

  return { formProps, step };
}
