import { Badge, CsrfField, PostButton, Time } from "../../../ui/components";
import { CheckboxField, InstallAdviceNotes, NumberField, OneTimeSecret, TextField } from "../../../ui/form";
import type { PageContext } from "../../../ui/layout";
import { Card, DataTable } from "../../../ui/table";
import { ENROLMENT_NAME_MAX, type EnrolmentToken, type InstallAdvice } from "../../enrolment/service";

export interface EnrolmentSectionProps {
  enrolmentTokens?: EnrolmentToken[];
  /** A token just created: the secret and its install line, shown this once. */
  newEnrolment?: { name: string; secret: string; installLine: string };
  enrolmentErrors?: Partial<Record<string, string>>;
  enrolmentValues?: Partial<Record<string, string>>;
  /** Why the install line would fail on this server (no agent builds), and help for a private CA. */
  installAdvice?: InstallAdvice;
}

function state(token: EnrolmentToken): JSX.Element {
  if (token.revokedAt) return <Badge label="revoked" />;
  if (token.expiresAt && token.expiresAt.getTime() <= Date.now())
    return <Badge tone="warn" label="expired" />;
  if (token.maxUses !== null && token.uses >= token.maxUses) return <Badge tone="warn" label="used up" />;
  return <Badge tone="ok" label="active" />;
}

/** Settings → Enrolment tokens (admins): create (shown once, with the install line), list, revoke. */
export function EnrolmentSection({ ctx, props }: { ctx: PageContext; props: EnrolmentSectionProps }) {
  const errors = props.enrolmentErrors ?? {};
  const values = props.enrolmentValues ?? {};
  return (
    <Card title="Enrolment tokens" id="enrolment-tokens">
      <p class="muted">
        A device installed with an enrolment token registers by itself and is approved at once or waits for an
        operator, as the token says. Only a hash is stored: the token is shown once, when it is created.
      </p>
      <InstallAdviceNotes missingBuilds={props.installAdvice?.missingBuilds} />
      {props.newEnrolment ? (
        <>
          <OneTimeSecret
            id="new-enrolment-token"
            headline={`Enrolment token "${props.newEnrolment.name}" created.`}
            advice="Copy it now; it will not be shown again."
            secret={props.newEnrolment.secret}
          />
          <div class="flash info" role="status">
            <div>
              <strong>Install the agent on a device</strong> (Debian, Ubuntu, Raspberry Pi OS; x86-64 or
              arm64), as root or as a user who may sudo:
              <div class="secret" id="install-line" safe>
                {props.newEnrolment.installLine}
              </div>
              <button type="button" class="btn small" data-copy="install-line">
                Copy
              </button>
              <InstallAdviceNotes privateCa={props.installAdvice?.privateCa} />
            </div>
          </div>
        </>
      ) : (
        ""
      )}
      <form
        method="post"
        action="/settings/enrolment-tokens"
        class="settings-form"
        style="margin-bottom: 1rem"
      >
        <CsrfField token={ctx.csrfToken} />
        <div class="form-grid">
          <TextField
            name="name"
            label="Name"
            required
            maxLength={ENROLMENT_NAME_MAX}
            placeholder="e.g. factory line 2"
            value={values.name ?? ""}
            error={errors.name}
          />
          <TextField
            name="product_name"
            label="Only for product (optional)"
            maxLength={128}
            placeholder="e.g. outpost-linux"
            value={values.product_name ?? ""}
            error={errors.product_name}
          />
          <NumberField
            name="max_uses"
            label="Max devices (optional)"
            value={values.max_uses ?? ""}
            min={1}
            max={1_000_000}
            optional
            unit="devices"
            help="Empty: unlimited."
            error={errors.max_uses}
          />
          <NumberField
            name="expires_in_days"
            label="Expires after (optional)"
            value={values.expires_in_days ?? "30"}
            min={1}
            max={3650}
            optional
            unit="days"
            help="Empty: never."
            error={errors.expires_in_days}
          />
        </div>
        <CheckboxField name="approve" value="true" checked={values.approve === "true"}>
          <span>Approve devices enrolled with it at once (otherwise they wait as pending)</span>
        </CheckboxField>
        <div>
          <button class="btn primary" type="submit">
            Create enrolment token
          </button>
        </div>
      </form>
      <DataTable
        rows={props.enrolmentTokens ?? []}
        empty="No enrolment tokens yet."
        stackOnPhone
        columns={[
          { header: "Name", text: (t) => t.name },
          { header: "Token", render: (t) => <code safe>{`${t.prefix}…`}</code> },
          { header: "Policy", text: (t) => (t.approve ? "approve at once" : "pending") },
          { header: "Product", text: (t) => t.productName ?? "any" },
          {
            header: "Used",
            text: (t) => (t.maxUses === null ? `${t.uses}` : `${t.uses} / ${t.maxUses}`),
            class: "num",
          },
          {
            header: "Expires",
            render: (t) => (t.expiresAt ? <Time value={t.expiresAt} /> : <span>never</span>),
          },
          { header: "State", render: state },
          {
            header: "Actions",
            hiddenHeader: true,
            class: "row-actions",
            render: (t) =>
              t.revokedAt ? (
                ""
              ) : (
                <PostButton
                  action={`/settings/enrolment-tokens/${t.id}/revoke`}
                  csrfToken={ctx.csrfToken}
                  label="Revoke"
                  tone="danger"
                  confirm={`Revoke the enrolment token "${t.name}"? Devices it enrolled stay.`}
                />
              ),
          },
        ]}
      />
    </Card>
  );
}
