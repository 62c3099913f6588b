import { CsrfField } from "../../ui/components";
import type { Flash } from "../../ui/flash";
import { Hidden, TextField } from "../../ui/form";
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
        <Hidden name="next" value={props.next} />
        <TextField
          type="email"
          name="email"
          label="Email"
          value={props.email ?? ""}
          maxLength={254}
          autocomplete="username"
          required
          autofocus
        />
        <TextField
          type="password"
          name="password"
          label="Password"
          value=""
          maxLength={1024}
          autocomplete="current-password"
          required
        />
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
        <TextField
          name="code"
          label="Setup code"
          value=""
          maxLength={100}
          autocomplete="off"
          required
          error={errors.code}
        />
        <TextField
          type="email"
          name="email"
          label="Your email"
          value={props.email ?? ""}
          maxLength={254}
          autocomplete="username"
          required
          error={errors.email}
        />
        <TextField
          type="password"
          name="password"
          label="Password"
          help="At least 10 characters."
          value=""
          maxLength={1024}
          minLength={10}
          autocomplete="new-password"
          required
          error={errors.password}
        />
        <button type="submit" class="btn primary">
          Create administrator
        </button>
      </form>
    </AuthLayout>
  );
}
