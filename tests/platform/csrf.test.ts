// The CSRF and cookie helpers every signed-in form and the sign-in page rely on, at their edges.
import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import {
  accessPlugin,
  CSRF_COOKIE,
  canOperate,
  checkCsrf,
  csrfTokenFor,
  type Principal,
  principalLabel,
  readCookie,
  submittedCsrfToken,
} from "../../modules/platform/access";
import { AppError } from "../../modules/platform/errors";
import { consolePages, safeNext } from "../../ui/page";

const SECRET = "s".repeat(40);
const httpPages = consolePages({ secretKey: SECRET, baseUrl: "http://console.test" });
const httpsPages = consolePages({ secretKey: SECRET, baseUrl: "https://console.test" });
const { pageContext } = httpPages;
const request = (headers: Record<string, string> = {}, method = "POST") =>
  new Request("http://console.test/settings", { method, headers });

function csrfRefusal(binding: string | undefined, req: Request, body: unknown): string {
  try {
    checkCsrf(SECRET, binding, req, body);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return `${(error as AppError).status} ${(error as AppError).code}`;
  }
  return "accepted";
}

describe("cookies", () => {
  test("readCookie finds the named cookie among others, trimmed and decoded", () => {
    const req = request({ cookie: "a=1; outpost_session = x%20y ;b=2" });
    expect(readCookie(req, "outpost_session")).toBe("x y");
    expect(readCookie(req, "a")).toBe("1");
    expect(readCookie(req, "b")).toBe("2");
    expect(readCookie(req, "outpost")).toBeUndefined();
    expect(readCookie(request(), "a")).toBeUndefined();
    // A part without a name is not a cookie called "".
    expect(readCookie(request({ cookie: "=v; c=3" }), "")).toBeUndefined();
    expect(readCookie(request({ cookie: "noequals; c=3" }), "noequals")).toBeUndefined();
    expect(readCookie(request({ cookie: "c=a=b" }), "c")).toBe("a=b");
  });
});

describe("CSRF", () => {
  const token = csrfTokenFor(SECRET, "session-1");

  test("a token is bound to its secret and its binding", () => {
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(csrfTokenFor(SECRET, "session-2")).not.toBe(token);
    expect(csrfTokenFor("t".repeat(40), "session-1")).not.toBe(token);
  });

  test("the header is read first, then the form field; only a string field counts", () => {
    expect(submittedCsrfToken(request({ "x-csrf-token": "h" }), { _csrf: "f" })).toBe("h");
    expect(submittedCsrfToken(request(), { _csrf: "f" })).toBe("f");
    expect(submittedCsrfToken(request(), { _csrf: 1 })).toBeUndefined();
    expect(submittedCsrfToken(request(), { csrf: "f" })).toBeUndefined();
    expect(submittedCsrfToken(request(), "_csrf")).toBeUndefined();
    expect(submittedCsrfToken(request(), null)).toBeUndefined();
  });

  test("checkCsrf accepts the bound token by header or field, refuses anything else with 403", () => {
    expect(csrfRefusal("session-1", request({ "x-csrf-token": token }), undefined)).toBe("accepted");
    expect(csrfRefusal("session-1", request(), { _csrf: token })).toBe("accepted");
    expect(csrfRefusal("session-2", request(), { _csrf: token })).toBe("403 csrf_failed");
    expect(csrfRefusal("session-1", request(), {})).toBe("403 csrf_failed");
    expect(csrfRefusal("session-1", request(), { _csrf: token.slice(1) })).toBe("403 csrf_failed");
    expect(csrfRefusal(undefined, request(), { _csrf: token })).toBe("403 csrf_failed");
    expect(csrfRefusal("", request(), { _csrf: csrfTokenFor(SECRET, "") })).toBe("403 csrf_failed");
  });

  test("before sign-in: the anonymous cookie binds the token; a missing or malformed cookie is replaced", () => {
    const fresh = httpPages.anonymousCsrf(request());
    const value = /^outpost_csrf=([\w-]+); Path=\/; HttpOnly; SameSite=Lax; Max-Age=86400$/.exec(
      fresh.cookie!,
    )?.[1];
    expect(value).toBeDefined();
    expect(value!.length).toBeGreaterThanOrEqual(20);
    expect(fresh.binding).toBe(`anon:${value}`);
    expect(fresh.token).toBe(csrfTokenFor(SECRET, `anon:${value}`));
    expect(httpsPages.anonymousCsrf(request()).cookie).toEndWith("; Secure; Max-Age=86400");

    const kept = httpPages.anonymousCsrf(request({ cookie: `${CSRF_COOKIE}=${value}` }));
    expect(kept).toEqual({ binding: fresh.binding, token: fresh.token, cookie: undefined });
    for (const bad of ["short", `${"a".repeat(30)}!`, `!${"a".repeat(30)}`]) {
      const replaced = httpPages.anonymousCsrf(
        request({ cookie: `${CSRF_COOKIE}=${encodeURIComponent(bad)}` }),
      );
      expect(replaced.cookie).toBeDefined();
      expect(replaced.binding).not.toBe(`anon:${bad}`);
    }
    expect(
      httpPages.anonymousCsrf(request({ cookie: `${CSRF_COOKIE}=${"a".repeat(20)}` })).cookie,
    ).toBeUndefined();
  });

  test("pages get the session's token; token callers and anonymous pages get none", () => {
    const session: Principal = {
      kind: "session",
      operatorId: "o",
      email: "a@example.test",
      role: "viewer",
      sessionIdHash: "session-1",
    };
    const api: Principal = { kind: "token", tokenId: "t", name: "ci", role: "admin" };
    expect(pageContext(request({}, "GET"), session)).toMatchObject({
      path: "/settings",
      csrfToken: token,
    });
    expect(pageContext(request({}, "GET"), api).csrfToken).toBe("");
    expect(pageContext(request({}, "GET"), undefined).csrfToken).toBe("");
  });
});

describe("sign-in redirect target", () => {
  test("next: only same-origin paths of at most 2000 characters, whatever the value", () => {
    for (const bad of [
      undefined,
      12,
      ["/x"],
      `/${"a".repeat(2000)}`,
      "/.//evil.example",
      "/./\\evil.example",
    ])
      expect(safeNext(bad)).toBe("/");
    expect(safeNext(`/${"a".repeat(1999)}`)).toBe(`/${"a".repeat(1999)}`);
  });

  test("next: relative names, control characters, unparsable and other-host paths all go home", () => {
    for (const bad of [
      "dashboard", // not a path: would resolve to /dashboard
      "/devices\t", // a tab the URL parser would silently drop
      "/devices\n?x=1",
      "/a\\b", // a backslash browsers turn into a slash
      "//exa mple.com/x", // not parsable as a URL
      "//evil.example/steal", // another host, with a path
    ])
      expect(safeNext(bad)).toBe("/");
    expect(safeNext("/devices?status=pending#list")).toBe("/devices?status=pending#list");
  });
});

describe("who may change things, and how they are named", () => {
  const as = (role: "viewer" | "operator" | "admin"): Principal => ({
    kind: "token",
    tokenId: "t",
    name: "ci",
    role,
  });
  test("canOperate: operator and admin only", () => {
    expect(canOperate(undefined)).toBe(false);
    expect(canOperate(as("viewer"))).toBe(false);
    expect(canOperate(as("operator"))).toBe(true);
    expect(canOperate(as("admin"))).toBe(true);
  });
  test("principalLabel: the email of a session, the name of a token", () => {
    expect(principalLabel(undefined)).toBeUndefined();
    expect(principalLabel(as("viewer"))).toBe("token ci");
    expect(
      principalLabel({
        kind: "session",
        operatorId: "o",
        email: "a@example.test",
        role: "admin",
        sessionIdHash: "h",
      }),
    ).toBe("a@example.test");
  });
});

describe("the access option on routes", () => {
  // A small app with the real plugin; who is calling is chosen by the x-who header.
  const callers: Record<string, Principal> = {
    "viewer-session": {
      kind: "session",
      operatorId: "v",
      email: "v@example.test",
      role: "viewer",
      sessionIdHash: "sv",
    },
    "operator-session": {
      kind: "session",
      operatorId: "o",
      email: "o@example.test",
      role: "operator",
      sessionIdHash: "so",
    },
    "operator-token": { kind: "token", tokenId: "t", name: "ci", role: "operator" },
  };
  const app = new Elysia()
    .onError(({ error }) =>
      error instanceof AppError ? Response.json({ code: error.code }, { status: error.status }) : undefined,
    )
    .use(
      accessPlugin({
        secretKey: SECRET,
        resolvePrincipal: async (request) => callers[request.headers.get("x-who") ?? ""],
      }),
    )
    .get("/read", ({ principal }) => principalLabel(principal) ?? "none", { access: "viewer" })
    .post("/write", ({ principal }) => principalLabel(principal) ?? "none", { access: "operator" })
    .head("/read", () => new Response(null), { access: "viewer" })
    .options("/write", () => "options", { access: "operator" })
    .post("/open", () => "open", { access: "public" });
  const call = async (method: string, path: string, headers: Record<string, string> = {}) => {
    const response = await app.handle(new Request(`http://console.test${path}`, { method, headers }));
    const text = method === "HEAD" ? "" : await response.text();
    return `${response.status} ${text}`.trim();
  };

  test("roles: anonymous is 401, a lower role 403; the handler gets the principal", async () => {
    expect(await call("GET", "/read")).toBe('401 {"code":"unauthorized"}');
    expect(await call("GET", "/read", { "x-who": "viewer-session" })).toBe("200 v@example.test");
    expect(await call("POST", "/write", { "x-who": "viewer-session" })).toBe('403 {"code":"forbidden"}');
    expect(await call("POST", "/open")).toBe("200 open");
  });

  test("a session needs the CSRF token on state-changing methods only; a bearer token never", async () => {
    const who = { "x-who": "operator-session" };
    expect(await call("POST", "/write", who)).toBe('403 {"code":"csrf_failed"}');
    expect(await call("POST", "/write", { ...who, "x-csrf-token": csrfTokenFor(SECRET, "sv") })).toBe(
      '403 {"code":"csrf_failed"}',
    );
    expect(await call("POST", "/write", { ...who, "x-csrf-token": csrfTokenFor(SECRET, "so") })).toBe(
      "200 o@example.test",
    );
    expect(await call("GET", "/read", who)).toBe("200 o@example.test");
    expect(await call("HEAD", "/read", who)).toBe("200");
    expect(await call("OPTIONS", "/write", who)).toBe("200 options");
    expect(await call("POST", "/write", { "x-who": "operator-token" })).toBe("200 token ci");
  });
});
