/** The operators' forms: sign-in, first-run setup, second factors, the account page (route body schemas). */
import { type Static, t } from "elysia";
import { ButtonForm, ConsoleForm, FormText } from "../platform/schemas";

export const OPERATOR_ROLES = ["admin", "operator", "viewer"] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

export function isOperatorRole(value: unknown): value is OperatorRole {
  return typeof value === "string" && (OPERATOR_ROLES as readonly string[]).includes(value);
}

const next = t.Optional(FormText(2000));

export const LoginForm = ConsoleForm({ email: FormText(254), password: FormText(1024), next });

export const SetupForm = ConsoleForm({ code: FormText(100), email: FormText(254), password: FormText(1024) });

/** A second factor: its method, and the TOTP or recovery code or the passkey's response. */
export const FactorForm = ConsoleForm({
  method: FormText(20),
  code: t.Optional(FormText(64)),
  response: t.Optional(FormText(20_000)),
  next,
});

/** A step of adding a second factor (name it, confirm the TOTP code, register a passkey). */
export const EnrolForm = ConsoleForm({
  name: t.Optional(FormText(200)),
  factor_id: t.Optional(FormText(100)),
  code: t.Optional(FormText(64)),
  response: t.Optional(FormText(20_000)),
  next,
});
export type EnrolForm = Static<typeof EnrolForm>;

/** The fresh-factor prompt before a device action: as FactorForm, the method may be left out. */
export const VerifyForm = ConsoleForm({
  method: t.Optional(FormText(20)),
  code: t.Optional(FormText(64)),
  response: t.Optional(FormText(20_000)),
  next,
});

export const FactorParams = t.Object({ id: t.String({ format: "uuid", message: "must be a factor's id" }) });

export const RenameFactorForm = ConsoleForm({ name: t.Optional(FormText(200)) });

/** Remove a factor, new recovery codes, sign out: buttons. */
export const AccountButtonForm = ButtonForm;

export const NextQuery = t.Object({ next: t.Optional(t.String()) });
