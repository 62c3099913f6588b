import { describe, expect, test } from "bun:test";
import { buildApp } from "../../app";
import type { OperatorRole } from "../../modules/operators/service";
import { type Access, declaredAccess } from "../../modules/platform/access";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
import { startTestApp } from "../helpers/app";

// Walks every route of the real app against every role. A route that declares no access level
// fails the first test; a role below a route's level must get 401/403 and never a success.
const app = await startTestApp();
const routes = declaredAccess(
  buildApp({
    ...createServices(app.config, app.database, createLogger("silent")),
    workerRunning: () => true,
  }),
);

const sessionOnly = (route: string) =>
  route === "POST /devices/:id/terminal" ||
  route === "POST /auth/oidc/link" ||
  / \/account(\/|$)/.test(route);
/** An empty fresh-factor form is a wrong second factor: 401 `invalid_factor`, an answer, not a refusal. */
const WRONG_FACTOR = "POST /account/verify";

const ROLE_LEVEL: Record<OperatorRole, number> = { viewer: 1, operator: 2, admin: 3 };
const LEVEL: Partial<Record<Access, number>> = { viewer: 1, operator: 2, admin: 3 };
const SAMPLE_PARAMS: Record<string, string> = { task: "prune_sessions", name: "app.css" };

function concretePath(path: string): string {
  return path.replace(
    /:(\w+)/g,
    (_, name: string) => SAMPLE_PARAMS[name] ?? "00000000-0000-4000-8000-000000000000",
  );
}

// Sign-out last: it ends the session the loop uses. The terminal's socket (WS) is checked in
// tests/terminal/socket.test.ts: an upgrade is not a plain request.
const operatorRoutes = [...routes]
  .filter(([route, level]) => level !== undefined && LEVEL[level] !== undefined && !route.startsWith("WS "))
  .sort(([a], [b]) => Number(a === "POST /logout") - Number(b === "POST /logout"));

describe("role × route matrix", () => {
  test("every route declares who may call it", () => {
    const undeclared = [...routes].filter(([, level]) => level === undefined).map(([route]) => route);
    expect(undeclared).toEqual([]);
    expect(operatorRoutes.length).toBeGreaterThan(3);
  });

  test("without credentials, or with cookies that are none: API routes answer 401, pages redirect to sign-in", async () => {
    // A session under the other scheme's name (a __Host- cookie over http) is no session either.
    const valid = (await app.session("admin")).cookie.split("=")[1]!;
    const cookies = [
      undefined,
      "outpost_session=%zz",
      "outpost_session=%ED%A0%80; outpost_csrf=%E0%A4%A",
      `__Host-outpost_session=${valid}`,
    ];
    for (const cookie of cookies) {
      for (const [route] of operatorRoutes) {
        const [method, path] = route.split(" ") as [string, string];
        const url = concretePath(path);
        const response = await app.fetch(url, {
          method,
          headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
          body: method === "GET" ? undefined : "{}",
        });
        const expected = url.startsWith("/api/") ? 401 : 303;
        expect({ route, cookie, status: response.status }).toEqual({ route, cookie, status: expected });
      }
    }
  });

  for (const role of ["viewer", "operator", "admin"] as OperatorRole[]) {
    test(`${role} token: forbidden exactly where the route needs more`, async () => {
      const token = await app.token(role);
      for (const [route, level] of operatorRoutes) {
        const [method, path] = route.split(" ") as [string, string];
        const response = await app.fetch(concretePath(path), {
          method,
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: method === "GET" ? undefined : "{}",
        });
        // Opening a terminal, one's own account and linking a provider account need a signed-in
        // operator's session: API tokens of every role are refused.
        const allowed = ROLE_LEVEL[role] >= LEVEL[level!]! && !sessionOnly(route);
        if (allowed)
          expect({ route, refused: [401, 403].includes(response.status) }).toEqual({ route, refused: false });
        else expect({ route, status: response.status }).toEqual({ route, status: 403 });
      }
    });
  }

  test("a viewer session sees pages but every write is refused", async () => {
    const viewer = await app.session("viewer");
    for (const [route, level] of operatorRoutes) {
      const [method, path] = route.split(" ") as [string, string];
      const response = await app.fetch(concretePath(path), {
        method,
        headers: { cookie: viewer.cookie, "x-csrf-token": viewer.csrf, "content-type": "application/json" },
        body: method === "GET" ? undefined : "{}",
      });
      if (route === WRONG_FACTOR) expect(await response.text()).toContain("That was not accepted");
      else if (level === "viewer")
        expect({ route, refused: [401, 403].includes(response.status) }).toEqual({ route, refused: false });
      else expect({ route, status: response.status }).toEqual({ route, status: 403 });
    }
  });
});
