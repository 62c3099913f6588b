// From verified claims to an operator, below HTTP against a real database: the role mapping's edges and
// the refusals a browser flow does not reach cheaply. (tests/oidc/sign-in.test.ts drives the real provider.)
import { describe, expect, test } from "bun:test";
import { mappedRole, signInIdentity } from "../../modules/oidc/identities";
import { setOperatorDisabled } from "../../modules/operators/management";
import { authenticate, createOperator } from "../../modules/operators/service";
import type { AppError } from "../../modules/platform/errors";
import { createTestDatabase } from "../helpers/database";

const { db } = await createTestDatabase();
const ISSUER = "https://id.example.test";
const oidc = { roleClaim: "groups", roleMap: { admins: "admin", ops: "operator", staff: "viewer" } as const };

/** Claims as a provider's ID token and userinfo give them. */
function claims(sub: string, extra: Record<string, unknown>) {
  return { iss: ISSUER, sub, aud: "outpost", email: `${sub}@example.test`, email_verified: true, ...extra };
}

async function refusalCode(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => "signed in",
    (error: AppError) => error.code,
  );
}

describe("role mapping", () => {
  test("the highest mapped value wins; one string or a list; unmapped and inherited keys give nothing", () => {
    expect(mappedRole(oidc, { groups: ["staff", "admins", "ops"] })).toBe("admin");
    expect(mappedRole(oidc, { groups: "ops" })).toBe("operator");
    expect(mappedRole(oidc, { groups: ["marketing", 7, null] })).toBeUndefined();
    expect(mappedRole(oidc, { groups: ["constructor", "__proto__", "toString"] })).toBeUndefined();
    expect(mappedRole(oidc, {})).toBeUndefined();
    expect(mappedRole({ ...oidc, roleClaim: "roles" }, { roles: ["staff"], groups: ["admins"] })).toBe(
      "viewer",
    );
  });
});

describe("signing in an identity", () => {
  test("a created operator cannot sign in with a password: none exists that anyone knows", async () => {
    const { operator, created } = await signInIdentity(db, oidc, claims("nopass", { groups: ["ops"] }));
    expect(created).toBe(true);
    const attempt = authenticate(db, { email: operator.email, password: "", address: "127.0.0.1" });
    expect(await refusalCode(attempt)).toBe("invalid_credentials");
  });

  test("an account without a verified email is refused on first sign-in", async () => {
    expect(
      await refusalCode(
        signInIdentity(db, oidc, claims("unverified", { groups: ["ops"], email_verified: false })),
      ),
    ).toBe("oidc_no_email");
    expect(
      await refusalCode(signInIdentity(db, oidc, claims("noemail", { groups: ["ops"], email: undefined }))),
    ).toBe("oidc_no_email");
  });

  test("an operator an admin disabled is refused, and signs in again once enabled", async () => {
    const { operator } = await signInIdentity(db, oidc, claims("dora", { groups: ["ops"] }));
    await setOperatorDisabled(db, operator.id, true);
    expect(await refusalCode(signInIdentity(db, oidc, claims("dora", { groups: ["ops"] })))).toBe(
      "oidc_operator_disabled",
    );
    await setOperatorDisabled(db, operator.id, false);
    expect((await signInIdentity(db, oidc, claims("dora", { groups: ["ops"] }))).operator.id).toBe(
      operator.id,
    );
  });

  test("the same subject at another issuer is another person", async () => {
    const first = await signInIdentity(db, oidc, claims("twin", { groups: ["ops"] }));
    const other = signInIdentity(db, oidc, {
      ...claims("twin", { groups: ["ops"] }),
      iss: "https://other.example.test",
    });
    // Same email, different (issuer, subject): never merged into the first operator.
    expect(await refusalCode(other)).toBe("oidc_email_taken");
    expect(first.created).toBe(true);
  });

  test("the role follows the mapping, but the last enabled admin is never lowered", async () => {
    const { operator } = await signInIdentity(db, oidc, claims("solo", { groups: ["admins"] }));
    expect(operator.role).toBe("admin");
    // No other enabled admin exists in this database.
    const lowered = await signInIdentity(db, oidc, claims("solo", { groups: ["staff"] }));
    expect(lowered.operator.role).toBe("admin");
    expect(lowered.previousRole).toBeUndefined();
    await signInIdentity(db, oidc, claims("second", { groups: ["admins"] }));
    const now = await signInIdentity(db, oidc, claims("solo", { groups: ["staff"] }));
    expect(now.operator.role).toBe("viewer");
    expect(now.previousRole).toBe("admin");
  });

  test("linking: to the signed-in operator once; a provider account or an operator linked elsewhere is refused", async () => {
    const local = await createOperator(db, {
      email: "local@example.test",
      password: "local password 1",
      role: "operator",
    });
    const linked = await signInIdentity(db, oidc, claims("local-sso", { groups: ["ops"] }), local.id);
    expect(linked).toMatchObject({ created: false, linked: true, operator: { id: local.id } });
    // Signing in again (no link asked) finds the same operator; asking again for the same link is harmless.
    expect((await signInIdentity(db, oidc, claims("local-sso", { groups: ["ops"] }))).operator.id).toBe(
      local.id,
    );
    expect((await signInIdentity(db, oidc, claims("local-sso", { groups: ["ops"] }), local.id)).linked).toBe(
      false,
    );

    const other = await createOperator(db, {
      email: "other@example.test",
      password: "other password 1",
      role: "operator",
    });
    // Someone else's provider account cannot be attached to this operator…
    expect(
      await refusalCode(signInIdentity(db, oidc, claims("local-sso", { groups: ["ops"] }), other.id)),
    ).toBe("oidc_already_linked");
    // …and an operator links one account per issuer.
    expect(
      await refusalCode(signInIdentity(db, oidc, claims("second-sso", { groups: ["ops"] }), local.id)),
    ).toBe("oidc_already_linked");
    // An unmapped account links nothing.
    expect(
      await refusalCode(signInIdentity(db, oidc, claims("third-sso", { groups: ["x"] }), other.id)),
    ).toBe("oidc_unmapped");
  });
});
