// A real OpenID provider (oidc-provider, with its development sign-in and consent pages) on 127.0.0.1 and
// a free port, for the single sign-on tests. Any login name signs in; the accounts below give it claims.
import { afterAll } from "bun:test";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

export interface TestAccount {
  email?: string;
  email_verified?: boolean;
  groups?: string[];
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Claims by login name; edit between sign-ins to change what the provider says. */
  accounts: Map<string, TestAccount>;
  stop(): Promise<void>;
}

/** Starts the provider for a relying party at `appUrl` (its callback and post-logout page registered), on `port` or a free one. */
export async function startTestProvider(appUrl: string, port = 0): Promise<TestProvider> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = "outpost";
  const clientSecret = "outpost-client-secret-0123456789abcdef";
  const accounts = new Map<string, TestAccount>();
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [`${appUrl}/auth/oidc/callback`],
        post_logout_redirect_uris: [`${appUrl}/login`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    pkce: { required: () => true },
    scopes: ["openid", "email", "profile", "groups"],
    claims: { openid: ["sub"], email: ["email", "email_verified"], groups: ["groups"] },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    ttl: {
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      AccessToken: 600,
      AuthorizationCode: 60,
      IdToken: 600,
    },
    async findAccount(_ctx: unknown, sub: string) {
      const account = accounts.get(sub) ?? {};
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          email: account.email ?? `${sub}@example.test`,
          email_verified: account.email_verified ?? true,
          ...(account.groups ? { groups: account.groups } : {}),
        }),
      };
    },
  });
  server.on("request", provider.callback());
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  afterAll(stop);
  return { issuer, clientId, clientSecret, accounts, stop };
}

/** The environment that points Outpost at `provider`. */
export function oidcEnv(
  provider: Pick<TestProvider, "issuer" | "clientId" | "clientSecret">,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    OIDC_ISSUER: provider.issuer,
    OIDC_CLIENT_ID: provider.clientId,
    OIDC_CLIENT_SECRET: provider.clientSecret,
    OIDC_SCOPES: "openid email groups",
    OIDC_DISPLAY_NAME: "Example SSO",
    OIDC_ROLE_MAP: JSON.stringify({ "outpost-admins": "admin", "outpost-ops": "operator", staff: "viewer" }),
    ...extra,
  };
}
