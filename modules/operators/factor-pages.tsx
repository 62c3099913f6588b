// The second-factor pieces of the console: the prompt (sign-in and fresh-factor), the enrolment forms
// (account page and required enrolment at sign-in) and the recovery codes shown once.
import type { Children } from "@kitajs/html";
import { assetUrl } from "../../ui/assets";
import { CsrfField } from "../../ui/components";
import { Hidden, TextField } from "../../ui/form";
import { AuthLayout } from "../../ui/layout";
import { FACTOR_NAME_MAX } from "./factors";
import type { TotpEnrolment } from "./totp";

/** The browser side of WebAuthn (served from node_modules) and the forms' glue. */
export function PasskeyScripts() {
  return (
    <>
      <script src={assetUrl("webauthn.js")} defer></script>
      <script src={assetUrl("second-factor.js")} defer></script>
    </>
  );
}

export function ErrorBanner({ message }: { message: string | undefined }) {
  return message ? (
    <div class="flash error" role="alert" safe>
      {message}
    </div>
  ) : (
    ""
  );
}

export interface PromptProps {
  csrfToken: string;
  action: string;
  next: string;
  hasTotp: boolean;
  /** WebAuthn request options, when the operator has a passkey. */
  passkeyOptions?: unknown;
  /** Recovery codes are offered at sign-in only. */
  offerRecovery: boolean;
  error?: string;
}

/** Asks for one second factor: a passkey touch, a TOTP code or (at sign-in) a recovery code. */
export function FactorPrompt(props: PromptProps) {
  return (
    <div class="stack" data-factor-prompt>
      <ErrorBanner message={props.error} />
      {props.passkeyOptions ? (
        <form
          method="post"
          action={props.action}
          class="stacked"
          data-passkey="authenticate"
          data-options={JSON.stringify(props.passkeyOptions)}
        >
          <CsrfField token={props.csrfToken} />
          <Hidden name="next" value={props.next} />
          <Hidden name="method" value="passkey" />
          <Hidden name="response" value="" />
          <button type="submit" class="btn primary" data-passkey-start>
            Use a passkey or security key
          </button>
          <span class="help" data-passkey-status aria-live="polite"></span>
        </form>
      ) : (
        ""
      )}
      {props.hasTotp ? (
        <form method="post" action={props.action} class="stacked" data-totp-form>
          <CsrfField token={props.csrfToken} />
          <Hidden name="next" value={props.next} />
          <Hidden name="method" value="totp" />
          <TextField
            name="code"
            label="Code from your authenticator app"
            value=""
            inputmode="numeric"
            autocomplete="one-time-code"
            pattern="[0-9 ]{6,7}"
            maxLength={7}
            required
            autofocus
          />
          <button type="submit" class="btn primary">
            Verify
          </button>
        </form>
      ) : (
        ""
      )}
      {props.offerRecovery ? (
        <details>
          <summary>Use a recovery code</summary>
          <form method="post" action={props.action} class="stacked" data-recovery-form>
            <CsrfField token={props.csrfToken} />
            <Hidden name="next" value={props.next} />
            <Hidden name="method" value="recovery" />
            <TextField
              name="code"
              label="Recovery code"
              value=""
              autocomplete="off"
              maxLength={64}
              required
            />
            <button type="submit" class="btn">
              Use recovery code
            </button>
          </form>
        </details>
      ) : (
        ""
      )}
    </div>
  );
}

/** A second-factor step of signing in: its heading, what to do, the step's forms and the way back out. */
function SignInStep(props: {
  title: string;
  heading: string;
  lead: string;
  leave: string;
  csrfToken: string;
  children: Children;
}) {
  return (
    <AuthLayout title={props.title} csrfToken={props.csrfToken}>
      <h1 safe>{props.heading}</h1>
      <p class="muted" safe>
        {props.lead}
      </p>
      {props.children}
      <p class="small">
        <a href="/login" safe>
          {props.leave}
        </a>
      </p>
      <PasskeyScripts />
    </AuthLayout>
  );
}

/** Sign-in, second step. */
export function SecondFactorPage(props: PromptProps) {
  return (
    <SignInStep
      title="Second factor"
      heading="Confirm it is you"
      lead="Your password was right. Now use your second factor."
      leave="Sign in as someone else"
      csrfToken={props.csrfToken}
    >
      <FactorPrompt {...props} />
    </SignInStep>
  );
}

export interface EnrolProps {
  csrfToken: string;
  /** `/account` or `/login/enrol`: the forms post to `<base>/totp`, `<base>/totp/confirm`, `<base>/passkeys`. */
  base: string;
  next?: string;
  passkeyOptions: unknown;
  pendingTotp?: TotpEnrolment;
  error?: string;
}

function NextField({ next }: { next: string | undefined }) {
  return next ? <Hidden name="next" value={next} /> : "";
}

/** Adding a factor: an authenticator app (QR code and secret, then a first code) or a passkey. */
export function EnrolForms(props: EnrolProps) {
  const pending = props.pendingTotp;
  return (
    <div class="stack" data-enrol>
      <ErrorBanner message={props.error} />
      {pending ? (
        <div data-totp-pending>
          <p>
            Scan this code with your authenticator app, or type the key below into it, then enter the code it
            shows. The key is shown only until the app is confirmed.
          </p>
          <img
            src={pending.qrDataUrl}
            alt="QR code of the authenticator key"
            width="200"
            height="200"
            data-totp-qr
          />
          <p>
            Key:{" "}
            <code data-totp-secret safe>
              {pending.secret}
            </code>
          </p>
          <form method="post" action={`${props.base}/totp/confirm`} class="stacked">
            <CsrfField token={props.csrfToken} />
            <NextField next={props.next} />
            <Hidden name="factor_id" value={pending.factorId} />
            <TextField
              name="code"
              label="Code from the app"
              value=""
              inputmode="numeric"
              autocomplete="one-time-code"
              maxLength={7}
              required
              autofocus
            />
            <button type="submit" class="btn primary">
              Confirm the authenticator app
            </button>
          </form>
        </div>
      ) : (
        <form method="post" action={`${props.base}/totp`} class="inline-form" data-totp-start>
          <CsrfField token={props.csrfToken} />
          <NextField next={props.next} />
          <TextField
            name="name"
            label="Name"
            value=""
            maxLength={FACTOR_NAME_MAX}
            placeholder="Authenticator app"
          />
          <button type="submit" class="btn">
            Add an authenticator app
          </button>
        </form>
      )}
      <form
        method="post"
        action={`${props.base}/passkeys`}
        class="inline-form"
        data-passkey="register"
        data-options={JSON.stringify(props.passkeyOptions)}
      >
        <CsrfField token={props.csrfToken} />
        <NextField next={props.next} />
        <Hidden name="response" value="" />
        <TextField name="name" label="Name" value="" maxLength={FACTOR_NAME_MAX} placeholder="Passkey" />
        <button type="submit" class="btn" data-passkey-start>
          Add a passkey or security key
        </button>
        <span class="help" data-passkey-status aria-live="polite"></span>
      </form>
    </div>
  );
}

/** The recovery codes, shown once. */
export function RecoveryCodes({ codes }: { codes: string[] }) {
  return (
    <div class="flash success" role="status" data-recovery-codes>
      <div>
        <strong>Your recovery codes.</strong> Each signs you in once when your factors are out of reach. Keep
        them somewhere safe: they are shown only now.
        <pre class="secret" id="recovery-codes" safe>
          {codes.join("\n")}
        </pre>
        <button type="button" class="btn small" data-copy="recovery-codes">
          Copy
        </button>
      </div>
    </div>
  );
}

/** Sign-in when the role requires a second factor and the operator has none yet. */
export function RequiredEnrolmentPage(props: EnrolProps) {
  return (
    <SignInStep
      title="Add a second factor"
      heading="Add a second factor"
      lead="Your role signs in with a second factor. Add an authenticator app or a passkey to finish signing in."
      leave="Cancel"
      csrfToken={props.csrfToken}
    >
      <EnrolForms {...props} />
    </SignInStep>
  );
}

/** After the required enrolment: the recovery codes once, then on to the console. */
export function EnrolledPage(props: { csrfToken: string; codes: string[]; next: string }) {
  return (
    <AuthLayout title="Second factor added" csrfToken={props.csrfToken}>
      <h1>Second factor added</h1>
      <RecoveryCodes codes={props.codes} />
      <a class="btn primary" href={props.next} data-continue>
        Continue to Outpost
      </a>
    </AuthLayout>
  );
}
