/** The forms the device page posts (each route's body schema). */
import { t } from "elysia";
import { ButtonForm, ConsoleForm, FormText } from "../../platform/schemas";

export const DevicePathParams = t.Object({ id: t.String({ description: "The device's id" }) });
export const CommandPathParams = t.Object({
  id: t.String({ description: "The device's id" }),
  commandId: t.String({ description: "The command's id" }),
});

/** Approve, reject, revoke, delete, a new claim token, cancel a command: buttons. */
export const DeviceButtonForm = ButtonForm;

/** The identity-conflict decision, bound to the claim the page showed. */
export const IdentityForm = ConsoleForm({
  decision: t.Optional(FormText(20)),
  fingerprint: t.Optional(FormText(200)),
});

/** The scripts tab's commands: list the device's scripts, or remove one by name. */
export const ScriptCommandForm = ConsoleForm({
  type: t.Optional(FormText(40)),
  name: t.Optional(FormText(200)),
});

/** A script to install: pasted text, or a file chosen (an empty file input posts an empty file). */
export const ScriptForm = ConsoleForm({
  text: t.Optional(FormText(1024 * 1024)),
  file: t.Optional(t.File({ message: "must be a file" })),
});

/** A script to run once: its text, an optional name and timeout (checked by the commands service). */
export const RunOnceForm = ConsoleForm({
  script: t.Optional(FormText(1024 * 1024)),
  name: t.Optional(FormText(400)),
  timeout_seconds: t.Optional(FormText(20)),
});

/** The device page's query: its tab and that tab's own filters. */
export const DevicePageQuery = t.Object(
  {
    tab: t.Optional(FormText(40)),
    field: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Array(t.String({ maxLength: 200 }))])),
  },
  { additionalProperties: true },
);
