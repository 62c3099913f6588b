import type { Principal } from "../platform/access";
import { consoleCookieName, readCookie, SESSION_COOKIE } from "../platform/access";
import type { Db } from "../platform/database";
import { resolveApiToken, resolveSession } from "./service";

/** Who is calling: an API token (Authorization: Bearer) or a browser session cookie. */
export async function resolvePrincipal(
  db: Db,
  sessionTtlHours: number,
  request: Request,
  https: boolean,
): Promise<Principal | undefined> {
  const authorization = request.headers.get("authorization");
  if (authorization?.toLowerCase().startsWith("bearer ")) {
    const token = await resolveApiToken(db, authorization.slice(7).trim());
    return token && { kind: "token", tokenId: token.id, name: token.name, role: token.role };
  }
  const cookie = readCookie(request, consoleCookieName(SESSION_COOKIE, https));
  if (!cookie) return undefined;
  const session = await resolveSession(db, cookie, sessionTtlHours);
  return (
    session && {
      kind: "session",
      operatorId: session.operator.id,
      email: session.operator.email,
      role: session.operator.role,
      sessionIdHash: session.idHash,
    }
  );
}
