import type { Flash } from "../../ui/flash";
import { AuthLayout, FlashMessage } from "../../ui/layout";

/** Why a single sign-on did not sign the person in, and the way back. */
export function SignInRefusedPage(props: { providerName: string; message: string }) {
  return (
    <AuthLayout title="Sign-in refused" csrfToken="">
      <h1>Sign-in refused</h1>
      <div class="flash error" role="alert" safe>
        {props.message}
      </div>
      <p>
        <a class="btn" href="/login">
          Back to sign in
        </a>
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
