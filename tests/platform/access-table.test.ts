// The access table, written by hand and independently of the routes' own `access` declarations:
// who may call each route of the app. Lowering a route's guard by mistake fails this test, and so
// does a new route that is not in the table. (access-matrix.test.ts checks that each route declares
// a level; this file checks that the level is the right one.)
import { describe, expect, test } from "bun:test";
import { buildApp } from "../../app";
import { createLogger } from "../../modules/platform/logger";
import { createServices } from "../../services";
import { approvedDevice } from "../devices/helpers";
import { runnerHeaders, startE2EApp, writeE2EFixture } from "../e2e/fixtures";

type Level = "public" | "device" | "e2e" | "viewer" | "operator" | "admin";

/** Route → the least that may call it. Public: anyone; device: a device's own `api_key`; e2e: runner headers. */
const ACCESS: Record<string, Level> = {
  "GET /healthz": "public",
  "GET /readyz": "public",
  "GET /login": "public",
  "POST /login": "public",
  "GET /setup": "public",
  "POST /setup": "public",
  // Single sign-on: its start, the provider's way back and the signed-out page (404 unless configured).
  "GET /auth/oidc/login": "public",
  "GET /auth/oidc/callback": "public",
  "GET /auth/oidc/signed-out": "public",
  // Sign-in's second step: public routes that need the pending sign-in cookie (their own check, in
  // tests/operators/second-factor.test.ts); without it they send the browser back to /login.
  "GET /login/second-factor": "public",
  "POST /login/second-factor": "public",
  "GET /login/enrol": "public",
  "POST /login/enrol/totp": "public",
  "POST /login/enrol/totp/confirm": "public",
  "POST /login/enrol/passkeys": "public",
  "GET /assets/:name": "public",
  // Its own bearer token (METRICS_TOKEN), or 404 when metrics are off or on their own port.
  "GET /metrics": "public",
  // The API's description and its reference page (every call in it still needs its credentials).
  "GET /api/openapi.json": "public",
  "GET /api/docs": "public",
  "GET /api/docs/:asset": "public",
  "POST /api/v1/devices/register": "public",
  // Caddy's on-demand TLS asks before it gets a certificate; the panel script is a static file.
  "GET /api/v1/check_domain": "public",
  "GET /remote-access/panel.js": "public",
  // The agent installer and the builds it downloads (the enrolment token is the key, not the files).
  "GET /install.sh": "public",
  "GET /downloads/:name": "public",

  "POST /api/v1/devices/:device_id/heartbeat": "device",
  "POST /api/v1/devices/:device_id/command_results": "device",
  "GET /api/v1/devices/:device_id/command_payloads/:ref": "device",
  "GET /api/v1/devices/:device_id/wait": "device",

  "GET /e2e/suites": "e2e",
  "GET /e2e/runs": "e2e",
  "POST /e2e/runs": "e2e",
  "GET /e2e/runs/:runId": "e2e",
  "POST /e2e/runs/:runId/cancel": "e2e",
  "GET /e2e/runs/:runId/results": "e2e",
  "POST /e2e/runs/:runId/results": "e2e",
  "GET /e2e/runs/:runId/results/:journeyId/log": "e2e",
  "PUT /e2e/runs/:runId/results/:journeyId/log": "e2e",

  // Reading the fleet, its telemetry and its history: every operator role.
  "GET /": "viewer",
  "GET /devices": "viewer",
  "GET /devices/matching": "viewer",
  "GET /devices/:id": "viewer",
  "GET /devices/:id/live": "viewer",
  "GET /live/events": "viewer",
  "GET /jobs": "viewer",
  "GET /e2e": "viewer",
  "GET /alerts": "viewer",
  "GET /reports": "viewer",
  "POST /logout": "viewer",
  // Linking the signed-in operator's provider account: a console form post, never an API token.
  "GET /auth/oidc/link": "viewer",
  "POST /auth/oidc/link": "viewer",
  // Every operator's own account: second factors, recovery codes, the fresh-factor prompt (SESSION_ONLY).
  "GET /account": "viewer",
  "POST /account/totp": "viewer",
  "POST /account/totp/confirm": "viewer",
  "POST /account/passkeys": "viewer",
  "POST /account/factors/:id/rename": "viewer",
  "POST /account/factors/:id/delete": "viewer",
  "POST /account/recovery-codes": "viewer",
  "GET /account/verify": "viewer",
  "POST /account/verify": "viewer",
  "GET /api/v1/jobs": "viewer",
  "GET /api/v1/devices": "viewer",
  "GET /api/v1/builder-schemas": "viewer",
  "GET /api/v1/builder-schemas/:schema_id/versions/:schema_version/options": "viewer",
  "POST /api/v1/builder-configurations/validate": "viewer",
  "GET /api/json/devices": "viewer",
  "GET /api/json/devices/:id": "viewer",
  "GET /api/json/pending_commands": "viewer",
  "GET /api/json/pending_commands/:id": "viewer",
  "GET /api/json/telemetry_events": "viewer",
  "GET /api/json/telemetry_events/:id": "viewer",
  // A viewer sees the remote access panel and its state, but opens nothing.
  "POST /devices/:id/remote-access/panel": "viewer",
  "GET /devices/:id/remote-access/live": "viewer",
  "GET /alerts/rules": "viewer",
  // Terminal recordings: every role may watch them.
  "GET /terminal/sessions": "viewer",
  "GET /terminal/sessions/:id": "viewer",
  "GET /terminal/sessions/:id/recording.cast": "viewer",
  "GET /reports/:id": "viewer",
  "GET /api/v1/reports": "viewer",
  "GET /api/v1/reports/:id": "viewer",
  "GET /api/v1/reports/:id/results": "viewer",
  "GET /api/v1/devices/:device_id/tags": "viewer",
  "GET /api/v1/tags/suggestions": "viewer",
  "GET /api/v1/views": "viewer",
  "GET /api/v1/views/:view_id": "viewer",
  "GET /api/v1/rollouts": "viewer",
  "GET /api/v1/rollouts/:rollout_id": "viewer",
  "GET /api/v1/rollouts/:rollout_id/results": "viewer",
  "GET /api/v1/rollouts/:rollout_id/results.csv": "viewer",
  "GET /rollouts": "viewer",
  "GET /rollouts/:id": "viewer",
  "GET /rollouts/:id/progress": "viewer",
  "GET /views": "viewer",
  "GET /api/json/custom_reports": "viewer",
  "GET /api/json/custom_reports/:id": "viewer",
  "GET /devices.csv": "viewer",
  "GET /jobs/runs.csv": "viewer",
  "GET /devices/:id/commands.csv": "viewer",
  "GET /e2e.csv": "viewer",
  "GET /alerts/export.csv": "viewer",
  "GET /alerts/device/:deviceId": "viewer",
  "GET /alerts/:id": "viewer",
  "GET /api/json/alert_rules": "viewer",
  "GET /api/json/alert_rules/:id": "viewer",
  "GET /api/json/alerts": "viewer",
  "GET /api/json/alerts/:id": "viewer",
  "GET /api/json/e2e_journey_health": "viewer",

  // Changing devices and sending them commands: operators and admins, never viewers.
  "POST /api/v1/devices/approval": "operator",
  "PATCH /api/json/devices/:id": "operator",
  "DELETE /api/json/devices/:id": "operator",
  "POST /api/json/pending_commands": "operator",
  "DELETE /api/json/pending_commands/:id": "operator",
  "GET /devices/new": "operator",
  "POST /devices": "operator",
  "POST /devices/bulk": "operator",
  "POST /devices/:id/approve": "operator",
  "POST /devices/:id/reject": "operator",
  "POST /devices/:id/delete": "operator",
  "POST /devices/:id/commands": "operator",
  "POST /devices/:id/scripts": "operator",
  "POST /devices/:id/run-once": "operator",
  "POST /devices/:id/commands/:commandId/cancel": "operator",
  "POST /devices/:id/revoke": "operator",
  "POST /devices/:id/identity": "operator",
  "POST /devices/:id/claim-token": "operator",
  "POST /api/v1/devices/:device_id/remote_access": "operator",
  "DELETE /api/v1/devices/:device_id/remote_access/:lease_id": "operator",
  "POST /devices/:id/remote-access/open": "operator",
  "POST /devices/:id/remote-access/close": "operator",
  "POST /devices/:id/remote-access/leave": "operator",
  "POST /devices/:id/remote-access/reopen": "operator",
  // Opening a terminal: operators, and only from the console (SESSION_ONLY); ending one: operators.
  "POST /devices/:id/terminal": "operator",
  // The operator's own terminal (`outpost ssh`, `outpost forward`): API tokens only (a browser session
  // gets 403 token_required: tests/terminal/token-only.test.ts).
  "POST /api/v1/devices/:device_id/terminal": "operator",
  "POST /api/v1/devices/:device_id/forwards": "operator",
  "DELETE /api/v1/devices/:device_id/forwards/:lease_id": "operator",
  "POST /terminal/sessions/:id/end": "operator",
  // Alert rules and acknowledging/resolving alerts: operators and admins.
  "GET /alerts/new": "operator",
  "GET /alerts/:id/edit": "operator",
  "POST /alerts/rules": "operator",
  "POST /alerts/rules/:id": "operator",
  "POST /alerts/rules/:id/delete": "operator",
  "POST /alerts/bulk": "operator",
  "POST /api/json/alert_rules": "operator",
  "PATCH /api/json/alert_rules/:id": "operator",
  "DELETE /api/json/alert_rules/:id": "operator",
  "PATCH /api/json/alerts/:id": "operator",
  // Report definitions: operators and admins write, everyone reads.
  "POST /api/v1/devices/:device_id/tags": "operator",
  "DELETE /api/v1/devices/:device_id/tags/:key": "operator",
  "POST /api/v1/devices/tags": "operator",
  "PATCH /api/v1/devices/:device_id/profile": "operator",
  "POST /api/v1/views": "operator",
  "PUT /api/v1/views/:view_id": "operator",
  "DELETE /api/v1/views/:view_id": "operator",
  "POST /api/v1/rollouts": "operator",
  "POST /api/v1/rollouts/:rollout_id/pause": "operator",
  "POST /api/v1/rollouts/:rollout_id/resume": "operator",
  "POST /api/v1/rollouts/:rollout_id/cancel": "operator",
  "GET /rollouts/new": "operator",
  "POST /rollouts": "operator",
  "POST /rollouts/:id/pause": "operator",
  "POST /rollouts/:id/resume": "operator",
  "POST /rollouts/:id/cancel": "operator",
  "POST /devices/bulk-tags": "operator",
  "POST /devices/:id/tags": "operator",
  "POST /devices/:id/tags/remove": "operator",
  "POST /devices/:id/profile": "operator",
  "POST /views": "operator",
  "POST /views/:view_id": "operator",
  "POST /views/:view_id/delete": "operator",
  "GET /reports/new": "operator",
  "POST /reports": "operator",
  "GET /reports/:id/edit": "operator",
  "POST /reports/:id": "operator",
  "GET /reports/:id/delete": "operator",
  "POST /reports/:id/delete": "operator",
  "POST /api/v1/reports": "operator",
  "PATCH /api/v1/reports/:id": "operator",
  "DELETE /api/v1/reports/:id": "operator",
  "POST /api/json/custom_reports": "operator",
  "PATCH /api/json/custom_reports/:id": "operator",
  "DELETE /api/json/custom_reports/:id": "operator",

  // Accounts, tokens, settings, jobs on demand and deleting E2E history: admins only.
  "GET /settings": "admin",
  "GET /audit": "admin",
  "GET /api/v1/audit": "admin",
  "GET /audit.csv": "admin",
  "POST /settings/monitoring": "admin",
  "POST /settings/notifications": "admin",
  "POST /settings/notifications/webhook-secret": "admin",
  "POST /settings/notifications/test": "admin",
  "POST /settings/operators": "admin",
  "POST /settings/operators/:id/role": "admin",
  "POST /settings/operators/:id/disable": "admin",
  "POST /settings/operators/:id/enable": "admin",
  "POST /settings/operators/:id/reset-factors": "admin",
  "POST /settings/second-factor": "admin",
  "POST /settings/tokens": "admin",
  "POST /settings/tokens/:id/revoke": "admin",
  "POST /jobs/run": "admin",
  "POST /api/v1/jobs/:task/run": "admin",
  "POST /e2e": "admin",
  "POST /terminal/settings": "admin",
  "POST /settings/enrolment-tokens": "admin",
  "POST /settings/enrolment-tokens/:id/revoke": "admin",
  "POST /devices/:id/host-key/accept": "admin",
};

/**
 * Routes only a signed-in operator's browser may call: API tokens of any role are refused (403). The
 * terminal's socket needs the operator's session, so a session opened with a token could never be used.
 * (tests/terminal/socket.test.ts checks a viewer's session is refused and an operator's allowed.) An
 * account and its second factors belong to a person, not a token.
 */
const SESSION_ONLY = new Set([
  "POST /devices/:id/terminal",
  "POST /auth/oidc/link",
  "GET /account",
  "POST /account/totp",
  "POST /account/totp/confirm",
  "POST /account/passkeys",
  "POST /account/factors/:id/rename",
  "POST /account/factors/:id/delete",
  "POST /account/recovery-codes",
  "GET /account/verify",
  "POST /account/verify",
]);

const RANK: Record<Level, number> = { public: 0, device: -1, e2e: -1, viewer: 1, operator: 2, admin: 3 };
type Caller = "anonymous" | "device" | "e2e" | "viewer" | "operator" | "admin";

const app = await startE2EApp(writeE2EFixture());
const device = await approvedDevice(app);
const tokens = {
  viewer: await app.token("viewer"),
  operator: await app.token("operator"),
  admin: await app.token("admin"),
};
const ZERO = "00000000-0000-4000-8000-000000000000";
const appRoutes = buildApp({
  ...createServices(app.config, app.database, createLogger("silent")),
  workerRunning: () => true,
})
  .routes.filter((route) => route.method !== "WS")
  .map((route) => `${route.method} ${route.path}`);

function urlFor(route: string, caller: Caller): { method: string; url: string } {
  const [method, path] = route.split(" ") as [string, string];
  const values: Record<string, string> = { task: "prune_sessions", name: "app.css", device_id: device.id };
  let url = path.replace(/:(\w+)/g, (_, name: string) => values[name] ?? ZERO);
  if (url.endsWith("/wait")) url += "?timeout_s=1"; // an agent's wait is held: not for long here
  if (caller === "device") url += `${url.includes("?") ? "&" : "?"}api_key=${device.token}`;
  return { method, url };
}

function headersFor(caller: Caller): Record<string, string> {
  if (caller === "e2e") return runnerHeaders();
  if (caller === "viewer" || caller === "operator" || caller === "admin")
    return { authorization: `Bearer ${tokens[caller]}` };
  return {};
}

/** What `caller` must get on a route needing `level`: "allowed", or the refusal's status. */
function expected(route: string, level: Level, caller: Caller): "allowed" | number {
  const session = caller === "viewer" || caller === "operator" || caller === "admin";
  if (session && SESSION_ONLY.has(route)) return 403; // the callers here hold API tokens
  if (level === "public" || caller === level) return "allowed";
  if (level === "device" || level === "e2e") return 401;
  if (session) return RANK[caller] >= RANK[level] ? "allowed" : 403;
  // Without operator credentials: APIs answer 401, pages send the browser to sign in.
  return route.split(" ")[1]!.startsWith("/api/") ? 401 : 303;
}

const CALLERS: Caller[] = ["anonymous", "device", "e2e", "viewer", "operator", "admin"];

describe("the independent access table", () => {
  test("lists every route of the app, and only those", () => {
    expect(appRoutes.filter((route) => !(route in ACCESS))).toEqual([]);
    expect(Object.keys(ACCESS).filter((route) => !appRoutes.includes(route))).toEqual([]);
  });

  for (const caller of CALLERS) {
    test(`${caller}: allowed exactly where the table says, refused with the right status elsewhere`, async () => {
      const mismatches: string[] = [];
      // Sign-out last: it would end a session (harmless with tokens, but keep the order honest).
      const ordered = Object.entries(ACCESS).sort(
        ([a], [b]) => Number(a === "POST /logout") - Number(b === "POST /logout"),
      );
      for (const [route, level] of ordered) {
        const { method, url } = urlFor(route, caller);
        const response = await app.fetch(url, {
          method,
          headers: { ...headersFor(caller), "content-type": "application/json" },
          // A results list gets command_results past its body check (made before authentication).
          body: method === "GET" ? undefined : route.includes("command_results") ? '{"results":[]}' : "{}",
          redirect: "manual",
        });
        await response.body?.cancel(); // the live stream never ends by itself
        const want = expected(route, level, caller);
        // A refused page sends the browser to sign in and back (`?next=`); sign-out itself goes to /login.
        const signInRedirect =
          response.status === 303 && (response.headers.get("location") ?? "").startsWith("/login?next=");
        const refused = [401, 403].includes(response.status) || signInRedirect;
        const got = refused ? response.status : "allowed";
        if (got !== want) mismatches.push(`${route}: expected ${want}, got ${response.status}`);
      }
      expect(mismatches).toEqual([]);
    }, 60_000);
  }
});
