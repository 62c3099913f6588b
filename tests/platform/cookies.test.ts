// The console's cookies at the edge (issue 41): a cookie that does not decode is no cookie, never a 500
// (any host under the same parent domain can set one), and over https the console's cookies carry the
// `__Host-` prefix, so no other host can set or shadow them.
import { describe, expect, test } from "bun:test";
import { createOperator } from "../../modules/operators/service";
import { form, startTestApp } from "../helpers/app";

const app = await startTestApp();
const httpsApp = await startTestApp({ BASE_URL: "https://outpost.test" });

const MALFORMED = ["%zz", "%E0%A4%A", "%ED%A0%80"];

describe("a cookie that does not decode is absent", () => {
  test.each(MALFORMED)("outpost_session=%s on a console page: sent to sign in, not a 500", async (value) => {
    const response = await app.fetch("/devices", { headers: { cookie: `outpost_session=${value}` } });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toStartWith("/login");
    const api = await app.fetch("/api/v1/devices", { headers: { cookie: `outpost_session=${value}` } });
    expect(api.status).toBe(401);
  });

  test.each(MALFORMED)("outpost_csrf=%s on /login: the form, with a fresh CSRF cookie", async (value) => {
    await createOperator(app.database.db, {
      email: `someone-${crypto.randomUUID()}@example.test`,
      password: "correct horse battery",
      role: "viewer",
    });
    const response = await app.fetch("/login", { headers: { cookie: `outpost_csrf=${value}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("set-cookie")).toMatch(/^outpost_csrf=[\w-]{20,};/);
  });

  test("a valid session next to a malformed cookie still counts", async () => {
    const { cookie } = await app.session("viewer");
    const response = await app.fetch("/devices", { headers: { cookie: `other=%zz; ${cookie}` } });
    expect(response.status).toBe(200);
  });
});

describe("over https the console's cookies are __Host- cookies", () => {
  const email = `host-prefix-${crypto.randomUUID().slice(0, 8)}@example.test`;

  async function signIn() {
    await createOperator(httpsApp.database.db, { email, password: "correct horse battery", role: "viewer" });
    const page = await httpsApp.fetch("/login");
    const csrfCookie = page.headers.get("set-cookie")!;
    expect(csrfCookie).toMatch(/^__Host-outpost_csrf=[\w-]+; Path=\/; HttpOnly; SameSite=Lax; Secure;/);
    expect(csrfCookie).not.toMatch(/domain=/i);
    const token = (await page.text()).match(/name="_csrf" value="([^"]+)"/)![1]!;
    const init = form({ email, password: "correct horse battery", _csrf: token, next: "/devices" });
    return httpsApp.fetch("/login", {
      ...init,
      headers: { ...(init.headers as Record<string, string>), cookie: csrfCookie.split(";")[0]! },
    });
  }

  test("sign-in sets __Host-outpost_session (Secure, Path=/, no Domain); only that name is read", async () => {
    const response = await signIn();
    expect(response.status).toBe(303);
    const session = response.headers.getSetCookie().find((c) => c.startsWith("__Host-outpost_session="))!;
    expect(session).toMatch(/^__Host-outpost_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Secure;/);
    expect(session).not.toMatch(/domain=/i);
    const value = session.split(";")[0]!.slice("__Host-outpost_session=".length);

    const page = await httpsApp.fetch("/devices", { headers: { cookie: `__Host-outpost_session=${value}` } });
    expect(page.status).toBe(200);
    // The bare name is what any host under the parent domain could plant: over https it means nothing.
    const bare = await httpsApp.fetch("/devices", { headers: { cookie: `outpost_session=${value}` } });
    expect(bare.status).toBe(303);

    const out = await httpsApp.fetch("/logout", {
      method: "POST",
      headers: {
        cookie: `__Host-outpost_session=${value}`,
        "x-csrf-token": (await page.text()).match(/name="_csrf" value="([^"]+)"/)![1]!,
      },
    });
    expect(out.headers.getSetCookie().join()).toContain("__Host-outpost_session=; Path=/;");
  });
});

describe("the flash cookie follows the console's cookie rule", () => {
  const signedOut = "You are signed out.";

  /** Signs out of `target` (a redirect with a flash), then opens the page it leads to with that cookie. */
  async function signOutAndFollow(target: typeof app) {
    const session = await target.session("viewer");
    const out = await target.fetch("/logout", {
      method: "POST",
      headers: { cookie: session.cookie, "x-csrf-token": session.csrf },
    });
    expect(out.status).toBe(303);
    const flash = out.headers.getSetCookie().find((c) => c.includes("outpost_flash="))!;
    const next = await target.fetch(out.headers.get("location")!, {
      headers: { cookie: flash.split(";")[0]! },
    });
    return { flash, next, html: await next.text() };
  }

  test("over https: __Host-outpost_flash, Secure, Path=/, no Domain; the next page shows it and clears it", async () => {
    const { flash, next, html } = await signOutAndFollow(httpsApp);
    expect(flash).toMatch(
      /^__Host-outpost_flash=[\w-]+; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=60$/,
    );
    expect(flash).not.toMatch(/domain=/i);
    expect(next.status).toBe(200);
    expect(html).toContain(signedOut);
    expect(next.headers.getSetCookie()).toContain(
      "__Host-outpost_flash=; Path=/; HttpOnly; SameSite=Lax; Secure; Max-Age=0",
    );
    // The bare name is what a sibling host could plant: over https it shows nothing.
    const value = flash.split(";")[0]!.slice("__Host-outpost_flash=".length);
    const planted = await httpsApp.fetch("/login", { headers: { cookie: `outpost_flash=${value}` } });
    expect(await planted.text()).not.toContain(signedOut);
  });

  test("over http: the plain name, without Secure", async () => {
    const { flash, next, html } = await signOutAndFollow(app);
    expect(flash).toMatch(/^outpost_flash=[\w-]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=60$/);
    expect(html).toContain(signedOut);
    expect(next.headers.getSetCookie()).toContain(
      "outpost_flash=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0",
    );
  });

  test.each(MALFORMED)("a flash cookie %s is no flash, not a 500", async (value) => {
    for (const [target, name] of [
      [app, "outpost_flash"],
      [httpsApp, "__Host-outpost_flash"],
    ] as const) {
      const response = await target.fetch("/login", { headers: { cookie: `${name}=${value}` } });
      expect(response.status).toBe(200);
      expect(await response.text()).not.toContain('class="flash');
    }
  });
});
