import { PageHead, PostButton } from "../../ui/components";
import type { Flash } from "../../ui/flash";
import { AuthLayout, FlashMessage, Layout, type PageContext } from "../../ui/layout";
import { Card } from "../../ui/table";

/** Why a single sign-on did not sign the person in, and the way back. */
export function SignInRefusedPage(props: { providerName: string; message: string; canLink?: boolean }) {
  return (
    <AuthLayout title="Sign-in refused" csrfToken="">
      <h1>Sign-in refused</h1>
      <div class="flash error" role="alert" safe>
        {props.message}
      </div>
      <p>
        <a class="btn" href="/login">
          Back to sign in
        </a>{" "}
        {props.canLink ? (
          <a class="btn" href="/auth/oidc/link">
            Link to my Outpost account
          </a>
        ) : (
          ""
        )}
      </p>
      <p class="muted" safe>
        {`You were not signed in to Outpost. Your ${props.providerName} account is unchanged.`}
      </p>
    </AuthLayout>
  );
}

/** After Outpost's sign-out: sign in again, or end the provider's session too (RP-initiated logout). */
export function SignedOutPage(props: { providerName: string; providerSignOut?: string; flash?: Flash }) {
  return (
    <AuthLayout title="Signed out" csrfToken="">
      <h1>Signed out</h1>
      <FlashMessage flash={props.flash} />
      <p class="muted" safe>
        {`Your Outpost session has ended. You may still be signed in to ${props.providerName}, which would sign you in here again without asking.`}
      </p>
      <p>
        {props.providerSignOut ? (
          <a class="btn primary" href={props.providerSignOut} safe>
            {`Also sign out of ${props.providerName}`}
          </a>
        ) : (
          ""
        )}{" "}
        <a class="btn" href="/login">
          Sign in again
        </a>
      </p>
    </AuthLayout>
  );
}

/** A signed-in operator's link to the provider: shown when linked, offered when not. */
export function LinkPage(props: {
  ctx: PageContext;
  providerName: string;
  linked?: { subject: string; createdAt: Date };
}) {
  const { ctx, providerName, linked } = props;
  return (
    <Layout ctx={ctx} title="Single sign-on">
      <PageHead title="Single sign-on" subtitle={`Sign in to Outpost with ${providerName}`} />
      <Card title={providerName}>
        {linked ? (
          <p safe>
            {`Your account is linked to the ${providerName} account “${linked.subject}” since ${linked.createdAt.toISOString().slice(0, 10)}: choose “Sign in with ${providerName}” on the sign-in page.`}
          </p>
        ) : (
          <>
            <p class="muted" safe>
              {`Link your ${providerName} account to this Outpost account (${ctx.principal?.kind === "session" ? ctx.principal.email : ""}) to sign in with ${providerName} from now on. You will be asked to sign in there.`}
            </p>
            <PostButton
              action="/auth/oidc/link"
              csrfToken={ctx.csrfToken}
              label={`Link to ${providerName}`}
              tone="primary"
            />
          </>
        )}
      </Card>
    </Layout>
  );
}
