import { t } from "elysia";

/** `GET /auth/oidc/login?next=/path`: where to go after signing in (same-origin paths only, see safeNext). */
export const SignInQuery = t.Object({ next: t.Optional(t.String({ maxLength: 2000 })) });
