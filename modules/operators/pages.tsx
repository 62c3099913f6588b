import { CsrfField, FieldError } from "../../ui/components";
import type { Flash } from "../../ui/flash";
import { AuthLayout, FlashMessage } from "../../ui/layout";
import type { SsoConfig } from "../platform/sso-config";

export function LoginPage(props: {
  csrfToken: string;
  next: string;
  email?: string;
  error?: string;
  flash?: Flash;
  /** Single sign-on: its button, and the note when passwords are kept for the break-glass admin. */
  sso?: SsoConfig;
}) {
  const oidc = props.sso?.oidc;
  return (
    <AuthLayout title="Sign in" csrfToken={props.csrfToken}>
      <h1>Sign in</h1>
      <p class="muted">Monitor and reach your fleet.</p>
      <FlashMessage flash={props.flash} />
      {props.error ? (
        <div class="flash error" role="alert" safe>
          {props.error}
        </div>
      ) : (
        ""
      )}
      {oidc ? (
        <p>
          <a class="btn primary" href={`/auth/oidc/login?next=${encodeURIComponent(props.next)}`} safe>
            {`Sign in with ${oidc.displayName}`}
          </a>
        </p>
      ) : (
        ""
      )}
      {props.sso?.passwordSignIn !== false ? (
        ""
      ) : (
        <p class="muted">Password sign-in is kept for the break-glass administrator.</p>
      )}
      <form method="post" action="/login" class="stacked">
        <CsrfField token={props.csrfToken} />
        <input type="hidden" name="next" value={props.next} />
        <label>
          Email
          <input
            type="email"
            name="email"
            autocomplete="username"
            required
            autofocus
            value={props.email ?? ""}
          />
        </label>
        <label>
          Password
          <input type="password" name="password" autocomplete="current-password" required />
        </label>
        <button type="submit" class={oidc ? "btn" : "btn primary"}>
          Sign in
        </button>
      </form>
    </AuthLayout>
  );
}

export interface SetupErrors {
  code?: string;
  email?: string;
  password?: string;
  form?: string;
}

export function SetupPage(props: { csrfToken: string; email?: string; errors?: SetupErrors }) {
  const errors = props.errors ?? {};
  return (
    <AuthLayout title="Set up Outpost" csrfToken={props.csrfToken}>
      <h1>Welcome to Outpost</h1>
      <p class="muted">
        Create the first administrator. The setup code was printed in the server's console when it started.
      </p>
      {errors.form ? (
        <div class="flash error" role="alert" safe>
          {errors.form}
        </div>
      ) : (
        ""
      )}
      <form method="post" action="/setup" class="stacked">
        <CsrfField token={props.csrfToken} />
        <label>
          Setup code
          <input
            type="text"
            name="code"
            required
            autocomplete="off"
            aria-invalid={errors.code ? "true" : undefined}
          />
          <FieldError message={errors.code} />
        </label>
        <label>
          Your email
          <input
            type="email"
            name="email"
            required
            autocomplete="username"
            value={props.email ?? ""}
            aria-invalid={errors.email ? "true" : undefined}
          />
          <FieldError message={errors.email} />
        </label>
        <label>
          Password <span class="help">At least 10 characters.</span>
          <input
            type="password"
            name="password"
            required
            minlength="10"
            autocomplete="new-password"
            aria-invalid={errors.password ? "true" : undefined}
          />
          <FieldError message={errors.password} />
        </label>
        <button type="submit" class="btn primary">
          Create administrator
        </button>
      </form>
    </AuthLayout>
  );
}
