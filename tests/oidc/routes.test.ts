// The single sign-on routes when it is not configured, and when the provider cannot be reached.
import { describe, expect, test } from "bun:test";
import { oidcSignIns } from "../../modules/oidc/schema";
import { startTestApp } from "../helpers/app";
import { randomListenPort } from "../helpers/listener";
import { oidcEnv, startTestProvider } from "./provider";

describe("without OIDC_ISSUER", () => {
  test("the sign-in page has no provider button and the routes answer 404", async () => {
    const app = await startTestApp();
    await app.session("admin"); // an operator exists, so /login is the sign-in page
    const login = await (await app.fetch("/login")).text();
    expect(login).toContain('action="/login"');
    expect(login).not.toContain("/auth/oidc/login");
    for (const path of ["/auth/oidc/login", "/auth/oidc/callback?code=x&state=y", "/auth/oidc/signed-out"]) {
      expect({ path, status: (await app.fetch(path)).status }).toEqual({ path, status: 404 });
    }
  }, 60_000);
});

describe("a provider that cannot be reached", () => {
  test("sign-in answers a clear 502 page and keeps nothing; discovery is tried again once it is back", async () => {
    const appPort = randomListenPort();
    const appUrl = `http://127.0.0.1:${appPort}`;
    const providerPort = randomListenPort();
    const env = oidcEnv({
      issuer: `http://127.0.0.1:${providerPort}`,
      clientId: "outpost",
      clientSecret: "outpost-client-secret-0123456789abcdef",
    });
    const app = await startTestApp({ PORT: String(appPort), BASE_URL: appUrl, ...env });
    await app.session("admin");

    const down = await app.fetch("/auth/oidc/login?next=/devices");
    expect(down.status).toBe(502);
    expect(await down.text()).toContain("The sign-in provider could not be reached.");
    expect(await app.database.db.select().from(oidcSignIns)).toEqual([]);

    await startTestProvider(appUrl, providerPort);
    const up = await app.fetch("/auth/oidc/login?next=/devices");
    expect(up.status).toBe(303);
    const location = new URL(up.headers.get("location")!);
    expect(location.origin).toBe(`http://127.0.0.1:${providerPort}`);
    expect(location.searchParams.get("code_challenge_method")).toBe("S256");
    expect(location.searchParams.get("redirect_uri")).toBe(`${appUrl}/auth/oidc/callback`);
    expect(up.headers.getSetCookie().some((cookie) => cookie.startsWith("outpost_oidc="))).toBe(true);
    expect(await app.database.db.select().from(oidcSignIns)).toHaveLength(1);
  }, 60_000);
});
