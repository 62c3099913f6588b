/** The Settings page's forms (admins): their route body schemas. The services check the values. */
import { t } from "elysia";
import { ButtonForm, ConsoleForm, FormText } from "../platform/schemas";

const optional = (maxLength: number) => t.Optional(FormText(maxLength));

export const MonitoringForm = ConsoleForm({
  online_window_minutes: optional(20),
  offline_alert_minutes: optional(20),
  telemetry_retention_days: optional(20),
});

export const NotificationForm = ConsoleForm({
  notification_email: optional(5000),
  webhook_url: optional(2000),
  clear_webhook: optional(10),
});

export const EnrolmentTokenForm = ConsoleForm({
  name: optional(1000),
  product_name: optional(1000),
  max_uses: optional(20),
  expires_in_days: optional(20),
  approve: optional(10),
});

export const InviteForm = ConsoleForm({ email: optional(1000), role: optional(20) });

export const RoleForm = ConsoleForm({ role: optional(20) });

/** Per role: a second factor required (a checkbox) and its fresh-factor minutes. */
export const FactorPolicyForm = ConsoleForm({
  required_viewer: optional(10),
  required_operator: optional(10),
  required_admin: optional(10),
  fresh_viewer: optional(20),
  fresh_operator: optional(20),
  fresh_admin: optional(20),
});

export const TokenForm = ConsoleForm({ name: FormText(200), role: FormText(20) });

/** Disable, enable, reset factors, revoke: buttons. */
export const SettingsButtonForm = ButtonForm;

export const IdParams = t.Object({ id: t.String({ description: "The record's id" }) });
export const UuidParams = t.Object({ id: t.String({ format: "uuid", message: "must be a token's id" }) });
