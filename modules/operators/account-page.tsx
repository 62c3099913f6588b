import { CsrfField, PageHead, PostButton, Time } from "../../ui/components";
import { TextInput } from "../../ui/form";
import { Layout, type PageContext } from "../../ui/layout";
import { Card, DataTable } from "../../ui/table";
import {
  EnrolForms,
  type EnrolProps,
  ErrorBanner,
  FactorPrompt,
  PasskeyScripts,
  type PromptProps,
  RecoveryCodes,
} from "./factor-pages";
import { FACTOR_NAME_MAX, type FactorView } from "./factors";
import type { RolePolicy } from "./policy";

export interface AccountPageProps {
  factors: FactorView[];
  recoveryLeft: number;
  policy: RolePolicy;
  enrol: EnrolProps;
  /** New recovery codes, shown once. */
  newCodes?: string[];
}

const KIND_LABEL = { totp: "Authenticator app", webauthn: "Passkey / security key" };

function freshFactorSentence(minutes: number | null): string {
  if (minutes === null) return "";
  return minutes === 0
    ? "Your role confirms a second factor each time you open a terminal or a device's web UI."
    : `Your role confirms a second factor before a terminal or a device's web UI when the last one is older than ${minutes} minutes.`;
}

/** The signed-in operator's own account: second factors, recovery codes. */
export function AccountPage({ ctx, props }: { ctx: PageContext; props: AccountPageProps }) {
  const email = ctx.principal?.kind === "session" ? ctx.principal.email : "";
  return (
    <Layout ctx={ctx} title="Your account">
      <PageHead title="Your account" subtitle={`${email} · ${ctx.principal?.role ?? ""}`} />
      {props.newCodes ? <RecoveryCodes codes={props.newCodes} /> : ""}
      <Card title="Second factors" id="second-factors">
        <p class="muted small">
          {props.policy.required
            ? "Your role signs in with a second factor: keep at least one."
            : "A second factor protects your account if your password leaks."}{" "}
          <span safe>{freshFactorSentence(props.policy.freshFactorMinutes)}</span>
        </p>
        <DataTable
          id="factors"
          rows={props.factors}
          empty="No second factor yet."
          stackOnPhone
          rowAttributes={(factor) => ({ "data-factor-id": factor.id, "data-factor-kind": factor.kind })}
          columns={[
            { header: "Kind", text: (factor) => KIND_LABEL[factor.kind] },
            {
              header: "Name",
              render: (factor) => (
                <form method="post" action={`/account/factors/${factor.id}/rename`} class="inline-form">
                  <CsrfField token={ctx.csrfToken} />
                  <TextInput
                    name="name"
                    value={factor.name}
                    maxLength={FACTOR_NAME_MAX}
                    ariaLabel="Name"
                    required
                  />
                  <button type="submit" class="btn small">
                    Rename
                  </button>
                </form>
              ),
            },
            { header: "Added", render: (factor) => <Time value={factor.createdAt} /> },
            { header: "Last used", render: (factor) => <Time value={factor.lastUsedAt} /> },
            {
              header: "Actions",
              hiddenHeader: true,
              class: "row-actions",
              render: (factor) => (
                <PostButton
                  action={`/account/factors/${factor.id}/delete`}
                  csrfToken={ctx.csrfToken}
                  label="Remove"
                  tone="danger"
                  confirm={`Remove ${factor.name}?`}
                />
              ),
            },
          ]}
        />
        <EnrolForms {...props.enrol} />
      </Card>
      <Card title="Recovery codes" id="recovery-codes-card">
        <p safe>
          {props.factors.length === 0
            ? "Recovery codes come with your first second factor."
            : `${props.recoveryLeft} unused recovery codes. Each signs you in once when your factors are out of reach.`}
        </p>
        {props.factors.length > 0 ? (
          <PostButton
            action="/account/recovery-codes"
            csrfToken={ctx.csrfToken}
            label="Make new recovery codes"
            confirm="Make new recovery codes? The old ones stop working."
          />
        ) : (
          ""
        )}
      </Card>
      <PasskeyScripts />
    </Layout>
  );
}

/** The fresh-factor prompt before a terminal or a device's web UI. */
export function VerifyPage({
  ctx,
  prompt,
  error,
}: {
  ctx: PageContext;
  prompt: Omit<PromptProps, "error"> | undefined;
  error?: string;
}) {
  return (
    <Layout ctx={ctx} title="Confirm it is you">
      <PageHead
        title="Confirm it is you"
        subtitle="Your role confirms a second factor before reaching a device."
      />
      <ErrorBanner message={error} />
      <Card title="Second factor">
        {prompt ? (
          <FactorPrompt {...prompt} />
        ) : (
          <p data-no-factor>
            You have no second factor yet. <a href="/account">Add one on your account page</a>, then come
            back.
          </p>
        )}
      </Card>
      <PasskeyScripts />
    </Layout>
  );
}
