/**
 * The mutation groups of `npm run test:mutation` (scripts/mutation.ts): each group's code (files, or
 * `file#declaration` parts of them: scripts/mutation-ranges.ts) and the test files run against each of
 * its mutants. docs/testing.md has their last scores.
 */
export interface Group {
  /** Files (or `file#declaration,…`, `file#first..last` parts of them) to mutate. */
  mutate: string[];
  /** Test files run against each mutant, fastest and most telling first. */
  tests: string[];
}

export const GROUPS: Record<string, Group> = {
  rollouts: {
    // The rollout driver and its transitions (docs/fleet.md, _Rollouts_): waves, concurrency, the
    // threshold, pause/resume/cancel, the deadline, one command per device; creation and conflicts.
    mutate: ["modules/rollouts/driver.ts", "modules/rollouts/control.ts", "modules/rollouts/create.ts"],
    // The service's refusals and bounds first (seconds), then the driver, then the API over HTTP.
    tests: [
      "tests/rollouts/create.test.ts",
      "tests/rollouts/driver.test.ts",
      "tests/rollouts/rollouts-http.test.ts",
    ],
  },
  "fleet-query": {
    // The device query language (docs/fleet.md): its parser, its SQL, the label rules it checks.
    mutate: [
      "modules/fleet/query/parse.ts",
      "modules/fleet/query/compile.ts",
      "modules/devices/conditions.ts",
      "shared/labels.ts",
    ],
    tests: [
      "tests/fleet/query-parse.test.ts",
      "tests/fleet/labels.test.ts",
      "tests/fleet/query-compile.test.ts",
    ],
  },
  access: {
    // Roles, CSRF and cookies, the sign-in page's CSRF binding and `next` (not declaredAccess, which
    // only reports the levels, nor htmlPage).
    mutate: [
      "modules/platform/access.ts#RANK..checkCsrf,accessPlugin.transform",
      "ui/page.ts#ANONYMOUS_CSRF_MAX_AGE_SECONDS,consolePages.https,consolePages.pageContext,consolePages.anonymousCsrf,showsFlash..safeNext",
    ],
    tests: [
      "tests/platform/csrf.test.ts",
      "tests/platform/access-table.test.ts",
      "tests/platform/hardening.test.ts",
    ],
  },
  sessions: {
    // Sign-in and its throttle, sessions, API tokens (not operator management: see the access group).
    mutate: ["modules/operators/service.ts#LOGIN_LIMITS..deleteSession", "modules/operators/api-tokens.ts"],
    // operators/auth.test.ts covers the same over HTTP, but costs 20 s a run: add it for a full run.
    tests: ["tests/operators/sessions-service.test.ts"],
  },
  oidc: {
    // Single sign-on: the role mapping, the (issuer, subject) links, the configuration and who keeps a
    // password. tests/oidc/sign-in.test.ts drives the real provider (state, nonce, login CSRF) but costs
    // 50 s a run: add it for a full run.
    mutate: ["modules/oidc/identities.ts", "modules/oidc/flow.ts", "modules/platform/sso-config.ts"],
    tests: ["tests/oidc/identities.test.ts", "tests/oidc/config.test.ts", "tests/oidc/routes.test.ts"],
  },
  "second-factor": {
    // Sign-in's second step, TOTP (skew, replay), recovery codes, the per-role policy and fresh factor.
    mutate: [
      "modules/operators/sign-in.ts",
      "modules/operators/totp.ts",
      "modules/operators/factors.ts",
      "modules/operators/policy.ts",
    ],
    tests: ["tests/operators/second-factor.test.ts"],
  },
  "telemetry-schemas": {
    mutate: ["modules/devices/telemetry-schemas.ts"],
    tests: [
      "tests/devices/telemetry-schemas.test.ts",
      "tests/devices/heartbeat-batch.test.ts",
      // The builder lists and loads the schemas devices announced; only approved devices' count.
      "tests/builder/builder.test.ts",
      "tests/builder/untrusted-schemas.test.ts",
    ],
  },
  "builder-fields": {
    // A product's fields: the union over its approved devices' schemas, types merged, conflicts per field.
    mutate: ["modules/builder/service.ts"],
    tests: ["tests/builder/builder.test.ts", "tests/builder/untrusted-schemas.test.ts"],
  },
  "device-identity": {
    mutate: [
      "modules/devices/registration.ts",
      "modules/devices/device-auth.ts",
      "modules/devices/pre-authorisation.ts",
      // The operator's decision on an identity claim (bound to the fingerprint shown).
      "modules/devices/management.ts#resolveIdentityConflict",
    ],
    tests: [
      "tests/devices/registration-edges.test.ts",
      "tests/devices/identity.test.ts",
      "tests/devices/registration.test.ts",
      "tests/devices/heartbeat.test.ts",
      // Registration with an enrolment token: a known device keeps registering, a new one claims it.
      "tests/enrolment/tokens.test.ts",
    ],
  },
  commands: {
    // Validation, queueing, the claim, results, payloads, expiry, retention and cancelling (not the
    // listing and counts the pages show).
    mutate: [
      "modules/commands/validation.ts#SSH_KEY..checkScript",
      "modules/commands/service.ts#COMMAND_COLUMNS..pruneCommandHistory,cancelCommand",
      "modules/commands/results.ts#RESULTS_MAX_ITEMS..recordCommandResults,pruneUnmatchedResults",
      "jobs/command-retention.ts",
    ],
    tests: [
      "tests/commands/validation.test.ts",
      "tests/platform/job-catalog.test.ts",
      "tests/commands/queue-edges.test.ts",
      "tests/commands/commands.test.ts",
      // The agent's own results (a missing id, a repeated one) posted by the agent's client.
      "tests/commands/agent-results.test.ts",
      // The commands_total counter (queued, delivered, results) as Prometheus reads it.
      "tests/metrics/metrics.test.ts",
    ],
  },
  heartbeat: {
    // Batched heartbeats: the batcher (order per device, bounds, retry alone), the batch statement and
    // what each heartbeat gets back, the devices side (accept, refuse).
    mutate: [
      "modules/platform/keyed-batcher.ts",
      "modules/heartbeat/service.ts",
      "modules/devices/heartbeat-sql.ts",
    ],
    tests: [
      "tests/platform/keyed-batcher.test.ts",
      "tests/devices/heartbeat-batch.test.ts",
      "tests/devices/heartbeat.test.ts",
      "tests/devices/rate-limits.test.ts",
      "tests/commands/commands.test.ts",
    ],
  },
  "device-wait": {
    // The agent's wait for work: its credential check, when it answers early, the agent's use of it.
    mutate: ["modules/devices/wake.ts", "agent/long-poll.ts"],
    tests: ["tests/devices/wait.test.ts", "tests/agent/long-poll.test.ts"],
  },
  "tunnel-data": {
    // The tunnel's data plane: who may hold a work connection, the proofs, the agent's pool, the hand-off.
    mutate: ["shared/tunnel-work.ts", "agent/tunnel-work.ts", "modules/remote-access/tunnel/data-plane.ts"],
    tests: ["tests/remote-access/data-plane-pool.test.ts", "tests/remote-access/data-plane.test.ts"],
  },
  "device-sightings": {
    // Which heartbeats leave a sighting, what pruning keeps, and when a last-seen page read from them
    // is trusted over the full read of the devices table.
    mutate: [
      "modules/devices/sightings.ts",
      // The never-seen-last keys, the filters (the sighted-only condition), when a page is read from
      // the sightings, and that read.
      "modules/devices/queries.ts#sortKeys..consoleFilters,filterSql,listConsoleDevices.sighted,sightingsPage..sightedPageIsCertain",
    ],
    tests: [
      "tests/devices/sightings.test.ts",
      "tests/devices/sightings-order.test.ts",
      "tests/devices/list-and-approval.test.ts",
    ],
  },
  "e2e-locks": {
    // The lock, idempotency and run creation (not the body validation or seed messages), results and
    // their aggregation into the run's status.
    mutate: [
      "modules/e2e/locks.ts",
      "modules/e2e/create.ts#sameSelection..persistRun",
      "modules/e2e/results.ts",
      "modules/e2e/statuses.ts",
    ],
    tests: [
      "tests/e2e/locks-and-results.test.ts",
      "tests/e2e/create.test.ts",
      "tests/e2e/idempotency.test.ts",
      "tests/e2e/results-api.test.ts",
    ],
  },
  builtins: {
    // The agent builtins that reach the device: files and processes.
    mutate: [
      "agent/builtins/read-file.ts",
      "agent/builtins/exec-cmd.ts",
      "agent/builtins/index.ts#protectedPaths,createBuiltins",
    ],
    // sandbox.test.ts covers them through scripts too, but costs 10 s a run: add it for a full run.
    tests: ["tests/agent/builtin-policies.test.ts"],
  },
  sandbox: {
    // The QuickJS sandbox: its memory and time limits, what crosses the boundary, output caps.
    mutate: ["agent/scripts/sandbox.ts", "agent/scripts/sandbox-values.ts", "agent/scripts/instance-pool.ts"],
    // The session itself first (3 s a run), then scripts through the runner (10 s).
    tests: [
      "tests/agent/sandbox-session.test.ts",
      "tests/agent/sandbox-limits.test.ts",
      "tests/agent/sandbox.test.ts",
    ],
  },
  "tunnel-gate": {
    // Who may open a device's web UI: tickets, access cookies and their lease check, the device cookie
    // filter, the hostnames the vhost routes and Caddy may certify.
    mutate: [
      "modules/remote-access/tickets.ts",
      "modules/remote-access/token.ts",
      "modules/remote-access/hosts.ts",
      "modules/remote-access/domains.ts",
      "modules/remote-access/tunnel/device-cookies.ts",
      "modules/remote-access/tunnel/vhost.ts",
    ],
    tests: [
      "tests/remote-access/cookie-checker.test.ts",
      "tests/remote-access/leases.test.ts",
      "tests/remote-access/device-edges.test.ts",
      "tests/remote-access/tunnel.test.ts",
    ],
  },
  terminal: {
    // Terminal sessions: who may open one, the one-time socket token bound to session and operator,
    // the per-operator and per-device limits, the key the device trusts and its revocation.
    mutate: ["modules/terminal/sessions.ts", "modules/terminal/keys.ts", "modules/terminal/service.ts"],
    tests: [
      // The service against a test database (a few seconds), then the socket end to end (a minute).
      "tests/terminal/service.test.ts",
      "tests/terminal/socket-refusals.test.ts",
      "tests/terminal/recording.test.ts",
      "tests/terminal/socket.test.ts",
    ],
  },
  alerts: {
    // Alert evaluation over stored telemetry and its wake-ups, offline alerts, the rule index, the
    // open/resolve lifecycle (not its retention: see that group) and the webhook's signature.
    mutate: [
      "modules/alerts/evaluation.ts",
      "modules/alerts/wake.ts",
      "modules/alerts/offline.ts",
      "modules/alerts/rule-index.ts",
      "modules/alerts/lifecycle.ts#toAlert..countOpenAlerts",
      "modules/alerts/notifications/webhook.ts",
    ],
    tests: [
      "tests/alerts/rule-index.test.ts",
      "tests/alerts/evaluation-cadence.test.ts",
      "tests/alerts/evaluation.test.ts",
      "tests/alerts/notifications.test.ts",
      "tests/alerts/agent-telemetry.test.ts",
    ],
  },
  enrolment: {
    // Enrolment tokens: hashing, limits, expiry, revocation, the count of uses.
    mutate: ["modules/enrolment/service.ts"],
    tests: [
      "tests/enrolment/service.test.ts",
      "tests/enrolment/tokens.test.ts",
      "tests/devices/registration-edges.test.ts",
    ],
  },
  "report-query": {
    // The custom reports' SQL (operators, filters, sorting, keyset paging, aggregation) and CSV cells.
    mutate: ["modules/telemetry/report-query.ts", "modules/platform/csv.ts"],
    tests: ["tests/telemetry/report-query.test.ts", "tests/reports/csv.test.ts", "tests/reports/api.test.ts"],
  },
  retention: {
    mutate: [
      "modules/telemetry/service.ts#dropExpiredTelemetry",
      "modules/e2e/retention.ts",
      "modules/audit/service.ts#pruneAudit",
      "modules/alerts/lifecycle.ts#deleteExpiredAlerts",
      "jobs/telemetry-retention.ts",
      "jobs/e2e-retention.ts",
      "jobs/audit-retention.ts",
      "jobs/alerts-retention.ts",
    ],
    tests: [
      "tests/platform/job-catalog.test.ts",
      "tests/telemetry/telemetry.test.ts",
      "tests/e2e/retention.test.ts",
      "tests/audit/audit.test.ts",
      "tests/alerts/evaluation.test.ts",
    ],
  },
  backup: {
    // The archive (tar, manifest checks), the snapshot dump and the one-transaction restore. Not run yet.
    mutate: [
      "modules/backup/tar.ts",
      "modules/backup/archive-reader.ts",
      "modules/backup/archive-writer.ts",
      "modules/backup/catalog.ts",
      "modules/backup/dump.ts",
      "modules/backup/restore.ts",
      "modules/backup/service.ts",
    ],
    // round-trip.test.ts (real processes, ~2 min) covers the same end to end: add it for a full run.
    tests: ["tests/backup/refusals.test.ts", "tests/backup/consistency.test.ts"],
  },
};
