import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../modules/platform/config";
import { passwordSignInAllowed } from "../../modules/platform/sso-config";
import { tempDir } from "../helpers/temp";

const dataDir = tempDir("outpost-sso-config-");
const OIDC = {
  OIDC_ISSUER: "https://id.example.test/realms/ops/",
  OIDC_CLIENT_ID: "outpost",
  OIDC_CLIENT_SECRET: "client-secret",
  OIDC_ROLE_MAP: '{"cn=admins,ou=groups":"admin","ops":"operator"}',
};

function load(env: Record<string, string>) {
  return loadConfig({ DATA_DIR: dataDir, ...env });
}

function refusal(env: Record<string, string>): string {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("accepted");
}

describe("single sign-on configuration", () => {
  test("off by default, with password sign-in for everyone", () => {
    expect(load({}).sso).toEqual({ oidc: undefined, passwordSignIn: true, breakGlassAdminEmail: undefined });
  });

  test("an issuer with its client and role map; openid is always among the scopes", () => {
    const { oidc } = load({ ...OIDC, OIDC_SCOPES: "email,groups", OIDC_DISPLAY_NAME: "Acme ID" }).sso;
    expect(oidc).toEqual({
      issuer: "https://id.example.test/realms/ops",
      clientId: "outpost",
      clientSecret: "client-secret",
      scopes: "email groups openid",
      displayName: "Acme ID",
      roleClaim: "groups",
      roleMap: { "cn=admins,ou=groups": "admin", ops: "operator" },
    });
    expect(load(OIDC).sso.oidc?.scopes).toBe("openid email profile");
  });

  test("each mistake is refused at start with one line naming the variable", () => {
    expect(refusal({ ...OIDC, OIDC_ISSUER: "http://id.example.test" })).toContain(
      "OIDC_ISSUER must be an https:// URL",
    );
    expect(load({ ...OIDC, OIDC_ISSUER: "http://127.0.0.1:9000" }).sso.oidc?.issuer).toBe(
      "http://127.0.0.1:9000",
    );
    expect(refusal({ ...OIDC, OIDC_CLIENT_SECRET: "" })).toContain("OIDC_CLIENT_SECRET");
    expect(refusal({ ...OIDC, OIDC_ROLE_MAP: "" })).toContain("OIDC_ROLE_MAP is required");
    expect(refusal({ ...OIDC, OIDC_ROLE_MAP: "admins=admin" })).toContain(
      "OIDC_ROLE_MAP must be a JSON object",
    );
    expect(refusal({ ...OIDC, OIDC_ROLE_MAP: "{}" })).toContain("non-empty");
    expect(refusal({ ...OIDC, OIDC_ROLE_MAP: '{"ops":"root"}' })).toContain('maps "ops" to "root"');
    expect(refusal({ OIDC_CLIENT_ID: "outpost" })).toBe("OIDC_CLIENT_ID is set but OIDC_ISSUER is not");
    expect(refusal({ PASSWORD_SIGN_IN: "false" })).toContain("needs OIDC_ISSUER");
    expect(refusal({ ...OIDC, PASSWORD_SIGN_IN: "false" })).toContain("needs BREAK_GLASS_ADMIN_EMAIL");
    expect(refusal({ ...OIDC, PASSWORD_SIGN_IN: "maybe" })).toContain(
      "PASSWORD_SIGN_IN must be true or false",
    );
  });

  test("with password sign-in off, only the break-glass admin may use a password", () => {
    const { sso } = load({
      ...OIDC,
      PASSWORD_SIGN_IN: "false",
      BREAK_GLASS_ADMIN_EMAIL: "Root@Example.test",
    });
    expect(passwordSignInAllowed(sso, { email: "root@example.test", role: "admin" })).toBe(true);
    // The email alone is not enough: a break-glass account lowered to viewer is no longer one.
    expect(passwordSignInAllowed(sso, { email: "root@example.test", role: "viewer" })).toBe(false);
    expect(passwordSignInAllowed(sso, { email: "ada@example.test", role: "admin" })).toBe(false);
    expect(passwordSignInAllowed(load({}).sso, { email: "ada@example.test", role: "viewer" })).toBe(true);
  });
});
