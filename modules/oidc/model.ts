import { t } from "elysia";
import { ButtonForm } from "../platform/schemas";

/** `GET /auth/oidc/login?next=/path`: where to go after signing in (same-origin paths only, see safeNext). */
export const SignInQuery = t.Object({ next: t.Optional(t.String({ maxLength: 2000 })) });

/** Link a provider account (a button with the session's CSRF token). */
export const LinkForm = ButtonForm;
